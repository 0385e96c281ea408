package io.kvoffload.internal.util;

/**
 * Exact top-k over a range of a score array without a sort and without allocating: quickselect on a
 * preallocated copy finds the k-th largest score (expected linear time), one pass counts the scores
 * above it and a second writes the winners. Ties at the threshold go to the lower index, like
 * {@link TopK}. NaN scores rank below everything.
 */
public final class PartialTopK {
    private final float[] scratch;

    /** @param capacity the longest range ever asked for */
    public PartialTopK(int capacity) {
        Checks.inRange("capacity", capacity, 0, Integer.MAX_VALUE - 8);
        this.scratch = new float[Math.max(1, capacity)];
    }

    /**
     * Writes the indices {@code i ∈ [from, to)} of the {@code k} largest {@code scores[i]} into
     * {@code out[outOffset …]} in ascending order and returns how many were written: {@code min(k,
     * to − from)}, fewer only when NaN scores would have to be chosen.
     */
    public int top(float[] scores, int from, int to, int k, int[] out, int outOffset) {
        int len = to - from;
        if (k <= 0 || len <= 0) {
            return 0;
        }
        if (k >= len) {
            for (int t = from; t < to; t++) {
                out[outOffset + t - from] = t;
            }
            return len;
        }
        float threshold = kthLargest(scores, from, to, k);
        int above = 0;
        for (int i = from; i < to; i++) {
            if (scores[i] > threshold) {
                above++;
            }
        }
        int ties = k - above; // scores equal to the threshold that make the cut, lowest index first
        int n = 0;
        for (int i = from; i < to && n < k; i++) {
            float s = scores[i];
            if (s > threshold || (s == threshold && ties-- > 0)) {
                out[outOffset + n++] = i;
            }
        }
        return n;
    }

    /** The {@code k}-th largest of {@code scores[from, to)} (1-based; NaN counts as −∞). */
    public float kthLargest(float[] scores, int from, int to, int k) {
        int len = to - from;
        if (k < 1 || k > len || len > scratch.length) {
            throw new IllegalArgumentException("k = " + k + " over a range of " + len + " (capacity " + scratch.length
                    + ") is out of range; allowed: 1.." + Math.min(len, scratch.length));
        }
        float[] a = scratch;
        for (int i = 0; i < len; i++) {
            float s = scores[from + i];
            a[i] = s != s ? Float.NEGATIVE_INFINITY : s;
        }
        return TopK.kthLargestInPlace(a, len, k);
    }
}
