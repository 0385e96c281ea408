package io.kvoffload.internal.baseline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvoffload.strategy.DenseLayerKv;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

class SparseQuerySelectorTest {

    /**
     * d = 4, r = 2, q = (3, −1, 0.5, 2): the kept dimensions are 0 and 3, so token 2 = (0, 5, 5, 0)
     * scores 0 although its exact logit is −2.5. Approximate logits 3, 2, 0, −3 at temperature
     * 1/√(4 · 5/6.5).
     */
    @Test
    void handComputedApproximateScores() {
        float[][] k = {{1, 0, 0, 0, 0, 0, 0, 1, 0, 5, 5, 0, -1, 0, 0, 0}};
        DenseLayerKv kv = new DenseLayerKv(4, 4, k, null);
        SparQSelector s = new SparQSelector(kv, 1, 2, 0);
        float[] q = {3, -1, 0.5f, 2};
        assertArrayEquals(new int[] {0, 1}, Layers.select(s, q, 2));
        double temp = 1 / Math.sqrt(4 * 5 / 6.5);
        double[] l = {3 * temp, 2 * temp, 0, -3 * temp};
        double z = 0;
        for (double x : l) {
            z += Math.exp(x);
        }
        for (int t = 0; t < 4; t++) {
            assertEquals(Math.exp(l[t]) / z, s.scores[t], 1e-6);
        }
        assertEquals(4L * 2 * 4, s.lastScoredBytes()); // two rows of K^T, 4 tokens each
        assertEquals(4L * 4 * 4, s.indexBytes());

        SparQSelector windowed = new SparQSelector(kv, 1, 2, 1);
        assertArrayEquals(new int[] {0, 3}, Layers.select(windowed, q, 2)); // the window, then the best other
        assertArrayEquals(new int[] {3}, Layers.select(windowed, q, 1));     // the budget cuts into the window
    }

    /** GQA: two query heads choose different dimensions; the score is the mean of their softmaxes. */
    @Test
    void averagesTheQueryHeads() {
        float[][] k = {{2, 0, 0, 2, 0, 0}};
        DenseLayerKv kv = new DenseLayerKv(3, 2, k, null);
        SparQSelector s = new SparQSelector(kv, 2, 1, 0);
        float[] q = {1, 0.5f, 0.25f, 1}; // head 0 keeps dimension 0, head 1 dimension 1
        Layers.select(s, q, 1);
        double t0 = 1 / Math.sqrt(2 * 1 / 1.5), t1 = 1 / Math.sqrt(2 * 1 / 1.25);
        double a = Math.exp(2 * t0) + 2, b = Math.exp(2 * t1) + 2;
        assertEquals((Math.exp(2 * t0) / a + 1 / b) / 2, s.scores[0], 1e-6);
        assertEquals((1 / a + Math.exp(2 * t1) / b) / 2, s.scores[1], 1e-6);
        assertEquals(4L * 2 * 3, s.lastScoredBytes()); // rows 0 and 1 of the one KV head
    }

    /**
     * With every dimension kept ({@code r = headDim}) the temperature is {@code 1/√d} and SparQ's
     * score is the exact attention weight averaged over the query heads: the oracle's ranking.
     */
    @Property(tries = 40)
    void fullRankIsTheOracle(@ForAll @IntRange(min = 2, max = 300) int tokens, @ForAll @IntRange(min = 1, max = 2) int kvHeads,
            @ForAll @IntRange(min = 1, max = 3) int group, @ForAll @IntRange(min = 1, max = 300) int budget,
            @ForAll long seed) {
        DenseLayerKv kv = Layers.random(tokens, kvHeads, 8, false, seed);
        int qh = kvHeads * group;
        SparQSelector s = new SparQSelector(kv, qh, 8, 0);
        OracleSelector oracle = new OracleSelector(kv, qh);
        float[] q = Layers.query(qh, 8, false, new SplittableRandom(seed));
        int[] chosen = Layers.select(s, q, 1 + budget % (tokens - 1)); // a budget below the layer: scores are computed
        float[] w = new float[tokens];
        oracle.weights(q, w);
        for (int t = 0; t < tokens; t++) {
            assertEquals(w[t], s.scores[t], 1e-5f * Math.max(1e-3f, w[t]), "token " + t);
        }
        assertEquals(1 + budget % (tokens - 1), chosen.length);
    }

    /**
     * SparF reads 4-token groups: a top-2 of tokens 1 and 2 reads one group, a top-3 adding token 5
     * a second; the filter keeps only the top tokens.
     */
    @Test
    void sparFReadsGroupsAndFiltersInside() {
        float[][] k = {{0, 0, 5, 0, 4, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0}};
        DenseLayerKv kv = new DenseLayerKv(8, 2, k, null);
        SparFSelector f = new SparFSelector(kv, 1, 1, 0, 4);
        float[] q = {1, 0};
        assertArrayEquals(new int[] {1, 2}, Layers.select(f, q, 2));
        assertEquals(1, f.lastGroupsRead());
        assertEquals(2, f.lastTokensKept());
        assertArrayEquals(new int[] {1, 2, 5}, Layers.select(f, q, 3));
        assertEquals(2, f.lastGroupsRead());
        assertArrayEquals(new int[] {0, 1, 2, 3, 4, 5, 6, 7}, Layers.select(f, q, 8));
        assertEquals(2, f.lastGroupsRead());
        SparFSelector windowed = new SparFSelector(kv, 1, 1, 2, 4);
        assertArrayEquals(new int[] {1, 6, 7}, Layers.select(windowed, q, 3));
        assertEquals(2, windowed.lastGroupsRead());
    }
}
