package io.kvoffload.attention;

import io.kvoffload.KvView;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.internal.util.TopK;
import java.util.BitSet;

/**
 * How good a selected token set is, judged against exact attention ({@link ExactAttention}):
 * attention-mass recall, top-k recall and the relative error of the attention output. These are
 * the metrics the papers use to compare selectors (Quest, InfLLM, PQCache, ClusterKV, Swarm).
 */
public final class QualityMetrics {
    private QualityMetrics() {}

    /**
     * Attention-mass recall: the share of the exact attention weight that falls on the selected
     * tokens, {@code Σ_{t ∈ selected} w_t / Σ_t w_t}. 1 for the full set; duplicates count once.
     *
     * @param weights exact per-token weights ({@link ExactAttention.Result#weights()}), non-negative
     * @param selected token ids in {@code [0, weights.length)}
     */
    public static double attentionMassRecall(float[] weights, int[] selected) {
        Checks.notNull("weights", weights);
        double total = 0;
        for (float w : weights) {
            if (!(w >= 0) || Float.isInfinite(w)) {
                throw new IllegalArgumentException("weights contains " + w + "; allowed: finite values ≥ 0");
            }
            total += w;
        }
        if (total == 0) {
            throw new IllegalArgumentException("weights sum to 0; allowed: a positive total");
        }
        double hit = 0;
        for (int t : ExactAttention.distinct(selected, weights.length)) {
            hit += weights[t];
        }
        return hit / total;
    }

    /**
     * Per-head attention-mass recall of a view whose rows may hold only some KV heads
     * ({@link KvView#partialRows()}): the mean over query heads {@code h} of the share of head
     * {@code h}'s exact attention weight that falls on the rows it can attend, those whose
     * {@link KvView#headMask(int)} holds its KV head {@code h / groupSize}:
     * {@code mean_h Σ_{r : mask(r) ∋ h/groupSize} headWeights[h][position(r)] / Σ_t headWeights[h][t]}.
     * For a view without partial rows every row counts for every head, and the result equals
     * {@link #attentionMassRecall(float[], int[])} of the heads' mean weights and the view's positions
     * up to float rounding (the mean of shares is the share of the mean when each head's weights sum
     * to 1, as {@link ExactAttention#headWeights} do). This is what the per-head kernels
     * ({@link DecodeAttention}, {@link io.kvoffload.SparseAttention}) attend.
     *
     * @param headWeights exact per-query-head weights, {@code [queryHeads][tokens]}
     *     ({@link ExactAttention#headWeights}); finite, non-negative, each row with a positive sum
     * @param groupSize query heads per KV head: the view's {@link io.kvoffload.KvShape#groupSize()}
     * @param view an awaited, open view of the same layer whose positions are in {@code [0, tokens)}
     * @throws IllegalArgumentException if {@code headWeights} does not hold the view's query heads
     *     (rows of one length, valid weights), {@code groupSize} is not the view's, or a position of
     *     the view lies outside the weights
     * @throws IllegalStateException if the view is not awaited or is closed
     */
    public static double attentionMassRecall(float[][] headWeights, int groupSize, KvView view) {
        Checks.notNull("view", view);
        Checks.notNull("headWeights", headWeights);
        if (headWeights.length != view.shape().queryHeads() || groupSize != view.shape().groupSize()) {
            throw new IllegalArgumentException("headWeights.length = " + headWeights.length + ", groupSize = "
                    + groupSize + "; allowed: the view's queryHeads = " + view.shape().queryHeads() + " and groupSize = "
                    + view.shape().groupSize());
        }
        int rows = view.tokenCount();
        int[] positions = new int[rows];
        long[] masks = new long[rows];
        boolean partial = view.partialRows();
        for (int r = 0; r < rows; r++) {
            positions[r] = view.position(r);
            masks[r] = partial ? view.headMask(r) : -1L;
        }
        return attentionMassRecall(headWeights, groupSize, positions, masks);
    }

