package io.kvoffload.testing;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue #17, defects 2 and 3, on any I/O backend: closing the engine under running decoders never
 * hangs, and one decoder stepped from two threads is refused clearly. A backend's module runs them
 * by extending this class and naming its backend.
 */
public abstract class HandleOwnershipContract {
    @TempDir
    protected Path root;

    /** The I/O backend the scenarios run on ({@code "portable"}, {@code "io_uring"}). */
    protected abstract String backend();

    @Test
    public void engineCloseWhileDecodingNeverHangs() throws Exception {
        ConcurrencyScenarios.closeWhileDecoding(ConcurrencyScenarios.prepare(root, backend()), 25);
    }

    @Test
    public void oneDecoderUsedFromTwoThreadsIsRefusedClearly() throws Exception {
        ConcurrencyScenarios.oneDecoderTwoThreads(ConcurrencyScenarios.prepare(root, backend()));
    }
}
