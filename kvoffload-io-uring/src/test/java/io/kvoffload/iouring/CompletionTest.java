package io.kvoffload.iouring;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The completion rules: short transfers continue, EINTR/EAGAIN retry, the rest is reported. */
class CompletionTest {
    private static final int EINTR = -4;
    private static final int EAGAIN = -11;
    private static final int EBADF = -9;
    private static final int EIO = -5;

    @Test
    void fullTransferIsDone() {
        assertEquals(Completion.DONE, Completion.decide(8192, 0, 8192, false, 0));
        assertEquals(Completion.DONE, Completion.decide(4096, 4096, 8192, true, 0));
    }

    @Test
    void shortTransferContinuesWithTheRemainder() {
        assertEquals(Completion.CONTINUE, Completion.decide(4096, 0, 16384, false, 0));
        assertEquals(Completion.CONTINUE, Completion.decide(512, 4096, 16384, true, 3));
        assertEquals(Completion.CONTINUE, Completion.decide(1, 0, 2, false, 0));
    }

    @Test
    void zeroBytesIsEndOfFileForReadsAndNoProgressForWrites() {
        assertEquals(Completion.END_OF_FILE, Completion.decide(0, 0, 4096, false, 0));
        assertEquals(Completion.END_OF_FILE, Completion.decide(0, 4096, 8192, false, 0));
        assertEquals(Completion.NO_PROGRESS, Completion.decide(0, 4096, 8192, true, 0));
    }

    @Test
    void interruptedOrBusyIsRetriedUpToTheLimit() {
        assertEquals(Completion.RETRY, Completion.decide(EINTR, 0, 4096, false, 0));
        assertEquals(Completion.RETRY, Completion.decide(EAGAIN, 4096, 8192, true, Completion.MAX_RETRIES - 1));
        assertEquals(Completion.FAILED, Completion.decide(EAGAIN, 0, 4096, false, Completion.MAX_RETRIES));
    }

    @Test
    void otherErrorsAndImpossibleCountsFail() {
        assertEquals(Completion.FAILED, Completion.decide(EBADF, 0, 4096, false, 0));
        assertEquals(Completion.FAILED, Completion.decide(EIO, 4096, 8192, true, 0));
        assertEquals(Completion.FAILED, Completion.decide(8192, 0, 4096, false, 0), "more than asked for");
        assertEquals(Completion.FAILED, Completion.decide(4097, 4096, 8192, false, 0));
    }
}
