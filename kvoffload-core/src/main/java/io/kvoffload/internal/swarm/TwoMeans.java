package io.kvoffload.internal.swarm;

/**
 * Two representatives of a block's keys, for {@link BlockMassIndex}'s REPS scorings: 2-means seeded
 * deterministically with the key farthest from the mean and the key farthest from that one, three
 * Lloyd rounds.
 */
final class TwoMeans {
    private TwoMeans() {}

    /**
     * Writes the two centroids of {@code keys[0, n × d)} (token after token) into {@code c0} and
     * {@code c1} ({@code d} long) and returns the members of the first; the second has the rest. One
     * key is its own representative twice, with every member in the first.
     */
    static int of(float[] keys, int n, int d, float[] c0, float[] c1) {
        float[] mu = new float[d];
        for (int t = 0; t < n; t++) {
            for (int j = 0; j < d; j++) {
                mu[j] += keys[t * d + j] / n;
            }
        }
        int a = farthest(keys, n, mu);
        System.arraycopy(keys, a * d, c0, 0, d);
        int z = farthest(keys, n, c0);
        System.arraycopy(keys, z * d, c1, 0, d);
        if (n == 1) {
            return 1;
        }
        int n0 = n;
        boolean[] second = new boolean[n];
        for (int round = 0; round < 3; round++) {
            for (int t = 0; t < n; t++) {
                second[t] = dist(keys, t * d, c1, d) < dist(keys, t * d, c0, d);
            }
            java.util.Arrays.fill(c0, 0f);
            java.util.Arrays.fill(c1, 0f);
            n0 = 0;
            for (int t = 0; t < n; t++) {
                float[] c = second[t] ? c1 : c0;
                for (int j = 0; j < d; j++) {
                    c[j] += keys[t * d + j];
                }
                n0 += second[t] ? 0 : 1;
            }
            int n1 = n - n0;
            for (int j = 0; j < d; j++) {
                c0[j] = n0 > 0 ? c0[j] / n0 : 0f;
                c1[j] = n1 > 0 ? c1[j] / n1 : 0f;
            }
        }
        return n0;
    }

    private static int farthest(float[] keys, int n, float[] from) {
        int d = from.length, best = 0;
        float far = -1;
        for (int t = 0; t < n; t++) {
            float x = dist(keys, t * d, from, d);
            if (x > far) {
                far = x;
                best = t;
            }
        }
        return best;
    }

    private static float dist(float[] keys, int off, float[] c, int d) {
        float s = 0;
        for (int j = 0; j < d; j++) {
            float x = keys[off + j] - c[j];
            s += x * x;
        }
        return s;
    }
}
