package io.kvoffload.internal.sched;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvoffload.DecodeOptions;
import org.junit.jupiter.api.Test;

/** Every public scheduling option has its scheduler mode, with the same meaning. */
class BucketSchedulerModeTest {
    @Test
    void everySchedulingOptionMapsToItsMode() {
        for (DecodeOptions.Scheduling s : DecodeOptions.Scheduling.values()) {
            assertEquals(s.name(), BucketScheduler.Mode.of(s).name());
        }
        assertEquals(DecodeOptions.Scheduling.values().length, BucketScheduler.Mode.values().length);
        BucketScheduler.Mode m = BucketScheduler.Mode.of(DecodeOptions.Scheduling.NO_DEDUP);
        assertEquals(false, m.dedup);
        assertEquals(true, m.balance);
    }
}
