package io.kvoffload.internal.util;

/**
 * The softmax arithmetic every attention and scoring path shares, so that the exact reference, the
 * oracle and the selectors' score estimates weigh tokens identically: float exponentials against
 * the row's maximum, their sum in double, and one float normaliser. Keeping it in one place is what
 * lets a selection of every token reproduce dense attention bit for bit.
 */
public final class Softmax {
    private Softmax() {}

    /**
     * Rows shorter than this stay scalar in {@link #exponentiateRanking} (4,096 blocks of 16 tokens: a
     * 64K-token layer). Below it the exponentials cost little either way, and Vector API code runs
     * about 100× slower and allocates until C2 has compiled it: with short rows (few loop iterations
     * a call) that takes thousands of calls, and again after every deoptimisation of a caller, which
     * an allocation-free decode step cannot afford. Long rows reach C2 within a few calls.
     */
    static final int VECTOR_MIN = 4096;

    /**
     * Whether {@link #exponentiateRanking} uses the Vector API: on x86-64 when the JVM runs with
     * {@code --add-modules jdk.incubator.vector} and its preferred float vector has at least 8 lanes
     * (AVX2), unless the system property {@code kvoffload.vectorSoftmax=false} turns it off.
     */
    public static final boolean VECTORISED = vectorUsable();

    private static boolean vectorUsable() {
        String arch = System.getProperty("os.arch", "");
        if (!(arch.equals("amd64") || arch.equals("x86_64"))
                || !Boolean.parseBoolean(System.getProperty("kvoffload.vectorSoftmax", "true"))) {
            return false;
        }
        if (ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()) {
            // Said once, since nothing fails without it: the selection is the same, only slower.
            org.slf4j.LoggerFactory.getLogger(Softmax.class).warn("jdk.incubator.vector is not in this JVM: the default "
                    + "strategy's exponentials and layer openings run scalar (several milliseconds more a step at 1M tokens on "
                    + "Llama-3-8B's layer); run with --add-modules jdk.incubator.vector (docs/configuration.md)");
            return false;
        }
        try {
            return VectorSoftmax.lanes() >= 8;
        } catch (LinkageError e) { // present but not readable by this module
            return false;
        }
    }

    /**
     * {@link #exponentiate}'s result for a row of estimates that is ranked, not attended, given the row's
     * maximum {@code max} (e.g. from {@link #copyMax} as the row was written, so no pass looks for it):
     * the same exponentials to about 1e-7 relative and a sum within float rounding, but computed 16
     * lanes at a time where {@link #VECTORISED} and the row has at least {@link #VECTOR_MIN} elements
     * (several times faster: {@code Math.exp} stays scalar in C2) and summed in a different order, so
     * not bit-identical to {@link #exponentiate}. Attention and its references keep {@link
     * #exponentiate}, whose results a full selection reproduces bit for bit.
     */
    public static float exponentiateRanking(float[] x, int off, int n, float max) {
        if (VECTORISED && n >= VECTOR_MIN) {
            return VectorSoftmax.exponentiate(x, off, n, max);
        }
        return exponentiate(x, off, n, max);
    }

    /**
     * {@link #exponentiateRanking(float[], int, int, float)} from {@code src[srcOff, srcOff + n)} into {@code
     * dst[dstOff …]}, leaving {@code src} as it is (another array, or the same with the ranges apart).
     */
    public static float exponentiateRanking(float[] src, int srcOff, float[] dst, int dstOff, int n, float max) {
        if (VECTORISED && n >= VECTOR_MIN) {
            return VectorSoftmax.exponentiate(src, srcOff, dst, dstOff, n, max);
        }
        return exponentiate(src, srcOff, dst, dstOff, n, max);
    }

    /**
     * Copies {@code src[srcOff, srcOff + n)} to {@code dst[dstOff …]} and returns the larger of {@code
     * max} and the largest element copied ({@link Math#max}'s order: NaN wins), so that a row written in
     * chunks has its maximum for {@link #exponentiateRanking}. Vectorised where
     * the whole row ({@code rowLength} elements, of which this is a chunk) has at least {@link
     * #VECTOR_MIN}, as its exponentials are: every chunk of a long row, its short last one too (judged by
     * its own length, the last 2,154 of a 100,000-token layer's 6,250 blocks ran the scalar loop, about
     * 9% of a striped step; docs/benchmarks.md), while short rows never run Vector API code before C2
     * has compiled it.
     */
    public static float copyMax(float[] src, int srcOff, float[] dst, int dstOff, int n, float max, int rowLength) {
        if (VECTORISED && rowLength >= VECTOR_MIN) {
            return VectorSoftmax.copyMax(src, srcOff, dst, dstOff, n, max);
        }
        return copyMaxScalar(src, srcOff, dst, dstOff, n, max);
    }

    /** {@link #copyMax} element by element (also the vector path's tail). */
    static float copyMaxScalar(float[] src, int srcOff, float[] dst, int dstOff, int n, float max) {
        for (int i = 0; i < n; i++) {
            float v = src[srcOff + i];
            dst[dstOff + i] = v;
            max = Math.max(max, v);
        }
        return max;
    }

