package io.kvoffload.internal.decode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.cache.CostEffectiveness;
import io.kvoffload.internal.dram.DramPool;
import io.kvoffload.internal.elastic.ElasticDramPool;
import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.storage.TestLayouts;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/**
 * The DRAM bytes behind the hot-cluster cache: whatever the policy and the steps, the slots in use
 * never exceed the budget, every cached cluster's entries sit in slots, and every slot holds exactly
 * the token it claims (so the decoder never serves a wrong entry from the cache).
 */
class HotClusterCacheProperties {
    static final int ENTRY = 64;

    @Property(tries = 60)
    void slotsRespectTheBudgetAndHoldTheirTokens(@ForAll @IntRange(min = 1, max = 400) int tokens,
            @ForAll @IntRange(min = 0, max = 200) int budgetEntries, @ForAll boolean lru,
            @ForAll @IntRange(min = 0, max = 1 << 20) int seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        ClusterLayout layout = TestLayouts.random(tokens, ENTRY, rnd);
        try (DramPool dram = new DramPool(4L << 20, 1L << 20);
                ElasticDramPool pool = new ElasticDramPool(dram, 4L << 20, 64L << 10);
                HotClusterCache cache = new HotClusterCache(pool, layout, ENTRY, (long) budgetEntries * ENTRY, lru,
                        CostEffectiveness.savedIoPerEntry(80_000, 2_000))) {
            // The source writes each token's id into its entry: a slot's content names its token.
            HotClusterCache.TokenSource source = (token, dst, offset) -> {
                for (int i = 0; i < ENTRY / 4; i++) {
                    dst.set(ValueLayout.JAVA_INT_UNALIGNED, offset + 4L * i, token);
                }
            };
            int clusters = layout.clusterCount();
            int[] activated = new int[8];
            for (int step = 0; step < 40; step++) {
                int n = rnd.nextInt(activated.length + 1);
                for (int i = 0; i < n; i++) {
                    activated[i] = rnd.nextInt(Math.min(clusters, 6 + step % 7));
                }
                cache.step(activated, n, source);
                assertTrue(cache.usedSlots() <= cache.totalSlots(), "slots " + cache.usedSlots() + " of " + cache.totalSlots());
                assertTrue(cache.policy().usedBytes() <= (long) budgetEntries * ENTRY);
                for (int c = 0; c < clusters; c++) {
                    if (!cache.policy().cached(c)) {
                        continue;
                    }
                    for (int e = layout.firstEntry(c); e < layout.firstEntry(c) + layout.size(c); e++) {
                        assertTrue(cache.slotOf(layout.entryToken(e)) >= 0, "cached cluster " + c + " lacks token "
                                + layout.entryToken(e));
                    }
                }
                for (int t = 0; t < tokens; t++) {
                    int slot = cache.slotOf(t);
                    if (slot >= 0) {
                        MemorySegment mem = cache.slotSegment(slot);
                        assertEquals(t, mem.get(ValueLayout.JAVA_INT_UNALIGNED, cache.slotOffset(slot)),
                                "slot " + slot + " claimed by token " + t);
                    }
                }
            }
        }
    }

