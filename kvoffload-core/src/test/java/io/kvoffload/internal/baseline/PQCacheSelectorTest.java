package io.kvoffload.internal.baseline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.kvoffload.strategy.DenseLayerKv;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class PQCacheSelectorTest {

    /**
     * d = 2 in two sub-spaces of one dimension; after 2 sinks, sub-space 0 takes only −1 or 3 and
     * sub-space 1 only 2 or −2, so two centroids per sub-space reproduce every key exactly and a
     * token's score is its exact logit.
     */
    @Test
    void exactCodebookGivesExactScores() {
        int n = 12;
        float[] k = new float[n * 2];
        SplittableRandom rnd = new SplittableRandom(4);
        for (int t = 0; t < n; t++) {
            k[2 * t] = t < 2 ? 100 : (rnd.nextBoolean() ? -1 : 3);
            k[2 * t + 1] = t < 2 ? 100 : (rnd.nextBoolean() ? 2 : -2);
        }
        k[2 * 2] = -1; // both values occur in both sub-spaces
        k[2 * 3] = 3;
        k[2 * 2 + 1] = 2;
        k[2 * 3 + 1] = -2;
        DenseLayerKv kv = new DenseLayerKv(n, 2, new float[][] {k}, null);
        PQCacheSelector s = new PQCacheSelector(kv, 1, 2, 3, 2, 2, 5, 100, 9);
        for (int t = 2; t < n; t++) {
            for (int u = 2; u < n; u++) {
                for (int sub = 0; sub < 2; sub++) {
                    assertEquals(k[2 * t + sub] == k[2 * u + sub], s.code(0, sub, t) == s.code(0, sub, u));
                }
            }
        }
        float r2 = (float) Math.sqrt(2);
        float[] q = {r2, 0.5f * r2}; // q/√d = (1, 0.5)
        float[] scores = new float[n];
        s.tokenScores(q, scores);
        for (int t = 2; t < n - 3; t++) {
            assertEquals(k[2 * t] + 0.5f * k[2 * t + 1], scores[t], 1e-5f, "token " + t);
        }
        assertEquals(0f, scores[0]);
        assertEquals(0f, scores[n - 1]);
        // Budget 7 = 2 sinks + 3 window + the 2 best of tokens 2..8 (ties to the lower position).
        int[] sel = Layers.select(s, q, 7);
        assertEquals(7, sel.length);
        assertArrayEquals(new int[] {0, 1}, java.util.Arrays.copyOf(sel, 2));
        assertArrayEquals(new int[] {9, 10, 11}, java.util.Arrays.copyOfRange(sel, 4, 7));
        int[] top = io.kvoffload.internal.util.TopK.indices(java.util.Arrays.copyOfRange(scores, 2, n - 3), 2);
        assertArrayEquals(new int[] {top[0] + 2, top[1] + 2}, java.util.Arrays.copyOfRange(sel, 2, 4));
        assertEquals((long) n * 2 + 4L * 2 * 2, s.indexBytes());
    }

    /** The sinks and the window count against the budget; the fixed part is kept even past it. */
    @Test
    void fixedTokensAndBudget() {
        DenseLayerKv kv = Layers.random(2000, 2, 16, false, 8);
        PQCacheSelector s = new PQCacheSelector(kv, 4, 256, 1);
        assertEquals(32 + 256, s.fixedTokens());
        assertEquals(288, s.maxSelected(10));
        float[] q = Layers.query(4, 16, false, new SplittableRandom(1));
        int[] small = Layers.select(s, q, 10);
        assertEquals(288, small.length);
        assertEquals(0, s.lastScoredBytes()); // nothing was left to score
        int[] sel = Layers.select(s, q, 400);
        assertEquals(400, sel.length);
        for (int t = 0; t < 32; t++) {
            assertEquals(t, sel[t]);
        }
        for (int i = 0; i < 256; i++) {
            assertEquals(2000 - 256 + i, sel[400 - 256 + i]);
        }
        assertNotEquals(0, s.lastScoredBytes());
        PQCacheSelector other = new PQCacheSelector(kv, 4, 256, 2);
        assertEquals(s.indexBytes(), other.indexBytes());
        assertEquals(2000L * 2 * 2 + 4L * 2 * 2 * 64 * 8, s.indexBytes());
    }
}
