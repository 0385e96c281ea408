package io.kvoffload.internal.kvswap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.LongRange;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.Scale;

/** Whatever the budget and device, the tuned memory fits the budget and survives the JSON file. */
class ParameterTunerProperties {

    @Property(tries = 25)
    void theChosenMemoryRespectsTheBudget(@ForAll @LongRange(min = 1_500_000, max = 40_000_000) long budget,
            @ForAll @DoubleRange(min = 1e-6, max = 1e-3) @Scale(7) double compute, @ForAll boolean fifo) {
        ParameterTuner t = ParameterTunerTest.tuner(budget).computeSecondsPerLayer(compute)
                .reusePolicy(fifo ? ReuseBuffer.Policy.FIFO : ReuseBuffer.Policy.REPLACE_UNREQUESTED).build();
        KvSwapConfig c;
        try {
            c = t.tune(ParameterTunerTest.CALIBRATION, ParameterTuner.Progress.NONE);
        } catch (IllegalArgumentException tooSmall) {
            assertTrue(tooSmall.getMessage().contains("is too small"), tooSmall.getMessage());
            return;
        }
        assertTrue(c.memory().totalBytes() <= budget, c.memory().totalBytes() + " > " + budget);
        assertEquals(MemoryFootprint.of(c.shape(), c.maxContext(), c.batchSize(), c.rank(), c.compressedKDtype(),
                c.groupSize(), c.reuseSlots(), c.rollingGroups()), c.memory());
        assertTrue(c.reuseSlots() >= c.groups());
        assertEquals(c, KvSwapConfig.fromJson(c.toJson()));
    }
}