    /**
     * Two caches share one elastic pool and resize between steps: whatever the sequence, every
     * cached slot still holds its token (no unit in use is handed to the other cache, no entry
     * moves), the caches' units are disjoint, the pool counts exactly their units, and when both
     * shrink to nothing the pool holds no memory.
     */
    @Property(tries = 40)
    void resizingBetweenStepsKeepsEntriesAndReturnsUnits(@ForAll @IntRange(min = 1, max = 300) int tokens,
            @ForAll boolean lru, @ForAll @IntRange(min = 0, max = 1 << 20) int seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        ClusterLayout[] layouts = {TestLayouts.random(tokens, ENTRY, rnd), TestLayouts.random(tokens, ENTRY, rnd)};
        try (DramPool dram = new DramPool(8L << 20, 1L << 20);
                ElasticDramPool pool = new ElasticDramPool(dram, 8L << 20, 16L << 10)) {
            HotClusterCache[] caches = new HotClusterCache[2];
            for (int k = 0; k < 2; k++) {
                caches[k] = new HotClusterCache(pool, layouts[k], ENTRY, rnd.nextInt(0, 64) * 4096L, lru,
                        CostEffectiveness.savedIoPerEntry(80_000, 2_000));
            }
            int[] activated = new int[8];
            for (int step = 0; step < 40; step++) {
                int k = rnd.nextInt(2);
                HotClusterCache cache = caches[k];
                int salt = k << 20; // each cache's entries name their cache too
                if (rnd.nextInt(4) == 0) {
                    long budget = rnd.nextInt(0, 64) * 4096L;
                    long got = cache.resize(budget);
                    assertTrue(got <= budget, "budget in effect " + got + " exceeds " + budget);
                    assertEquals(got, cache.heldBytes(), "the cache holds exactly its budget's units");
                } else {
                    int clusters = layouts[k].clusterCount();
                    int n = rnd.nextInt(activated.length + 1);
                    for (int i = 0; i < n; i++) {
                        activated[i] = rnd.nextInt(Math.min(clusters, 6 + step % 7));
                    }
                    cache.step(activated, n, (token, dst, offset) -> {
                        for (int i = 0; i < ENTRY / 4; i++) {
                            dst.set(ValueLayout.JAVA_INT_UNALIGNED, offset + 4L * i, token | salt);
                        }
                    });
                }
                java.util.Set<Integer> units = new java.util.HashSet<>();
                for (int c = 0; c < 2; c++) {
                    HotClusterCache x = caches[c];
                    assertTrue(x.policy().usedBytes() <= x.heldBytes());
                    for (int u = 0; u < x.units().capacityUnits(); u++) {
                        if (x.units().held(u)) {
                            int id = x.units().poolId(u);
                            assertTrue(pool.inUse(x.units().unitBytes(), id), "held unit " + id + " is in use in the pool");
                            assertTrue(units.add(id), "unit " + id + " is held twice");
                        }
                    }
                    for (int t = 0; t < tokens; t++) {
                        int slot = x.slotOf(t);
                        if (slot >= 0) {
                            assertEquals(t | (c << 20), x.slotSegment(slot).get(ValueLayout.JAVA_INT_UNALIGNED,
                                    x.slotOffset(slot)), "cache " + c + " slot " + slot + " claimed by token " + t);
                        }
                    }
                }
                assertEquals(units.size(), pool.usedUnits());
                assertEquals(pool.reservedBytes(), dram.reservedBytes(), "chunks count against the DRAM budget");
            }
            long before = pool.reservedBytes();
            for (HotClusterCache c : caches) {
                c.resize(0);
            }
            assertEquals(0, pool.usedUnits());
            assertEquals(0, pool.reservedBytes(), "shrinking to nothing returns every chunk (held " + before + ")");
            assertEquals(0, dram.reservedBytes());
            for (HotClusterCache c : caches) {
                c.close();
            }
        }
    }

    /**
     * Shrinking gives back cold units first: with one entry a unit (4 KiB entries), every cluster the
     * shrink evicts ranked (Eq. 6's score, or LRU's recency) at or below every cluster it kept.
     */
    @Property(tries = 40)
    void shrinkingEvictsTheLeastValuableFirst(@ForAll @IntRange(min = 8, max = 200) int tokens, @ForAll boolean lru,
            @ForAll @IntRange(min = 0, max = 1 << 20) int seed) {
        int entry = 4096;
        SplittableRandom rnd = new SplittableRandom(seed);
        ClusterLayout layout = TestLayouts.random(tokens, entry, rnd);
        try (DramPool dram = new DramPool(8L << 20, 1L << 20);
                ElasticDramPool pool = new ElasticDramPool(dram, 8L << 20, 64L << 10);
                HotClusterCache cache = new HotClusterCache(pool, layout, entry, 4L << 20, lru,
                        CostEffectiveness.savedIoPerEntry(80_000, 2_000))) {
            int[] activated = new int[8];
            int clusters = layout.clusterCount();
            for (int step = 0; step < 30; step++) {
                int n = 1 + rnd.nextInt(activated.length);
                for (int i = 0; i < n; i++) {
                    activated[i] = rnd.nextInt(Math.min(clusters, 12));
                }
                cache.step(activated, n, (token, dst, offset) -> dst.set(ValueLayout.JAVA_INT_UNALIGNED, offset, token));
            }
            double[] before = new double[clusters];
            for (int c = 0; c < clusters; c++) {
                before[c] = cache.policy().retention(c);
            }
            long used = cache.policy().usedBytes();
            cache.resize(used / 2 / 4096 * 4096);
            double keptMin = Double.POSITIVE_INFINITY;
            double evictedMax = Double.NEGATIVE_INFINITY;
            for (int c = 0; c < clusters; c++) {
                if (before[c] == Double.NEGATIVE_INFINITY) {
                    continue; // was not cached
                }
                if (cache.policy().cached(c)) {
                    keptMin = Math.min(keptMin, before[c]);
                } else {
                    evictedMax = Math.max(evictedMax, before[c]);
                }
            }
            assertTrue(evictedMax <= keptMin, "evicted a cluster ranked " + evictedMax + " while keeping one ranked "
                    + keptMin);
            assertTrue(cache.policy().usedBytes() <= cache.heldBytes());
        }
    }
}
