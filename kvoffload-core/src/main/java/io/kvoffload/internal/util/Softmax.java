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
     * Replaces {@code x[off, off + n)} by {@code exp(x − max)} (as floats) and returns the
     * normaliser {@code (float) (1 / Σ)}: the row's softmax is each element times it (an empty row's
     * normaliser is infinite and multiplies nothing).
     */
    public static float exponentiate(float[] x, int off, int n) {
        float max = Float.NEGATIVE_INFINITY;
        for (int i = off; i < off + n; i++) {
            max = Math.max(max, x[i]);
        }
        double sum = 0;
        for (int i = off; i < off + n; i++) {
            float e = (float) Math.exp(x[i] - max);
            x[i] = e;
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
}
