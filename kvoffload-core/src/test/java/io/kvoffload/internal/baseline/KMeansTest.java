package io.kvoffload.internal.baseline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class KMeansTest {

    /** Three well-separated blobs in 4 dimensions, each a different distance from the origin. */
    private static float[] blobs(int perBlob, SplittableRandom rnd) {
        float[][] centres = {{10, 0, 0, 0}, {0, -10, 0, 5}, {3, 3, 30, 3}};
        float[] rows = new float[3 * perBlob * 4];
        for (int i = 0; i < 3 * perBlob; i++) {
            for (int d = 0; d < 4; d++) {
                rows[i * 4 + d] = centres[i % 3][d] + (float) (0.3 * Layers.gaussian(rnd));
            }
        }
        return rows;
    }

    @Test
    void recoversSeparatedClustersDeterministically() {
        float[] rows = blobs(200, new SplittableRandom(1));
        float[] c = KMeans.fit(rows, 0, 4, 600, 4, 3, 10, 10_000, 42);
        assertEquals(12, c.length);
        int[] a = KMeans.assign(rows, 0, 4, 4, KMeans.identity(600), c, 3, false);
        for (int i = 3; i < 600; i++) {
            assertEquals(a[i % 3], a[i], "row " + i + " left its blob");
        }
        assertTrue(a[0] != a[1] && a[1] != a[2] && a[0] != a[2]);
        assertArrayEquals(c, KMeans.fit(rows, 0, 4, 600, 4, 3, 10, 10_000, 42));
        int[] cos = KMeans.assign(rows, 0, 4, 4, KMeans.identity(600), c, 3, true);
        assertArrayEquals(a, cos, "the blobs also differ in direction");
    }

    /** Many clusters train in two levels and still cover the data with about k centroids. */
    @Test
    void twoLevelTraining() {
        float[] rows = blobs(400, new SplittableRandom(2));
        float[] c = KMeans.fit(rows, 0, 4, 1200, 4, 100, 5, 500, 7);
        int k = c.length / 4;
        assertTrue(k >= 90 && k <= 110, "k = " + k);
        assertArrayEquals(c, KMeans.fit(rows, 0, 4, 1200, 4, 100, 5, 500, 7));
    }

    /** Rows read through a base and stride: sub-vectors of wider rows. */
    @Test
    void stridedRows() {
        float[] rows = {0, 100, 1, 100, 0, -100, 1, -100}; // dimension 1 of each 2-wide row
        float[] c = KMeans.fit(rows, 1, 2, 4, 1, 2, 5, 100, 3);
        float lo = Math.min(c[0], c[1]), hi = Math.max(c[0], c[1]);
        assertEquals(-100f, lo);
        assertEquals(100f, hi);
    }
}
