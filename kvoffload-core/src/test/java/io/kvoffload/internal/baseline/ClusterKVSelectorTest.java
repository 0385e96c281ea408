package io.kvoffload.internal.baseline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.strategy.DenseLayerKv;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class ClusterKVSelectorTest {

    /**
     * After 2 sinks, even tokens point along x and odd tokens along y (lengths vary, so only cosine
     * groups them cleanly). Two clusters: a query along x takes the x cluster first, truncated in
     * position order, then the y cluster.
     */
    @Test
    void clustersByDirectionAndTakesThemBestFirst() {
        int n = 22;
        float[] k = new float[n * 2];
        for (int t = 0; t < n; t++) {
            float len = 2 + (t % 3) * 0.5f;
            k[2 * t] = t < 2 ? -9 : (t % 2 == 0 ? len : 0.05f);
            k[2 * t + 1] = t < 2 ? -9 : (t % 2 == 0 ? 0.05f : len);
        }
        DenseLayerKv kv = new DenseLayerKv(n, 2, new float[][] {k}, null);
        ClusterKVSelector s = new ClusterKVSelector(kv, 1, 2, 10, 5, 100, 3);
        assertEquals(2, s.clusters(0));
        assertEquals(-1, s.clusterOf(0, 1));
        for (int t = 2; t < n; t++) {
            assertEquals(s.clusterOf(0, 2 + t % 2), s.clusterOf(0, t), "token " + t);
        }
        assertNotEquals(s.clusterOf(0, 2), s.clusterOf(0, 3));
        float[] q = {1, 0};
        // sinks 0, 1, then the first three members of the x cluster (even positions from 2)
        assertArrayEquals(new int[] {0, 1, 2, 4, 6}, Layers.select(s, q, 5));
        int[] more = Layers.select(s, q, 14); // the whole x cluster (10 tokens) and the lowest 2 of the y cluster
        assertEquals(14, more.length);
        assertArrayEquals(new int[] {0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 18, 20}, more);
        float[] scores = new float[n];
        s.tokenScores(q, scores);
        assertTrue(scores[2] > scores[3]);
        assertEquals(scores[2], scores[20]);
        assertEquals(4L * 2 * 2 + 4L * 20, s.indexBytes());
    }

    /** The sinks are always selected, even past a small budget, and count against the budget. */
    @Test
    void sinksAndBudget() {
        DenseLayerKv kv = Layers.random(3000, 2, 16, false, 2);
        ClusterKVSelector s = new ClusterKVSelector(kv, 4, 7);
        int clusters = (3000 - 16 + 79) / 80;
        assertTrue(Math.abs(s.clusters(0) - clusters) <= 12, "clusters " + s.clusters(0) + " for " + clusters);
        float[] q = Layers.query(4, 16, false, new SplittableRandom(5));
        assertArrayEquals(java.util.stream.IntStream.range(0, 16).toArray(), Layers.select(s, q, 5));
        int[] sel = Layers.select(s, q, 300);
        assertEquals(300, sel.length);
        for (int t = 0; t < 16; t++) {
            assertEquals(t, sel[t]);
        }
    }
}
