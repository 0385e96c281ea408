package io.kvoffload.internal.baseline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.attention.ExactAttention;
import io.kvoffload.attention.QualityMetrics;
import java.lang.foreign.Arena;
import java.util.Arrays;
import java.util.BitSet;
import java.util.SplittableRandom;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;

/** The {@code TokenSelector} contract, for every strategy on random layers, budgets and queries. */
class SelectorContractProperties {

    @Provide
    Arbitrary<String> strategies() {
        return Arbitraries.of(Layers.NAMES);
    }

    /** Distinct positions in range, no more than maxSelected, and the budget respected up to the unit. */
    @Property(tries = 120)
    void outputsAreDistinctInRangeAndBounded(@ForAll("strategies") String name,
            @ForAll @IntRange(min = 1, max = 400) int tokens, @ForAll @IntRange(min = 1, max = 2) int kvHeads,
            @ForAll @IntRange(min = 1, max = 3) int group, @ForAll @IntRange(min = 2, max = 12) int halfDim,
            @ForAll @IntRange(min = 1, max = 450) int budget, @ForAll boolean coarse, @ForAll long seed) {
        int headDim = 2 * halfDim;
        DenseLayerKv kv = Layers.random(tokens, kvHeads, headDim, coarse, seed);
        try (Arena arena = Arena.ofConfined()) {
            BaselineSelector s = Layers.build(name, kv, kvHeads * group, seed, arena);
            float[] q = Layers.query(kvHeads * group, headDim, coarse, new SplittableRandom(seed + 1));
            int max = s.maxSelected(budget);
            assertTrue(max <= tokens, name + ": maxSelected " + max + " > tokens " + tokens);
            int[] out = new int[max + 5];
            Arrays.fill(out, -7);
            int n = s.select(q, budget, out);
            assertTrue(n >= 0 && n <= max, name + ": returned " + n + ", maxSelected " + max);
            BitSet seen = new BitSet(tokens);
            for (int i = 0; i < n; i++) {
                assertTrue(out[i] >= 0 && out[i] < tokens, name + ": position " + out[i] + " out of range");
                assertTrue(!seen.get(out[i]), name + ": position " + out[i] + " twice");
                seen.set(out[i]);
            }
            assertEquals(-7, out[max], "wrote past maxSelected");
            if (budget < tokens) {
                assertTrue(n >= Math.min(budget, 1), name + ": nothing selected");
            }
        }
    }

    /** A budget of every token returns every token: recall 1 and the dense output. */
    @Property(tries = 60)
    void fullBudgetReturnsEverything(@ForAll("strategies") String name, @ForAll @IntRange(min = 1, max = 300) int tokens,
            @ForAll @IntRange(min = 1, max = 2) int kvHeads, @ForAll @IntRange(min = 1, max = 2) int group,
            @ForAll @IntRange(min = 0, max = 40) int extra, @ForAll long seed) {
        int headDim = 8;
        DenseLayerKv kv = Layers.random(tokens, kvHeads, headDim, false, seed);
        try (Arena arena = Arena.ofConfined()) {
            BaselineSelector s = Layers.build(name, kv, kvHeads * group, seed, arena);
            float[] q = Layers.query(kvHeads * group, headDim, false, new SplittableRandom(seed));
            int[] all = Layers.select(s, q, tokens + extra);
            assertEquals(tokens, all.length, name);
            ExactAttention attention = new ExactAttention(kvHeads * group, kvHeads, headDim);
            float[] w = attention.weights(kv, q);
            assertEquals(1.0, QualityMetrics.attentionMassRecall(w, all), 1e-6, name);
            assertEquals(1.0, QualityMetrics.topKRecall(w, all, tokens), 0.0, name);
        }
    }

    /** Two builds from the same keys and seed select the same tokens, in the same order. */
    @Property(tries = 40)
    void deterministicUnderASeed(@ForAll("strategies") String name, @ForAll @IntRange(min = 20, max = 300) int tokens,
            @ForAll @IntRange(min = 1, max = 100) int budget, @ForAll long seed) {
        DenseLayerKv kv = Layers.random(tokens, 2, 8, false, seed);
        try (Arena arena = Arena.ofConfined()) {
            BaselineSelector a = Layers.build(name, kv, 4, seed, arena);
            BaselineSelector b = Layers.build(name, kv, 4, seed, arena);
            SplittableRandom rnd = new SplittableRandom(seed ^ 0x55);
            for (int step = 0; step < 3; step++) {
                float[] q = Layers.query(4, 8, false, rnd);
                assertArrayEquals(Layers.select(a, q, budget), Layers.select(b, q, budget), name);
                assertEquals(a.indexBytes(), b.indexBytes(), name);
            }
        }
    }

    /** SparF's dual-step filter returns exactly SparQ's top-k (same rank and window). */
    @Property(tries = 80)
    void sparFFiltersToSparQsTopK(@ForAll @IntRange(min = 1, max = 400) int tokens,
            @ForAll @IntRange(min = 1, max = 420) int budget, @ForAll @IntRange(min = 1, max = 16) int rank,
            @ForAll @IntRange(min = 0, max = 40) int window, @ForAll @IntRange(min = 1, max = 32) int groupSize,
            @ForAll boolean coarse, @ForAll long seed) {
        DenseLayerKv kv = Layers.random(tokens, 2, 16, coarse, seed);
        SparQSelector q = new SparQSelector(kv, 4, rank, window);
        SparFSelector f = new SparFSelector(kv, 4, rank, window, groupSize);
        float[] query = Layers.query(4, 16, coarse, new SplittableRandom(seed));
        int[] expected = Layers.select(q, query, budget);
        int[] actual = Layers.select(f, query, budget);
        assertArrayEquals(expected, actual);
        assertEquals(actual.length, f.lastTokensKept());
        long groups = Arrays.stream(actual).map(t -> t / groupSize).distinct().count();
        assertEquals(groups, f.lastGroupsRead(), "groups read = distinct groups of the kept tokens");
        assertEquals(q.lastScoredBytes(), f.lastScoredBytes());
    }
}
