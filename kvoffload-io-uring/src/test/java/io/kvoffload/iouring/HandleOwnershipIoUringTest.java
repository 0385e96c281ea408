package io.kvoffload.iouring;

import io.kvoffload.testing.ConcurrencyScenarios;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue #17, defects 2 and 3 on io_uring: closing the engine under running decoders never hangs,
 * and one decoder stepped from two threads is refused clearly (it used to spin in
 * {@code Ring.awaitProgress} holding the ring lock).
 */
class HandleOwnershipIoUringTest {
    @TempDir
    Path root;

    @BeforeEach
    void gate() {
        IoUringTestSupport.requireIoUring();
    }

    @Test
    void engineCloseWhileDecodingNeverHangs() throws Exception {
        ConcurrencyScenarios.closeWhileDecoding(ConcurrencyScenarios.prepare(root, "io_uring"), 25);
    }

    @Test
    void oneDecoderUsedFromTwoThreadsIsRefusedClearly() throws Exception {
        ConcurrencyScenarios.oneDecoderTwoThreads(ConcurrencyScenarios.prepare(root, "io_uring"));
    }
}
