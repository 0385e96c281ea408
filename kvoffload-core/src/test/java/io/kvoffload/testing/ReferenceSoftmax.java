package io.kvoffload.testing;

/**
 * The softmax reference computations in tests use: in double precision, the maximum subtracted
 * before exponentiating, so it is exact enough to judge the library's float kernels against.
 */
public final class ReferenceSoftmax {
    private ReferenceSoftmax() {}

    /** Turns {@code logits} into softmax weights in place (they sum to 1); returns the array. */
    public static double[] inPlace(double[] logits) {
        double max = Double.NEGATIVE_INFINITY;
        for (double x : logits) {
            max = Math.max(max, x);
        }
        double sum = 0;
        for (int i = 0; i < logits.length; i++) {
            logits[i] = Math.exp(logits[i] - max);
            sum += logits[i];
        }
        for (int i = 0; i < logits.length; i++) {
            logits[i] /= sum;
        }
        return logits;
    }
}
