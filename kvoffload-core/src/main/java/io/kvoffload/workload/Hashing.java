package io.kvoffload.workload;

/**
 * Counter-based randomness: every number the generator uses is a pure function of the seed and
 * of a few coordinates (layer, head, token, dimension, step). That is what lets a million-token
 * layer be generated lazily, piece by piece, in any order and on any thread, with the same result.
 */
final class Hashing {
    private static final long GOLDEN = 0x9E3779B97F4A7C15L;
    private static final double SQRT3 = Math.sqrt(3.0);

    private Hashing() {}

    /** SplitMix64's finaliser: a bijective 64-bit mix with good avalanche. */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    static long key(long a, long b) {
        return mix(mix(a + GOLDEN) ^ (b * GOLDEN + 0x632BE59BD9B4E019L));
    }

    static long key(long a, long b, long c) {
        return key(key(a, b), c);
    }

    static long key(long a, long b, long c, long d) {
        return key(key(key(a, b), c), d);
    }

    /** Uniform in [0, 1). */
    static double uniform(long h) {
        return (h >>> 11) * 0x1p-53;
    }

    /**
     * Uniform in [−√3, √3): zero mean, unit variance. Used instead of a Gaussian because it costs one
     * mix and, summed over dozens of dimensions, gives the same dot-product statistics.
     */
    static float unitVariance(long h) {
        return (float) (((h >>> 40) * 0x1p-24 * 2.0 - 1.0) * SQRT3);
    }

    /** The {@code i}-th unit-variance component of the stream {@code streamKey}. */
    static float component(long streamKey, int i) {
        return unitVariance(mix(streamKey + (i + 1) * GOLDEN));
    }

    /** An integer in {@code [0, bound)} from a hash. */
    static int below(long h, int bound) {
        return (int) Long.remainderUnsigned(h, bound);
    }

    /** A seeded Fisher–Yates permutation of {@code 0 .. n−1}: swap {@code i} with {@code below(key(k, i), i + 1)}, i from the top. */
    static int[] permutation(long k, int n) {
        int[] p = new int[n];
        for (int i = 0; i < n; i++) {
            p[i] = i;
        }
        for (int i = n - 1; i > 0; i--) {
            int j = below(key(k, i), i + 1);
            int tmp = p[i];
            p[i] = p[j];
            p[j] = tmp;
        }
        return p;
    }

    /** The cumulative distribution of a Zipf law over ranks {@code 0 .. n−1} with exponent {@code skew} (rank r weighs (r+1)^−skew). */
    static double[] zipfCdf(int n, double skew) {
        double[] cdf = new double[n];
        double sum = 0;
        for (int r = 0; r < n; r++) {
            sum += Math.pow(r + 1, -skew);
            cdf[r] = sum;
        }
        for (int r = 0; r < n; r++) {
            cdf[r] /= sum;
        }
        return cdf;
    }
}
