package io.kvoffload.internal.sched;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * Batched decoding plans several sequences one after another: with the load the earlier plans put
 * on each SSD carried in, the least-loaded choice balances the batch as a whole.
 */
class BucketSchedulerCarriedLoadTest {
    /** Every entry has a copy on each of two devices, at offset entry × 4096 on both. */
    static final BucketScheduler.Replicas TWO_COPIES = new BucketScheduler.Replicas() {
        public int count(int e) {
            return 2;
        }

        public int device(int e, int r) {
            return r;
        }

        public long offset(int e, int r) {
            return e * 4096L;
        }
    };

    @Test
    void carriedLoadSteersEntriesToTheLessLoadedDevice() {
        BucketScheduler s = new BucketScheduler(2, 4096, 1, BucketScheduler.Mode.BALANCED);
        int[] entries = {0, 1, 2, 3};
        s.plan(entries, 4, TWO_COPIES, null);
        assertEquals(2, s.bucketSize(0));
        assertEquals(2, s.bucketSize(1));
        int[] load = {6, 0};
        s.carryLoad(load);
        s.plan(entries, 4, TWO_COPIES, null);
        // Device 1 catches up with the 6 entries device 0 already has: all 4 go there.
        assertEquals(0, s.bucketSize(0));
        assertEquals(4, s.bucketSize(1));
        s.carryLoad(null);
        s.plan(entries, 4, TWO_COPIES, null);
        assertEquals(2, s.bucketSize(0), "without carried load the plan is balanced alone again");
    }

    @Test
    void carriedLoadNeedsOneCountPerDevice() {
        BucketScheduler s = new BucketScheduler(2, 4096, 1, BucketScheduler.Mode.BALANCED);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> s.carryLoad(new int[3]));
        assertTrue(e.getMessage().contains("load.length = 3"), e.getMessage());
    }
}
