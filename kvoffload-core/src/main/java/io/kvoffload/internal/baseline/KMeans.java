package io.kvoffload.internal.baseline;

import io.kvoffload.internal.util.LabelGroups;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

/**
 * Lloyd's k-means (L2) for the offline phase of PQCache (64 centroids per key sub-space) and
 * ClusterKV (hundreds of clusters per KV head). Rows are read in place from a token-major array:
 * row {@code i} is {@code rows[base + i × stride … + dim)}, so a sub-vector of a key is a row too.
 *
 * <p>Seeds are chosen by k-means++; an emptied cluster keeps its centroid. Everything is a function
 * of the seed: assignments run in parallel but each row's nearest centroid depends on nothing else.
 * Many clusters ({@code k > 64}) are trained in two levels, {@code √k} coarse clusters each split into
 * its share of {@code k}, so the cost per iteration is about {@code 2√k} instead of {@code k} distance
 * evaluations per row (the same shortcut as the bench's k-means of Swarm's comparison).
 */
public final class KMeans {
    /** Above this many clusters training goes through two levels. */
    static final int FLAT_LIMIT = 64;
    private static final int PARALLEL_ROWS = 4096;

    private KMeans() {}

    /**
     * Centroids for {@code k} clusters of rows {@code 0 … n−1}.
     *
     * @param sampleLimit at most this many rows train each Lloyd run (a random subset when more)
     * @return {@code k' × dim} floats, {@code k'} about {@code min(k, n, sampleLimit)} (two-level training
     *     rounds each coarse cluster's share, so it may differ by a few)
     */
    static float[] fit(float[] rows, int base, int stride, int n, int dim, int k, int iterations, int sampleLimit,
            long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        k = Math.min(k, Math.min(n, sampleLimit)); // every seed is a distinct sampled row
        if (k <= FLAT_LIMIT) {
            return lloyd(rows, base, stride, dim, sample(identity(n), sampleLimit, rnd), k, iterations, rnd);
        }
        int coarse = Math.max(2, (int) Math.round(Math.sqrt(k)));
        float[] cc = lloyd(rows, base, stride, dim, sample(identity(n), sampleLimit, rnd), coarse, iterations, rnd);
        int[] all = identity(n);
        int[] label = assign(rows, base, stride, dim, all, cc, coarse, false);
        int[][] groups = LabelGroups.of(all, label, coarse);
        float[] out = new float[k * dim + coarse * dim]; // shares are rounded, so a few more than k may come
        int count = 0;
        for (int[] g : groups) {
            if (g.length == 0) {
                continue;
            }
            int share = (int) Math.min(g.length, Math.max(1, Math.round((double) k * g.length / n)));
            float[] fine = lloyd(rows, base, stride, dim, sample(g, sampleLimit, rnd), share, iterations, rnd);
            if ((count + share) * dim > out.length) {
                out = Arrays.copyOf(out, Math.max(out.length * 2, (count + share) * dim));
            }
            System.arraycopy(fine, 0, out, count * dim, share * dim);
            count += share;
        }
        return Arrays.copyOf(out, count * dim);
    }

    /**
     * Lloyd iterations from k-means++ seeds among {@code points}: the first seed uniformly, each next
     * one with probability proportional to its squared distance from the nearest seed so far, so
     * duplicate rows never seed two clusters while distinct rows remain.
     */
    static float[] lloyd(float[] rows, int base, int stride, int dim, int[] points, int k, int iterations,
            SplittableRandom rnd) {
        float[] c = new float[k * dim];
        double[] nearest = new double[points.length];
        Arrays.fill(nearest, Double.POSITIVE_INFINITY);
        int pick = rnd.nextInt(points.length);
        for (int j = 0; j < k; j++) {
            System.arraycopy(rows, base + points[pick] * stride, c, j * dim, dim);
            if (j == k - 1) {
                break;
            }
            double total = 0;
            for (int i = 0; i < points.length; i++) {
                int src = base + points[i] * stride;
                double d2 = 0;
                for (int d = 0; d < dim; d++) {
                    double x = rows[src + d] - c[j * dim + d];
                    d2 += x * x;
                }
                nearest[i] = Math.min(nearest[i], d2);
                total += nearest[i];
            }
            if (total > 0) {
                double u = rnd.nextDouble() * total;
                pick = points.length - 1;
                for (int i = 0; i < points.length; i++) {
                    u -= nearest[i];
                    if (u < 0 && nearest[i] > 0) {
                        pick = i;
                        break;
                    }
                }
                while (nearest[pick] == 0) { // rounding left u at the end: take the last row still uncovered
                    pick--;
                }
            } else { // every row equals a seed already: any row will do
                pick = rnd.nextInt(points.length);
            }
        }
        double[] sum = new double[k * dim];
        int[] count = new int[k];
        for (int it = 0; it < iterations; it++) {
            int[] a = assign(rows, base, stride, dim, points, c, k, false);
            Arrays.fill(sum, 0);
            Arrays.fill(count, 0);
            for (int i = 0; i < points.length; i++) {
                int j = a[i];
                count[j]++;
                int src = base + points[i] * stride;
                int dst = j * dim;
                for (int d = 0; d < dim; d++) {
                    sum[dst + d] += rows[src + d];
                }
            }
            for (int j = 0; j < k; j++) {
                if (count[j] > 0) {
                    for (int d = 0; d < dim; d++) {
                        c[j * dim + d] = (float) (sum[j * dim + d] / count[j]);
                    }
                }
            }
        }
        return c;
    }

