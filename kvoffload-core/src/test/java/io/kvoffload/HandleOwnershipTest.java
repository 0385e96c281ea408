package io.kvoffload;

import io.kvoffload.testing.ConcurrencyScenarios;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Issue #17, defects 2 and 3 on the portable backend (the io_uring module runs the same scenarios). */
class HandleOwnershipTest {
    @TempDir
    Path root;

    @Test
    void engineCloseWhileDecodingNeverHangs() throws Exception {
        ConcurrencyScenarios.closeWhileDecoding(ConcurrencyScenarios.prepare(root, "portable"), 25);
    }

    @Test
    void oneDecoderUsedFromTwoThreadsIsRefusedClearly() throws Exception {
        ConcurrencyScenarios.oneDecoderTwoThreads(ConcurrencyScenarios.prepare(root, "portable"));
    }

    @Test
    void oneSequenceUsedFromTwoThreadsIsRefusedClearly() throws Exception {
        ConcurrencyScenarios.oneSequenceTwoThreads(ConcurrencyScenarios.prepare(root, "portable"));
    }
}