    /**
     * Per-head attention-mass recall of a per-head selection given as arrays: position
     * {@code positions[i]} is attended by the KV heads of {@code headMasks[i]} (bit {@code h} for KV
     * head {@code h}, -1 for every head; bits at or above the KV head count are ignored). The mean
     * over query heads {@code h} of {@code Σ_{t attended by KV head h/groupSize} headWeights[h][t] /
     * Σ_t headWeights[h][t]}; a position listed twice counts once per head (its masks are united).
     * See {@link #attentionMassRecall(float[][], int, KvView)}.
     *
     * @param headWeights {@code [queryHeads][tokens]}, finite, non-negative, each row with a positive sum
     * @param groupSize query heads per KV head, dividing {@code headWeights.length}
     * @param positions token ids in {@code [0, tokens)}
     * @param headMasks one mask per position, or null for every head on every position
     * @throws IllegalArgumentException on bad weights, group size, positions or masks (named, with the value
     *     and what is allowed); a mask other than -1 needs at most 64 KV heads
     */
    public static double attentionMassRecall(float[][] headWeights, int groupSize, int[] positions, long[] headMasks) {
        Checks.notNull("headWeights", headWeights);
        Checks.notNull("positions", positions);
        if (headWeights.length == 0) {
            throw new IllegalArgumentException("headWeights.length = 0; allowed: one row per query head, at least one");
        }
        if (groupSize < 1 || headWeights.length % groupSize != 0) {
            throw new IllegalArgumentException("groupSize = " + groupSize + " with headWeights.length = "
                    + headWeights.length + "; allowed: a group size ≥ 1 that divides the query heads");
        }
        if (headMasks != null && headMasks.length != positions.length) {
            throw new IllegalArgumentException("headMasks.length = " + headMasks.length
                    + "; allowed: positions.length = " + positions.length + " (or null for every head)");
        }
        int kvHeads = headWeights.length / groupSize;
        int tokens = headWeights[0] == null ? 0 : headWeights[0].length;
        Checks.rowLengths("headWeights", headWeights, tokens, "headWeights[0].length");
        BitSet[] attended = new BitSet[kvHeads];
        for (int kvh = 0; kvh < kvHeads; kvh++) {
            attended[kvh] = new BitSet(tokens);
        }
        for (int i = 0; i < positions.length; i++) {
            int t = positions[i];
            if (t < 0 || t >= tokens) {
                throw new IllegalArgumentException("positions[" + i + "] = " + t + " is out of range; allowed: 0.."
                        + (tokens - 1) + " (the tokens of headWeights)");
            }
            long mask = headMasks == null ? -1L : headMasks[i];
            if (mask != -1L && kvHeads > Long.SIZE) {
                throw new IllegalArgumentException("headMasks[" + i + "] = 0x" + Long.toHexString(mask) + " with "
                        + kvHeads + " KV heads; allowed: -1 (every head) beyond " + Long.SIZE + " KV heads");
            }
            for (int kvh = 0; kvh < kvHeads; kvh++) {
                if (mask == -1L || (mask >>> kvh & 1L) != 0) {
                    attended[kvh].set(t);
                }
            }
        }
        double sum = 0;
        for (int h = 0; h < headWeights.length; h++) {
            float[] w = headWeights[h];
            double total = 0;
            for (float x : w) {
                if (!(x >= 0) || Float.isInfinite(x)) {
                    throw new IllegalArgumentException("headWeights[" + h + "] contains " + x
                            + "; allowed: finite values ≥ 0");
                }
                total += x;
            }
            if (total == 0) {
                throw new IllegalArgumentException("headWeights[" + h + "] sums to 0; allowed: a positive total");
            }
            double hit = 0;
            BitSet a = attended[h / groupSize];
            for (int t = a.nextSetBit(0); t >= 0; t = a.nextSetBit(t + 1)) {
                hit += w[t];
            }
            sum += hit / total;
        }
        return sum / headWeights.length;
    }

    /**
     * Top-k recall: the fraction of the {@code k} most attended tokens (ties: lower index) that the
     * selection contains.
     *
     * @param k 1..weights.length
     */
    public static double topKRecall(float[] weights, int[] selected, int k) {
        Checks.notNull("weights", weights);
        Checks.inRange("k", k, 1, weights.length);
        int[] chosen = ExactAttention.distinct(selected, weights.length);
        int[] top = TopK.indices(weights, k);
        int hit = 0, i = 0, j = 0;
        while (i < top.length && j < chosen.length) { // both ascending
            if (top[i] == chosen[j]) {
                hit++;
                i++;
                j++;
            } else if (top[i] < chosen[j]) {
                i++;
            } else {
                j++;
            }
        }
        return hit / (double) k;
    }

    /**
     * Relative error of an approximate attention output: {@code ‖approx − exact‖₂ / ‖exact‖₂}
     * over all heads. 0 when they are equal; when the exact output is zero the result is 0 for an
     * equal approximation and +∞ otherwise.
     */
    public static double relativeError(float[] exact, float[] approx) {
        Checks.notNull("exact", exact);
        Checks.notNull("approx", approx);
        if (exact.length != approx.length) {
            throw new IllegalArgumentException("approx.length = " + approx.length + " must equal exact.length = " + exact.length);
        }
        double diff = 0, norm = 0;
        for (int i = 0; i < exact.length; i++) {
            double d = (double) approx[i] - exact[i];
            diff += d * d;
            norm += (double) exact[i] * exact[i];
        }
        if (norm == 0) {
            return diff == 0 ? 0 : Double.POSITIVE_INFINITY;
        }
        return Math.sqrt(diff / norm);
    }
}
