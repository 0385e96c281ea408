package io.kvoffload.internal.util;

import java.util.Arrays;

/**
 * Exact top-k helpers that allocate their result (oracles, metrics, benches): the selection itself is
 * {@link PartialTopK}'s, the one the decode path uses. Ties are broken by the lower index, so the
 * result is deterministic.
 */
public final class TopK {
    private TopK() {}

    /**
     * The indices of the {@code k} largest scores, in ascending index order (a set).
     *
     * @param k 0..scores.length
     * @throws IllegalArgumentException if {@code k} is out of range or a score is NaN
     */
    public static int[] indices(float[] scores, int k) {
        Checks.notNull("scores", scores);
        Checks.inRange("k", k, 0, scores.length);
        for (int i = 0; i < scores.length; i++) {
            if (Float.isNaN(scores[i])) {
                throw new IllegalArgumentException("scores[" + i + "] is NaN; allowed: finite or infinite values");
            }
        }
        int[] out = new int[k];
        new PartialTopK(scores.length).top(scores, 0, scores.length, k, out, 0);
        return out;
    }

    /** The indices of the {@code k} largest scores, best first (ties: lower index first). */
    public static int[] ranked(float[] scores, int k) {
        int[] idx = indices(scores, k);
        long[] keyed = new long[idx.length];
        for (int i = 0; i < idx.length; i++) {
            keyed[i] = rankKey(scores[idx[i]], idx[i]);
        }
        Arrays.sort(keyed);
        for (int i = 0; i < idx.length; i++) {
            idx[i] = (int) (keyed[i] & 0x7FFFFFFF);
        }
        return idx;
    }

    /**
     * A sort key whose ascending order is descending {@code score}, then ascending {@code index}
     * (order of scores as {@link Float#compare}); the index is its low 31 bits. The float's bits
     * become an order-preserving unsigned int, inverted for "descending", placed above 31 bits of
     * index: 63 bits, so the signed order of the longs is the wanted one.
     */
    public static long rankKey(float score, int index) {
        int bits = Float.floatToIntBits(score);
        int ordered = bits ^ ((bits >> 31) | Integer.MIN_VALUE);
        return ((~ordered & 0xFFFFFFFFL) << 31) | index;
    }

    /**
     * Offers {@code (value, id)} to a best-first list of at most {@code limit} (≥ 1) entries, kept in
     * the caller's arrays without allocating: values in {@code values[0 .. kept)}, ids in
     * {@code ids[base .. base + kept)}. A value enters when the list is not full or it beats the last
     * one (which then drops out); an equal value stays behind those already listed, so offering in
     * ascending id order breaks ties to the lower id.
     *
     * @return the list's new length
     */
    public static int offer(float[] values, int[] ids, int base, int kept, int limit, float value, int id) {
        int j;
        if (kept < limit) {
            j = kept++;
        } else if (value > values[kept - 1]) {
            j = kept - 1;
        } else {
            return kept;
        }
        while (j > 0 && values[j - 1] < value) { // strict: an equal value keeps the earlier entry first
            ids[base + j] = ids[base + j - 1];
            values[j] = values[j - 1];
            j--;
        }
        ids[base + j] = id;
        values[j] = value;
        return kept;
    }
}
