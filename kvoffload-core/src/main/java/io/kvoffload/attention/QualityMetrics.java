package io.kvoffload.attention;

import io.kvoffload.internal.util.TopK;
import io.kvoffload.internal.util.Checks;

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
