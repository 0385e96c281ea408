package io.kvoffload.internal.decode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.cache.CostEffectiveness;
import io.kvoffload.internal.dram.DramPool;
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
                HotClusterCache cache = new HotClusterCache(dram, layout, ENTRY, (long) budgetEntries * ENTRY, lru,
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
                        MemorySegment mem = cache.region();
                        assertEquals(t, mem.get(ValueLayout.JAVA_INT_UNALIGNED, cache.slotOffset(slot)),
                                "slot " + slot + " claimed by token " + t);
                    }
                }
            }
        }
    }
}
