package io.kvoffload;

import io.kvoffload.testing.ConcurrencyScenarios;
import io.kvoffload.testing.HandleOwnershipContract;
import org.junit.jupiter.api.Test;

/** Issue #17, defects 2 and 3 on the portable backend (the io_uring module runs the same scenarios). */
class HandleOwnershipTest extends HandleOwnershipContract {
    @Override
    protected String backend() {
        return "portable";
    }

    @Test
    void oneSequenceUsedFromTwoThreadsIsRefusedClearly() throws Exception {
        ConcurrencyScenarios.oneSequenceTwoThreads(ConcurrencyScenarios.prepare(root, backend()));
    }
}
