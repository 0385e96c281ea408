package io.kvoffload.internal.kvswap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/**
 * The reuse buffer against a plain reference model (maps and lists): hit and miss accounting, a
 * consistent slot table, the FIFO order, and that no policy evicts a group the same step requested;
 * resized between steps, the kept slots keep their groups and queue order.
 */
class ReuseBufferProperties {

    /** The reference: one layer's slot table, reverse map and FIFO queue, kept the obvious way. */
    private static final class Model {
        final int[] table;
        final Map<Integer, Integer> slotOf = new HashMap<>();
        final List<Integer> queue = new ArrayList<>();

        Model(int slots) {
            table = new int[slots];
            java.util.Arrays.fill(table, -1);
            for (int s = 0; s < slots; s++) {
                queue.add(s);
            }
        }

        /** The elastic pool moved the budget: slots below {@code ns} keep their groups and queue order. */
        Model resized(int ns) {
            Model r = new Model(ns);
            r.queue.clear();
            for (int s = 0; s < Math.min(ns, table.length); s++) {
                r.table[s] = table[s];
                if (table[s] >= 0) {
                    r.slotOf.put(table[s], s);
                }
            }
            for (int s = table.length; s < ns; s++) {
                r.queue.add(s);
            }
            for (int s : queue) {
                if (s < ns) {
                    r.queue.add(s);
                }
            }
            return r;
        }
    }

    @Property(tries = 200)
    void matchesTheReferenceModel(@ForAll long seed, @ForAll @IntRange(min = 1, max = 40) int slots,
            @ForAll @IntRange(min = 1, max = 3) int layers, @ForAll boolean fifo) {
        SplittableRandom rnd = new SplittableRandom(seed);
        ReuseBuffer.Policy policy = fifo ? ReuseBuffer.Policy.FIFO : ReuseBuffer.Policy.REPLACE_UNREQUESTED;
        ReuseBuffer rb = new ReuseBuffer(layers, slots, policy);
        ReusePlan plan = rb.newPlan();
        Model[] models = new Model[layers];
        for (int l = 0; l < layers; l++) {
            models[l] = new Model(slots);
        }
        int universe = slots + 1 + rnd.nextInt(3 * slots); // small enough for overlap between steps
        long requested = 0, hits = 0, evictions = 0;
        for (int step = 0; step < 60; step++) {
            if (rnd.nextInt(8) == 0) { // resized between steps
                slots = 1 + rnd.nextInt(40);
                rb.resize(slots);
                plan = rb.newPlan();
                for (int l = 0; l < layers; l++) {
                    models[l] = models[l].resized(slots);
                }
                assertEquals(slots, rb.slots());
            }
            int layer = rnd.nextInt(layers);
            Model m = models[layer];
            int count = rnd.nextInt(Math.min(slots, universe) + 1);
            List<Integer> pool = new ArrayList<>();
            for (int g = 0; g < universe; g++) {
                pool.add(g);
            }
            java.util.Collections.shuffle(pool, new java.util.Random(rnd.nextLong()));
            int[] groups = new int[count];
            for (int i = 0; i < count; i++) {
                groups[i] = pool.get(i);
            }
            rb.request(layer, groups, count, plan);

            // Reference decision.
            Set<Integer> pinned = new HashSet<>();
            List<Integer> missIdx = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                Integer s = m.slotOf.get(groups[i]);
                if (s != null) {
                    pinned.add(s);
                } else {
                    missIdx.add(i);
                }
            }
            List<Integer> victims = new ArrayList<>();
            if (fifo) {
                List<Integer> kept = new ArrayList<>();
                for (int s : m.queue) {
                    if (victims.size() < missIdx.size() && !pinned.contains(s)) {
                        victims.add(s);
                    } else {
                        kept.add(s);
                    }
                }
                if (!missIdx.isEmpty()) {
                    m.queue.clear();
                    m.queue.addAll(kept);
                    m.queue.addAll(victims);
                }
            } else {
                for (int s = 0; s < slots && victims.size() < missIdx.size(); s++) {
                    if (!pinned.contains(s)) {
                        victims.add(s);
                    }
                }
            }
            assertEquals(missIdx.size(), victims.size(), "a victim for every miss");

            // Accounting.
            assertEquals(count, plan.requested());
            assertEquals(count, plan.hits() + plan.misses());
            assertEquals(count - missIdx.size(), plan.hits());
            Set<Integer> requestedSet = new HashSet<>();
            for (int g : groups) {
                requestedSet.add(g);
            }
            for (int i = 0; i < count; i++) {
                assertEquals(groups[i], plan.group(i));
                assertEquals(m.slotOf.containsKey(groups[i]), plan.hit(i));
                if (plan.hit(i)) {
                    assertEquals((int) m.slotOf.get(groups[i]), plan.slot(i), "a hit stays in its slot");
                }
            }
            for (int j = 0; j < missIdx.size(); j++) {
                int i = missIdx.get(j);
                int s = victims.get(j);
                assertEquals(i, plan.missIndex(j));
                assertEquals(s, plan.slot(i), (fifo ? "FIFO" : "slot-order") + " victim of miss " + j);
                assertEquals(m.table[s], plan.evicted(j));
                assertFalse(requestedSet.contains(plan.evicted(j)), "evicted a group this step requested");
                if (m.table[s] >= 0) {
                    m.slotOf.remove(m.table[s]);
                    evictions++;
                }
                m.table[s] = groups[i];
                m.slotOf.put(groups[i], s);
            }
            requested += count;
            hits += count - missIdx.size();

            // The slot table equals the model's, both directions, in every layer.
            for (int l = 0; l < layers; l++) {
                Model ml = models[l];
                int occupied = 0;
                for (int s = 0; s < slots; s++) {
                    assertEquals(ml.table[s], rb.groupAt(l, s), "layer " + l + " slot " + s);
                    if (ml.table[s] >= 0) {
                        occupied++;
                        assertEquals(s, rb.slotOf(l, ml.table[s]));
                    }
                    if (fifo) {
                        assertEquals((int) ml.queue.get(s), rb.queueSlot(l, s), "FIFO queue position " + s);
                    }
                }
                assertEquals(occupied, rb.occupied(l));
                for (int g = 0; g < universe; g++) {
                    assertEquals(ml.slotOf.getOrDefault(g, -1), rb.slotOf(l, g));
                }
            }
            for (int i = 0; i < count; i++) {
                assertEquals(plan.slot(i), rb.slotOf(layer, groups[i]), "every requested group is resident");
            }
        }
        assertEquals(requested, rb.requestedGroups());
        assertEquals(hits, rb.hitGroups());
        assertEquals(evictions, rb.evictions());
        assertTrue(requested == 0 || Math.abs(rb.reuseRate() - hits / (double) requested) < 1e-12);
    }
}