    /**
     * Replaces {@code x[off, off + n)} by {@code exp(x − max)} (as floats) and returns the
     * normaliser {@code (float) (1 / Σ)}: the row's softmax is each element times it (an empty row's
     * normaliser is infinite and multiplies nothing). An element of {@code -∞} becomes exactly 0 and
     * changes neither the maximum nor the sum, as long as one element is finite: how the attention
     * kernels leave a row out for a head. A row of only {@code -∞} gives NaN; callers skip it.
     */
    public static float exponentiate(float[] x, int off, int n) {
        float max = Float.NEGATIVE_INFINITY;
        for (int i = off; i < off + n; i++) {
            max = Math.max(max, x[i]);
        }
        return exponentiate(x, off, n, max);
    }

    /** {@link #exponentiate(float[], int, int)} given the row's maximum {@code max}. */
    static float exponentiate(float[] x, int off, int n, float max) {
        return exponentiate(x, off, x, off, n, max);
    }

    /** The same from {@code src} into {@code dst}, element by element (also the vector path's tail). */
    static float exponentiate(float[] src, int srcOff, float[] dst, int dstOff, int n, float max) {
        double sum = 0;
        for (int i = 0; i < n; i++) {
            float e = (float) Math.exp(src[srcOff + i] - max);
            dst[dstOff + i] = e;
            sum += e;
        }
        return (float) (1.0 / sum);
    }

    /** Dot product of {@code n} floats with four partial sums, so the CPU overlaps the additions. */
    public static float dot(float[] a, int ao, float[] b, int bo, int n) {
        float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        int i = 0;
        for (; i + 3 < n; i += 4) {
            s0 += a[ao + i] * b[bo + i];
            s1 += a[ao + i + 1] * b[bo + i + 1];
            s2 += a[ao + i + 2] * b[bo + i + 2];
            s3 += a[ao + i + 3] * b[bo + i + 3];
        }
        for (; i < n; i++) {
            s0 += a[ao + i] * b[bo + i];
        }
        return (s0 + s1) + (s2 + s3);
    }

    /**
     * The scaled logits of {@code heads} consecutive query heads (one KV head's group) against {@code
     * count} keys: query head {@code g} is {@code q[q0 + g × d, … + d)}, key {@code t} is {@code k[base + t
     * × d, … + d)}, and {@code out[g][outFrom + t] = scale × q_g·k_t}; four heads a pass ({@link #logits4}),
     * then a pair (even and odd dimensions summed apart), then a last head ({@link #dot}). Where {@link
     * #VECTORISED}, a vector of tokens at a time with each lane's sums in the same order
     * ({@code VectorLogits}): the same floats, several times faster (an opening's exact attention,
     * docs/benchmarks.md "Calibrating openings, faster").
     */
    public static void logits(float[] q, int q0, int heads, int d, float[] k, int base, int count, float scale,
            float[][] out, int outFrom) {
        int done = VECTORISED ? VectorLogits.logits(q, q0, heads, d, k, base, count, scale, out, outFrom) : 0;
        int rest = count - done, b0 = base + done * d, o0 = outFrom + done;
        int g = 0;
        for (; g + 3 < heads; g += 4) {
            logits4(q, q0 + g * d, d, k, b0, rest, scale, out, g, o0);
        }
        for (; g + 1 < heads; g += 2) { // GQA groups of 2, 6, 10...: two heads per pass
            float[] p0 = out[g], p1 = out[g + 1];
            int a0 = q0 + g * d, a1 = a0 + d;
            for (int t = 0; t < rest; t++) {
                int b = b0 + t * d;
                float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
                int i = 0;
                for (; i + 1 < d; i += 2) {
                    float k0 = k[b + i], k1 = k[b + i + 1];
                    s0 += q[a0 + i] * k0;
                    s1 += q[a1 + i] * k0;
                    s2 += q[a0 + i + 1] * k1;
                    s3 += q[a1 + i + 1] * k1;
                }
                for (; i < d; i++) {
                    s0 += q[a0 + i] * k[b + i];
                    s1 += q[a1 + i] * k[b + i];
                }
                p0[o0 + t] = scale * (s0 + s2);
                p1[o0 + t] = scale * (s1 + s3);
            }
        }
        for (; g < heads; g++) {
            float[] p = out[g];
            int a = q0 + g * d;
            for (int t = 0; t < rest; t++) {
                p[o0 + t] = scale * dot(q, a, k, b0 + t * d, d);
            }
        }
    }

    /**
     * The scaled logits of four consecutive query heads against {@code count} keys, in one pass: query
     * head {@code j} is {@code q[q0 + j × d, … + d)}, key {@code t} is {@code k[base + t × d, … + d)},
     * and {@code out[row + j][outFrom + t] = scale × q_j·k_t}. Each key is read once for the four heads; the
     * pass is bound by the additions and four independent sums keep the FMA units busy.
     */
    public static void logits4(float[] q, int q0, int d, float[] k, int base, int count, float scale, float[][] out,
            int row, int outFrom) {
        float[] o0 = out[row], o1 = out[row + 1], o2 = out[row + 2], o3 = out[row + 3];
        int a0 = q0, a1 = a0 + d, a2 = a1 + d, a3 = a2 + d;
        for (int t = 0; t < count; t++) {
            int b = base + t * d;
            float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            for (int i = 0; i < d; i++) {
                float kv = k[b + i];
                s0 += q[a0 + i] * kv;
                s1 += q[a1 + i] * kv;
                s2 += q[a2 + i] * kv;
                s3 += q[a3 + i] * kv;
            }
            o0[outFrom + t] = scale * s0;
            o1[outFrom + t] = scale * s1;
            o2[outFrom + t] = scale * s2;
            o3[outFrom + t] = scale * s3;
        }
    }
}
