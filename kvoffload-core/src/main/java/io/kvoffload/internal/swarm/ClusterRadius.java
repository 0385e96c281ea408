package io.kvoffload.internal.swarm;

import io.kvoffload.internal.util.Checks;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * How the cluster radius {@code τ} of Eq. 4–5 is chosen: a fixed value, or a quantile of the
 * distances between co-activated entries of the profile at hand.
 *
 * <p>τ is always in {@code [0, 1)}: a pair never co-activated has distance exactly 1, so it is never
 * within τ, which is what keeps the within-radius graph sparse.
 */
public sealed interface ClusterRadius {

    /** The radius for this profile. */
    double resolve(CoActivationProfile profile);

    /** A fixed radius, {@code [0, 1)}. The paper's worked example uses 0.35 with the per-query normaliser. */
    static ClusterRadius fixed(double tau) {
        return new Fixed(tau);
    }

    /**
     * The {@code quantile} of {@code d(i,j)} over pairs co-activated by at least one query (the
     * pairs with {@code d < 1}), estimated from {@code samples} pairs drawn with probability
     * proportional to how often they were co-activated: pick a query with probability ∝
     * {@code C(|A_q|, 2)}, then two distinct entries of its activation set. Deterministic for a
     * seed. Use this with the sum-of-counts normaliser, whose distances all sit near 1.
     *
     * @param quantile (0, 1]: a small quantile keeps only the strongest co-activations
     * @param samples 1..10^7
     */
    static ClusterRadius quantile(double quantile, int samples, long seed) {
        return new Quantile(quantile, samples, seed);
    }

    /** A fixed radius. */
    record Fixed(double tau) implements ClusterRadius {
        public Fixed {
            Checks.inHalfOpen("tau", tau, 0.0, 1.0);
        }

        @Override
        public double resolve(CoActivationProfile profile) {
            return tau;
        }
    }

    /** A radius from a quantile of sampled distances. */
    record Quantile(double quantile, int samples, long seed) implements ClusterRadius {
        public Quantile {
            if (!(quantile > 0 && quantile <= 1)) {
                throw new IllegalArgumentException("quantile = " + quantile + " is out of range; allowed: (0, 1]");
            }
            Checks.inRange("samples", samples, 1, 10_000_000);
        }

        /**
         * @return the sampled quantile distance (adjusted so pairs at exactly that distance are
         *     within), or 0 when no two entries were ever co-activated
         */
        @Override
        public double resolve(CoActivationProfile p) {
            int q = p.queries();
            long[] sizes = p.setSizesUnsafe();
            long[] cumulativePairs = new long[q];
            long total = 0;
            for (int i = 0; i < q; i++) {
                total += sizes[i] * (sizes[i] - 1) / 2;
                cumulativePairs[i] = total;
            }
            if (total == 0) {
                return 0.0;
            }
            int[][] members = membersByQuery(p);
            SplittableRandom rnd = new SplittableRandom(seed);
            int[] counts = new int[samples];
            for (int s = 0; s < samples; s++) {
                long r = rnd.nextLong(total);
                int query = Arrays.binarySearch(cumulativePairs, r + 1);
                query = query >= 0 ? query : -query - 1;
                while (query > 0 && cumulativePairs[query - 1] >= r + 1) {
                    query--; // first query whose cumulative count reaches r + 1
                }
                int[] m = members[query];
                int a = rnd.nextInt(m.length);
                int b = rnd.nextInt(m.length - 1);
                if (b >= a) {
                    b++;
                }
                counts[s] = p.overlap(m[a], m[b]);
            }
            // Distances ascending = counts descending: the quantile distance is the count at rank
            // ⌈quantile × samples⌉ from the top.
            Arrays.sort(counts);
            int rank = (int) Math.ceil(quantile * samples);
            long count = counts[samples - rank];
            if (count >= p.normaliser()) {
                return 0.0; // only pairs co-activated in every query (d = 0) are that close
            }
            return RadiusThreshold.radiusForCount(count, p.normaliser());
        }

        private static int[][] membersByQuery(CoActivationProfile p) {
            int q = p.queries();
            int words = p.words();
            long[] bits = p.bitsUnsafe();
            int[][] members = new int[q][];
            for (int i = 0; i < q; i++) {
                members[i] = new int[(int) p.setSizesUnsafe()[i]];
            }
            int[] fill = new int[q];
            for (int e = 0; e < p.entries(); e++) {
                for (int w = 0; w < words; w++) {
                    long x = bits[e * words + w];
                    while (x != 0) {
                        int query = w * 64 + Long.numberOfTrailingZeros(x);
                        members[query][fill[query]++] = e;
                        x &= x - 1;
                    }
                }
            }
            return members;
        }
    }
}
