package io.kvoffload.internal.util;

/**
 * Per-dimension largest, smallest and summed elements of a run of consecutive keys: the summary a
 * block-mass index keeps of each block. Through the Vector API where {@link Softmax#VECTORISED}
 * (each dimension's three running values stay in registers while the run's keys stream past, about
 * ten times the scalar loop's speed, docs/benchmarks.md "Opening a layer"), else element by element.
 * The sums add the keys in order either way, so both give the same floats.
 */
public final class KeyBounds {
    private KeyBounds() {}

    /**
     * Runs below which a caller stays scalar: Vector API code is slow and allocates until C2 has
     * compiled it, which a few thousand runs of a layer's summary reach, and a short layer never needs.
     */
    public static final int VECTOR_MIN_RUNS = 4096;

    /** Whether {@code runs} calls of {@link #of} are worth the Vector API. */
    public static boolean vectorised(long runs) {
        return Softmax.VECTORISED && runs >= VECTOR_MIN_RUNS;
    }

    /**
     * Writes the largest, smallest and summed elements of the {@code n ≥ 1} keys {@code keys[at + t × d,
     * at + t × d + d)} to {@code hi}, {@code lo} and {@code sum} at {@code [o, o + d)}. The keys must be
     * finite (a NaN may or may not win), and a zero's sign in {@code hi} and {@code lo} is either's.
     *
     * @param vector whether to use the Vector API ({@link #vectorised})
     */
    public static void of(float[] keys, int at, int d, int n, float[] hi, float[] lo, float[] sum, int o, boolean vector) {
        if (vector) {
            VectorKeyBounds.of(keys, at, d, n, hi, lo, sum, o);
        } else {
            scalar(keys, at, d, n, hi, lo, sum, o, 0);
        }
    }

    /**
     * {@link #of} of the run's parts of {@code part} tokens (the last may be shorter) and of the whole run
     * in one pass over its keys: part {@code i}'s summaries at {@code [o + i × d, o + i × d + d)} of {@code
     * hi}, {@code lo} and {@code sum}, the run's at {@code [wo, wo + d)} of {@code wHi}, {@code wLo} and
     * {@code wSum}, each the floats {@link #of} writes for it alone (the run's sum adds its keys in order).
     * What a calibrating opening builds for blocks and their halves at once.
     */
    public static void ofParts(float[] keys, int at, int d, int n, int part, float[] hi, float[] lo, float[] sum, int o,
            float[] wHi, float[] wLo, float[] wSum, int wo, boolean vector) {
        if (vector) {
            VectorKeyBounds.ofParts(keys, at, d, n, part, hi, lo, sum, o, wHi, wLo, wSum, wo);
        } else {
            scalarParts(keys, at, d, n, part, hi, lo, sum, o, wHi, wLo, wSum, wo, 0);
        }
    }

    /** {@link #ofParts} for dimensions {@code [from, d)}, element by element (also the vector path's tail). */
    static void scalarParts(float[] keys, int at, int d, int n, int part, float[] hi, float[] lo, float[] sum, int o,
            float[] wHi, float[] wLo, float[] wSum, int wo, int from) {
        for (int p = 0, t = 0; t < n; p++, t += part) {
            scalar(keys, at + t * d, d, Math.min(part, n - t), hi, lo, sum, o + p * d, from);
            for (int j = from; j < d; j++) {
                wHi[wo + j] = p == 0 ? hi[o + j] : Math.max(wHi[wo + j], hi[o + p * d + j]);
                wLo[wo + j] = p == 0 ? lo[o + j] : Math.min(wLo[wo + j], lo[o + p * d + j]);
            }
        }
        for (int j = from; j < d; j++) {
            wSum[wo + j] = keys[at + j];
        }
        for (int t = 1; t < n; t++) {
            for (int j = from, a = at + t * d; j < d; j++) {
                wSum[wo + j] += keys[a + j];
            }
        }
    }

    /** {@link #of} for dimensions {@code [from, d)}, element by element (also the vector path's tail). */
    static void scalar(float[] keys, int at, int d, int n, float[] hi, float[] lo, float[] sum, int o, int from) {
        for (int j = from; j < d; j++) {
            float v = keys[at + j];
            hi[o + j] = v;
            lo[o + j] = v;
            sum[o + j] = v;
        }
        for (int t = 1; t < n; t++) {
            for (int j = from, a = at + t * d; j < d; j++) {
                float v = keys[a + j];
                hi[o + j] = Math.max(hi[o + j], v);
                lo[o + j] = Math.min(lo[o + j], v);
                sum[o + j] += v;
            }
        }
    }
}