    /**
     * The nearest centroid of every row of {@code points}: by L2 distance, or with {@code cosine} by
     * cosine similarity (the centroids are normalised first; a row's own norm does not change its
     * argmax). The bench's k-means of Swarm's comparison assigns through this too.
     */
    public static int[] assign(float[] rows, int base, int stride, int dim, int[] points, float[] centroids, int k,
            boolean cosine) {
        float[] c = centroids;
        float[] norms = new float[k];
        if (cosine) {
            c = centroids.clone();
            for (int j = 0; j < k; j++) {
                double s = 0;
                for (int d = 0; d < dim; d++) {
                    s += (double) c[j * dim + d] * c[j * dim + d];
                }
                float inv = s > 0 ? (float) (1 / Math.sqrt(s)) : 0f;
                for (int d = 0; d < dim; d++) {
                    c[j * dim + d] *= inv;
                }
            }
        } else {
            for (int j = 0; j < k; j++) {
                double s = 0;
                for (int d = 0; d < dim; d++) {
                    s += (double) c[j * dim + d] * c[j * dim + d];
                }
                norms[j] = (float) s;
            }
        }
        float[] cc = c;
        int[] out = new int[points.length];
        IntStream range = IntStream.range(0, points.length);
        if (points.length >= PARALLEL_ROWS) {
            range = range.parallel();
        }
        // ‖x − c‖² = ‖x‖² − 2 x·c + ‖c‖², and ‖x‖² is the same for every c; for cosine the norms are 0.
        range.forEach(i -> out[i] = nearest(rows, base + points[i] * stride, dim, cc, norms, k));
        return out;
    }

    /**
     * The centroid minimising {@code norms[j] − 2 x·c_j} (ties: lower j), four centroids per pass over
     * the row so that four independent sums keep the multiply-add units busy.
     */
    private static int nearest(float[] x, int xo, int dim, float[] c, float[] norms, int k) {
        float best = Float.POSITIVE_INFINITY;
        int arg = 0;
        int j = 0;
        for (; j + 3 < k; j += 4) {
            int c0 = j * dim, c1 = c0 + dim, c2 = c1 + dim, c3 = c2 + dim;
            float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            for (int d = 0; d < dim; d++) {
                float v = x[xo + d];
                s0 += v * c[c0 + d];
                s1 += v * c[c1 + d];
                s2 += v * c[c2 + d];
                s3 += v * c[c3 + d];
            }
            float d0 = norms[j] - 2 * s0, d1 = norms[j + 1] - 2 * s1, d2 = norms[j + 2] - 2 * s2, d3 = norms[j + 3] - 2 * s3;
            if (d0 < best) { best = d0; arg = j; }
            if (d1 < best) { best = d1; arg = j + 1; }
            if (d2 < best) { best = d2; arg = j + 2; }
            if (d3 < best) { best = d3; arg = j + 3; }
        }
        for (; j < k; j++) {
            float dd = norms[j] - 2 * AbstractSelector.dot(x, xo, c, j * dim, dim);
            if (dd < best) {
                best = dd;
                arg = j;
            }
        }
        return arg;
    }

    static int[] identity(int n) {
        int[] a = new int[n];
        for (int i = 0; i < n; i++) {
            a[i] = i;
        }
        return a;
    }

    /** At most {@code limit} distinct random entries of {@code points}, in ascending order. */
    static int[] sample(int[] points, int limit, SplittableRandom rnd) {
        if (points.length <= limit) {
            return points;
        }
        int[] p = points.clone();
        for (int i = 0; i < limit; i++) {
            int j = i + rnd.nextInt(p.length - i);
            int t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
        int[] s = Arrays.copyOf(p, limit);
        Arrays.sort(s);
        return s;
    }
}
