package io.kvoffload.internal.baseline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.strategy.DenseLayerKv;
import java.util.SplittableRandom;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

class QuestSelectorProperties {

    /**
     * A page's score bounds the summed logit {@code Σ_h q_h·k_t/√d} of every token in it, for any
     * keys, query, GQA grouping and page size.
     */
    @Property(tries = 150)
    void pageScoreIsAnUpperBoundOfItsTokens(@ForAll @IntRange(min = 1, max = 300) int tokens,
            @ForAll @IntRange(min = 1, max = 3) int kvHeads, @ForAll @IntRange(min = 1, max = 3) int group,
            @ForAll @IntRange(min = 1, max = 24) int headDim, @ForAll @IntRange(min = 1, max = 40) int pageSize,
            @ForAll boolean coarse, @ForAll long seed) {
        DenseLayerKv kv = Layers.random(tokens, kvHeads, headDim, coarse, seed);
        int qh = kvHeads * group;
        QuestSelector s = new QuestSelector(kv, qh, pageSize);
        float[] q = Layers.query(qh, headDim, coarse, new SplittableRandom(seed));
        float[] bounds = new float[s.pages()];
        s.pageScores(q, bounds);
        double scale = 1 / Math.sqrt(headDim);
        for (int t = 0; t < tokens; t++) {
            double logit = 0;
            for (int h = 0; h < qh; h++) {
                float[] k = kv.keyArray(h / group);
                for (int i = 0; i < headDim; i++) {
                    logit += (double) q[h * headDim + i] * k[t * headDim + i];
                }
            }
            logit *= scale;
            float bound = bounds[t / pageSize];
            assertTrue(bound >= logit - 1e-4 * (1 + Math.abs(logit)), "page " + t / pageSize + " bound " + bound
                    + " < token " + t + " logit " + logit);
        }
    }

    /**
     * Four pages of two tokens, d = 2, one head; with q̄/√d = (1, −1): bounds 2, 1, 10, 2. Three pages
     * are kept (Quest's minimum): 2, then 0 and 3 tie at 2 and both beat page 1.
     */
    @Example
    void handComputedBoundsAndPages() {
        float[][] k = {{1, -1, -2, 3, 0, 0, 1, 1, 5, -5, 0, 0, -3, -3, -1, 2}};
        DenseLayerKv kv = new DenseLayerKv(8, 2, k, null);
        QuestSelector s = new QuestSelector(kv, 1, 2);
        float r2 = (float) Math.sqrt(2);
        float[] q = {r2, -r2};
        float[] b = new float[4];
        s.pageScores(q, b);
        assertArrayEquals(new float[] {2, 1, 10, 2}, b, 1e-5f);
        assertEquals(3, s.pagesFor(1));
        assertArrayEquals(new int[] {0, 1, 4, 5, 6, 7}, Layers.select(s, q, 1));
        assertEquals(8, Layers.select(s, q, 8).length);
        assertEquals(2L * 4 * 4 * 2, s.indexBytes());
    }

    /** {@code max(3, budget / 16)} pages of 16; the last page of a layer may be short. */
    @Example
    void pageCountFollowsTheBudget() {
        DenseLayerKv kv = Layers.random(1000, 1, 8, false, 3);
        QuestSelector s = new QuestSelector(kv, 2);
        assertEquals(63, s.pages());
        assertEquals(3, s.pagesFor(10));
        assertEquals(6, s.pagesFor(100));
        assertEquals(62, s.pagesFor(999));
        assertEquals(63, s.pagesFor(1000));
        assertEquals(96, s.maxSelected(100));
        assertEquals(1000, s.maxSelected(1000));
        float[] q = Layers.query(2, 8, false, new SplittableRandom(1));
        assertEquals(96, Layers.select(s, q, 100).length);
    }
}
