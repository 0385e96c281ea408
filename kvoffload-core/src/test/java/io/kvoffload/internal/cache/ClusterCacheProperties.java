package io.kvoffload.internal.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;

class ClusterCacheProperties {
    static final int ENTRY = 4096;

    static ClusterCache.Sizes sizes(int[] entries) {
        return c -> (long) entries[c] * ENTRY;
    }

    @Property(tries = 80)
    void budgetIsNeverExceededAndChangesAreReportedExactly(@ForAll long seed, @ForAll boolean lru) {
        Random rnd = new Random(seed);
        int clusters = 5 + rnd.nextInt(200);
        int[] entries = new int[clusters];
        for (int c = 0; c < clusters; c++) {
            entries[c] = 1 + rnd.nextInt(40);
        }
        long budget = (long) ENTRY * rnd.nextInt(300);
        ClusterCache cache = lru ? new LruClusterCache(clusters, budget, sizes(entries))
                : new CostEffectivenessCache(clusters, budget, ENTRY, sizes(entries),
                        CostEffectiveness.savedIoPerEntry(80_000, 3_000), null);
        Set<Integer> model = new HashSet<>();
        int[] act = new int[64];
        for (int step = 0; step < 300; step++) {
            int n = rnd.nextInt(act.length);
            for (int i = 0; i < n; i++) {
                act[i] = rnd.nextInt(clusters);
            }
            cache.step(act, n);
            for (int i = 0; i < cache.evictedCount(); i++) {
                assertTrue(model.remove(cache.evicted(i)), "evicted a cluster that was not cached");
            }
            for (int i = 0; i < cache.admittedCount(); i++) {
                assertTrue(model.add(cache.admitted(i)), "admitted a cluster twice");
            }
            long used = 0;
            for (int c = 0; c < clusters; c++) {
                assertEquals(model.contains(c), cache.cached(c));
                used += model.contains(c) ? (long) entries[c] * ENTRY : 0;
            }
            assertEquals(used, cache.usedBytes());
            assertTrue(cache.usedBytes() <= budget);
        }
    }

    @Test
    void frequenciesRiseWhenActivatedAndFallWhenCachedButIdle() {
        int[] entries = {1, 1, 1};
        CostEffectivenessCache c = new CostEffectivenessCache(3, 10L * ENTRY, ENTRY, sizes(entries),
                CostEffectiveness.savedIoPerEntry(80_000, 3_000), new int[] {5, 0, 0});
        c.step(new int[] {0, 0, 1}, 3); // duplicates count once
        assertEquals(6, c.frequency(0));
        assertEquals(1, c.frequency(1));
        c.step(new int[] {1}, 1);
        assertEquals(5, c.frequency(0), "cached, not activated: -1");
        assertEquals(2, c.frequency(1));
        assertEquals(0, c.frequency(2), "never cached: unchanged");
    }

    @Test
    void costEffectivenessKeepsSmallHotClustersWhereLruChurnsOnLargeOneOffs() {
        // 20 small hot clusters (2 entries) recur every step; every step also touches one large
        // cluster (70 entries) that never comes back. Budget: 100 entries, so 40 hot + 70 do not fit.
        int hot = 20;
        int steps = 200;
        int[] entries = new int[hot + steps];
        for (int c = 0; c < entries.length; c++) {
            entries[c] = c < hot ? 2 : 70;
        }
        long budget = 100L * ENTRY;
        ClusterCache ce = new CostEffectivenessCache(entries.length, budget, ENTRY, sizes(entries),
                CostEffectiveness.savedIoPerEntry(80_000, 3_000), null);
        ClusterCache lru = new LruClusterCache(entries.length, budget, sizes(entries));
        int[] act = new int[hot + 1];
        for (int s = 0; s < steps; s++) {
            for (int i = 0; i < hot; i++) {
                act[i] = i;
            }
            act[hot] = hot + s;
            ce.step(act, act.length);
            lru.step(act, act.length);
        }
        assertTrue(ce.hitRate() > 0.9, "cost-effectiveness hit rate " + ce.hitRate());
        assertTrue(ce.hitRate() > lru.hitRate() + 0.3, "CE " + ce.hitRate() + " vs LRU " + lru.hitRate());
        for (int c = 0; c < hot; c++) {
            assertTrue(ce.cached(c), "hot cluster " + c + " stays cached");
        }
        assertFalse(ce.cached(hot + steps - 1), "a one-off large cluster never displaces the hot set");
    }
}
