package io.kvoffload.internal.baseline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.attention.ExactAttention;
import io.kvoffload.internal.util.TopK;
import io.kvoffload.strategy.DenseLayerKv;
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

/**
 * {@link AbstractSelector#selectBetween}, what the pipeline asks of a baseline: exactly the budget
 * in distinct positions between the sinks and the window it already holds, so every strategy
 * attends the same rows.
 */
class SelectBetweenProperties {

    /** A range outside the layer, a non-positive budget or a short output array is named, not clipped. */
    @org.junit.jupiter.api.Test
    void badArgumentsAreNamed() {
        DenseLayerKv kv = Layers.random(64, 1, 8, false, 1);
        OracleSelector s = new OracleSelector(kv, 2);
        float[] q = Layers.query(2, 8, false, new SplittableRandom(1));
        Layers.assertMessage(() -> s.selectBetween(q, 4, 10, 5, new int[4]), "from = 10, to = 5", "tokens() = 64");
        Layers.assertMessage(() -> s.selectBetween(q, 4, 0, 65, new int[4]), "to = 65");
        Layers.assertMessage(() -> s.selectBetween(q, 0, 0, 64, new int[4]), "budgetTokens");
        Layers.assertMessage(() -> s.selectBetween(q, 8, 0, 64, new int[4]), "out.length = 4", "at least 8");
    }

    @Provide
    Arbitrary<String> baselines() {
        return Arbitraries.of(Layers.NAMES.stream().filter(n -> !n.equals("swarm")).toList());
    }

    @Property(tries = 200)
    void exactlyTheBudgetOfDistinctPositionsInTheRange(@ForAll("baselines") String name,
            @ForAll @IntRange(min = 1, max = 300) int tokens, @ForAll @IntRange(min = 1, max = 2) int kvHeads,
            @ForAll @IntRange(min = 1, max = 3) int group, @ForAll @IntRange(min = 0, max = 40) int sinks,
            @ForAll @IntRange(min = 0, max = 60) int window, @ForAll @IntRange(min = 1, max = 320) int budget,
            @ForAll boolean coarse, @ForAll long seed) {
        int headDim = 8;
        DenseLayerKv kv = Layers.random(tokens, kvHeads, headDim, coarse, seed);
        int from = Math.min(sinks, tokens), to = Math.max(from, tokens - window);
        try (Arena arena = Arena.ofConfined()) {
            AbstractSelector s = (AbstractSelector) Layers.build(name, kv, kvHeads * group, seed, arena);
            float[] q = Layers.query(kvHeads * group, headDim, coarse, new SplittableRandom(seed + 1));
            int want = Math.min(budget, to - from);
            int[] out = new int[want + 3];
            Arrays.fill(out, -7);
            int n = s.selectBetween(q, budget, from, to, out);
            assertEquals(want, n, name + ": positions for budget " + budget + " in [" + from + ", " + to + ")");
            BitSet seen = new BitSet(tokens);
            for (int i = 0; i < n; i++) {
                assertTrue(out[i] >= from && out[i] < to, name + ": position " + out[i] + " outside [" + from + ", " + to + ")");
                assertTrue(!seen.get(out[i]), name + ": position " + out[i] + " twice");
                seen.set(out[i]);
            }
            assertEquals(-7, out[want], name + ": wrote past the budget");
        }
    }

    /** The oracle's choice is the exact top-k of the range by attention weight. */
    @Property(tries = 80)
    void theOracleTakesTheTopOfTheRange(@ForAll @IntRange(min = 1, max = 300) int tokens,
            @ForAll @IntRange(min = 1, max = 2) int kvHeads, @ForAll @IntRange(min = 0, max = 40) int sinks,
            @ForAll @IntRange(min = 0, max = 60) int window, @ForAll @IntRange(min = 1, max = 320) int budget,
            @ForAll long seed) {
        int headDim = 8, queryHeads = 2 * kvHeads;
        DenseLayerKv kv = Layers.random(tokens, kvHeads, headDim, false, seed);
        int from = Math.min(sinks, tokens), to = Math.max(from, tokens - window);
        OracleSelector s = new OracleSelector(kv, queryHeads);
        float[] q = Layers.query(queryHeads, headDim, false, new SplittableRandom(seed));
        int[] out = new int[Math.max(1, budget)];
        int n = s.selectBetween(q, budget, from, to, out);
        float[] w = new ExactAttention(queryHeads, kvHeads, headDim).weights(kv, q);
        float[] range = Arrays.copyOfRange(w, from, to);
        int[] expected = TopK.indices(range, Math.min(budget, to - from));
        for (int i = 0; i < expected.length; i++) {
            expected[i] += from;
        }
        int[] got = Arrays.copyOf(out, n);
        Arrays.sort(got);
        Arrays.sort(expected);
        assertArrayEquals(expected, got);
    }

    /** Quest and InfLLM cut their lowest-ranked unit, never a better one. */
    @Property(tries = 80)
    void unitsAreTakenBestFirstAndOnlyTheLastIsCut(@ForAll @IntRange(min = 8, max = 300) int tokens,
            @ForAll @IntRange(min = 1, max = 200) int budget, @ForAll long seed) {
        DenseLayerKv kv = Layers.random(tokens, 1, 8, false, seed);
        QuestSelector s = new QuestSelector(kv, 2, 4);
        float[] q = Layers.query(2, 8, false, new SplittableRandom(seed));
        int from = 3, to = tokens;
        int[] out = new int[budget];
        int n = s.selectBetween(q, budget, from, to, out);
        float[] pages = new float[s.pages()];
        s.pageScores(q, pages);
        int[] perPage = new int[s.pages()];
        for (int i = 0; i < n; i++) {
            perPage[out[i] / 4]++;
        }
        // A page taken in part must be the lowest scored of the pages taken; a page left out scores
        // no higher than every page taken whole.
        float lowestWhole = Float.POSITIVE_INFINITY;
        int partial = -1;
        for (int p = 0; p < s.pages(); p++) {
            int size = Math.min(to, 4 * p + 4) - Math.max(from, 4 * p);
            if (perPage[p] == size && size > 0) {
                lowestWhole = Math.min(lowestWhole, pages[p]);
            } else if (perPage[p] > 0) {
                assertEquals(-1, partial, "two pages cut");
                partial = p;
            }
        }
        for (int p = 0; p < s.pages(); p++) {
            if (perPage[p] == 0 && 4 * p + 4 > from) {
                assertTrue(pages[p] <= lowestWhole, "page " + p + " left out scores above a page taken whole");
            }
        }
        if (partial >= 0) {
            assertTrue(pages[partial] <= lowestWhole, "the cut page " + partial + " outranks a page taken whole");
        }
    }
}
