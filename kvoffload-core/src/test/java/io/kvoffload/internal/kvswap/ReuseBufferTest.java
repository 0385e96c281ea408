package io.kvoffload.internal.kvswap;

import static io.kvoffload.internal.kvswap.KvSwapFixtures.assertMessage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class ReuseBufferTest {

    @Test
    void fifoByHand() {
        ReuseBuffer rb = new ReuseBuffer(1, 3, ReuseBuffer.Policy.FIFO);
        ReusePlan plan = rb.newPlan();
        rb.request(0, new int[] {1, 2, 3}, 3, plan);
        assertEquals(3, plan.misses());
        assertEquals(0, plan.slot(0));
        assertEquals(2, plan.slot(2));
        assertEquals(-1, plan.evicted(0));
        // Group 2 is a hit; the miss 4 replaces the oldest fill, slot 0 (group 1).
        rb.request(0, new int[] {2, 4}, 2, plan);
        assertTrue(plan.hit(0));
        assertEquals(1, plan.slot(0));
        assertFalse(plan.hit(1));
        assertEquals(0, plan.slot(1));
        assertEquals(1, plan.evicted(0));
        assertEquals(1, plan.missIndex(0));
        // Queue now: slot 1 (group 2), slot 2 (group 3), slot 0 (group 4). Group 3 is a hit and
        // pinned, so the miss 5 takes slot 1: the hit on group 2 did not refresh it (FIFO, not LRU).
        rb.request(0, new int[] {5, 3}, 2, plan);
        assertEquals(1, plan.slot(0));
        assertEquals(2, plan.evicted(0));
        assertEquals(2, plan.slot(1));
        assertEquals(1, rb.queueSlot(0, 2));
        assertEquals(7, rb.requestedGroups());
        assertEquals(2, rb.hitGroups());
        assertEquals(5, rb.missGroups());
        assertEquals(2, rb.evictions());
        assertEquals(2 / 7.0, rb.reuseRate(), 1e-12);
    }

    @Test
    void artifactPolicyByHand() {
        ReuseBuffer rb = new ReuseBuffer(2, 3, ReuseBuffer.Policy.REPLACE_UNREQUESTED);
        ReusePlan plan = rb.newPlan();
        rb.request(1, new int[] {1, 2, 3}, 3, plan);
        rb.request(1, new int[] {2, 4}, 2, plan);
        assertEquals(0, plan.slot(1), "the first slot not requested: slot 0");
        rb.request(1, new int[] {5, 3}, 2, plan);
        assertEquals(0, plan.slot(0), "slot 0 (group 4) again: slot order, not age");
        assertEquals(4, plan.evicted(0));
        assertEquals(1, plan.layer());
        assertEquals(3, rb.occupied(1));
        assertEquals(0, rb.occupied(0), "layers have their own slot tables");
        assertEquals(5, rb.groupAt(1, 0));
        assertEquals(2, rb.slotOf(1, 3));
        assertEquals(-1, rb.slotOf(0, 3));
        rb.clear(1);
        assertEquals(0, rb.occupied(1));
        assertEquals(7, rb.requestedGroups(), "clearing keeps the counters");
        rb.resetCounters();
        assertTrue(Double.isNaN(rb.reuseRate()));
    }

    @Test
    void aBadRequestChangesNothing() {
        ReuseBuffer rb = new ReuseBuffer(1, 4, ReuseBuffer.Policy.FIFO);
        ReusePlan plan = rb.newPlan();
        rb.request(0, new int[] {10, 11}, 2, plan);
        assertMessage(() -> rb.request(0, new int[] {12, 10, 12}, 3, plan), "groups[2] = 12",
                "already requested in this step");
        assertMessage(() -> rb.request(0, new int[] {11, 13, 11}, 3, plan), "groups[2] = 11");
        assertMessage(() -> rb.request(0, new int[] {1, -3}, 2, plan), "groups[1] = -3", "allowed: ≥ 0");
        assertMessage(() -> rb.request(0, new int[5], 5, plan), "count = 5", "allowed: 0..4");
        assertMessage(() -> rb.request(1, new int[1], 1, plan), "layer = 1", "allowed: 0..0");
        assertMessage(() -> rb.request(0, new int[1], 1, new ReuseBuffer(1, 2, ReuseBuffer.Policy.FIFO).newPlan()),
                "plan.slots() = 2", "must equal slots = 4");
        assertEquals(2, rb.occupied(0));
        assertEquals(-1, rb.slotOf(0, 12));
        assertEquals(-1, rb.slotOf(0, 13));
        assertEquals(2, rb.requestedGroups());
        // The queue was not disturbed: the next miss still takes the first empty slot, 2.
        rb.request(0, new int[] {14}, 1, plan);
        assertEquals(2, plan.slot(0));
        assertMessage(() -> new ReuseBuffer(1, 0, ReuseBuffer.Policy.FIFO), "slots = 0", "allowed: 1..1048576");
    }

    @Test
    void allocatesNothingPerStep() {
        ReuseBuffer rb = new ReuseBuffer(4, 150, ReuseBuffer.Policy.FIFO);
        ReuseBuffer artifact = new ReuseBuffer(4, 100, ReuseBuffer.Policy.REPLACE_UNREQUESTED);
        ReusePlan plan = rb.newPlan();
        ReusePlan plan2 = artifact.newPlan();
        MappingTable table = new MappingTable(150, 1);
        RollingBuffer rolling = new RollingBuffer(4, 1);
        rolling.reset(100_003);
        SplittableRandom rnd = new SplittableRandom(1);
        int[][] steps = new int[64][100];
        for (int[] s : steps) {
            int base = rnd.nextInt(1000);
            for (int i = 0; i < 100; i++) {
                s[i] = base + 3 * i; // distinct, overlapping from step to step
            }
        }
        Runnable step = () -> {
            for (int i = 0; i < steps.length; i++) {
                rb.request(i & 3, steps[i], 100, plan);
                table.build(plan, rolling);
                artifact.request(i & 3, steps[i], 100, plan2);
            }
        };
        for (int i = 0; i < 50; i++) {
            step.run();
        }
        long allocated = KvSwapFixtures.allocatedBy(() -> {
            for (int i = 0; i < 20; i++) {
                step.run();
            }
        });
        assertEquals(0, allocated, "bytes allocated by 2 560 requests and 1 280 tables");
    }
}
