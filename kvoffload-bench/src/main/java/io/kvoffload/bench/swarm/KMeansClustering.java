package io.kvoffload.bench.swarm;

import io.kvoffload.internal.baseline.KMeans;
import io.kvoffload.internal.util.LabelGroups;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

/**
 * The baseline Swarm is compared with: k-means on the keys themselves (L2, as PQCache clusters its
 * key sub-vectors; ClusterKV uses the same idea with cosine assignment), each entry in exactly one
 * cluster. To reach as many clusters as Swarm builds (thousands) at 128K tokens on two cores, it is
 * hierarchical: {@code √K} coarse clusters, then each coarse cluster split into its share of the
 * {@code K} fine ones, Lloyd iterations at both levels, centroids seeded from random members.
 *
 * <p>An entry's vector is its keys of all KV heads concatenated ({@code kvHeads × headDim}).
 */
final class KMeansClustering {
    final int[] assignment;   // entry -> cluster
    final float[][] centroids; // cluster -> vector
    final int[][] members;    // cluster -> entries, ascending
    final int[] medoids;      // cluster -> member closest to the centroid

    private KMeansClustering(int[] assignment, float[][] centroids, float[] data, int dim) {
        this.assignment = assignment;
        this.centroids = centroids;
        int k = centroids.length;
        this.members = LabelGroups.of(assignment, k);
        this.medoids = new int[k];
        for (int c = 0; c < k; c++) {
            double best = Double.MAX_VALUE;
            for (int e : members[c]) {
                double d = distance(data, e * dim, centroids[c], dim);
                if (d < best) {
                    best = d;
                    medoids[c] = e;
                }
            }
        }
    }

    /**
     * @param data {@code n × dim} floats, entry-major
     * @param k clusters wanted (empty clusters are dropped, so the result may hold fewer)
     */
    static KMeansClustering fit(float[] data, int n, int dim, int k, int iterations, long seed) {
        int coarse = Math.max(1, (int) Math.round(Math.sqrt(k)));
        int[] all = IntStream.range(0, n).toArray();
        SplittableRandom rnd = new SplittableRandom(seed);
        float[][] coarseCentroids = lloyd(data, dim, all, coarse, iterations, rnd);
        int[] coarseOf = assign(data, dim, all, coarseCentroids);
        int[][] groups = LabelGroups.of(coarseOf, coarse);
        int[] assignment = new int[n];
        float[][] fine = new float[k + coarse][];
        int next = 0;
        for (int g = 0; g < coarse; g++) {
            int[] pts = groups[g];
            if (pts.length == 0) {
                continue;
            }
            int share = (int) Math.max(1, Math.round((double) k * pts.length / n));
            float[][] c = lloyd(data, dim, pts, Math.min(share, pts.length), iterations, rnd);
            int[] local = assign(data, dim, pts, c);
            int[][] byLocal = LabelGroups.of(local, c.length);
            for (int j = 0; j < c.length; j++) {
                if (byLocal[j].length == 0) {
                    continue;
                }
                if (next == fine.length) {
                    fine = Arrays.copyOf(fine, fine.length * 2);
                }
                for (int e : byLocal[j]) {
                    assignment[pts[e]] = next;
                }
                fine[next++] = c[j];
            }
        }
        return new KMeansClustering(assignment, Arrays.copyOf(fine, next), data, dim);
    }

    private static float[][] lloyd(float[] data, int dim, int[] pts, int k, int iterations, SplittableRandom rnd) {
        float[][] c = new float[k][];
        int[] shuffled = pts.clone();
        for (int i = 0; i < k; i++) { // distinct random members as seeds
            int j = i + rnd.nextInt(shuffled.length - i);
            int t = shuffled[i];
            shuffled[i] = shuffled[j];
            shuffled[j] = t;
            c[i] = Arrays.copyOfRange(data, shuffled[i] * dim, shuffled[i] * dim + dim);
        }
        for (int it = 0; it < iterations; it++) {
            int[] a = assign(data, dim, pts, c);
            double[][] sum = new double[k][dim];
            int[] count = new int[k];
            for (int i = 0; i < pts.length; i++) {
                count[a[i]]++;
                int base = pts[i] * dim;
                double[] s = sum[a[i]];
                for (int d = 0; d < dim; d++) {
                    s[d] += data[base + d];
                }
            }
            for (int j = 0; j < k; j++) {
                if (count[j] > 0) {
                    for (int d = 0; d < dim; d++) {
                        c[j][d] = (float) (sum[j][d] / count[j]);
                    }
                }
            }
        }
        return c;
    }

    /** Nearest centroid (L2) of every point: the baselines' {@link KMeans#assign}, on flattened centroids. */
    private static int[] assign(float[] data, int dim, int[] pts, float[][] c) {
        float[] flat = new float[c.length * dim];
        for (int j = 0; j < c.length; j++) {
            System.arraycopy(c[j], 0, flat, j * dim, dim);
        }
        return KMeans.assign(data, 0, dim, dim, pts, flat, c.length, false);
    }

    private static double distance(float[] data, int base, float[] c, int dim) {
        double s = 0;
        for (int d = 0; d < dim; d++) {
            double x = data[base + d] - c[d];
            s += x * x;
        }
        return s;
    }
}
