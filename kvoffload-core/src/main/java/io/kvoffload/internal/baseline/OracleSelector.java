package io.kvoffload.internal.baseline;

import io.kvoffload.internal.util.PartialTopK;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.internal.util.Softmax;
import io.kvoffload.strategy.LayerKv;

/**
 * "No-cluster" oracle: the exact top-k tokens by full attention, the upper bound on what any
 * selector can recall for a budget. For every query head it computes the softmax of
 * {@code q·k/√d} over all keys (GQA: query head {@code h} reads KV head {@code h / groupSize}) and
 * averages the weights over the query heads, exactly the per-token weight that
 * {@link io.kvoffload.attention.ExactAttention} returns and attention-mass recall sums; the
 * {@code budget} tokens with the largest averaged weight win (ties: lower position).
 *
 * <p>Its index is the whole key cache (float32), and every step reads all of it: the oracle is a
 * quality reference, not a practical offloading policy. Keys of a {@link
 * io.kvoffload.strategy.DenseLayerKv} are read in place.
 */
public final class OracleSelector extends AbstractSelector {
    private final float[][] keys;
    private final float[] weights;
    private final float[][] logits; // up to four query heads' logits per pass
    private final PartialTopK topK;

    /**
     * @param kv the layer's keys (values are not read)
     * @param queryHeads a positive multiple of {@code kv.kvHeads()}
     */
    public OracleSelector(LayerKv kv, int queryHeads) {
        super(kv, queryHeads);
        this.keys = new float[kvHeads][];
        for (int h = 0; h < kvHeads; h++) {
            keys[h] = headKeys(kv, h);
        }
        this.weights = new float[tokens];
        this.logits = new float[Math.min(4, groupSize)][tokens];
        this.topK = new PartialTopK(tokens);
    }

    @Override
    public String name() {
        return "oracle";
    }

    @Override
    public int select(float[] query, int budgetTokens, int[] out) {
        checkSelect(query, budgetTokens, out);
        weights(query, weights);
        lastScoredBytes = indexBytes();
        return topK.top(weights, 0, tokens, Math.min(budgetTokens, tokens), out, 0);
    }

    /** The exact top {@code budgetTokens} of {@code [from, to)}. */
    @Override
    public int selectBetween(float[] query, int budgetTokens, int from, int to, int[] out) {
        checkBetween(query, budgetTokens, from, to, out);
        weights(query, weights);
        lastScoredBytes = indexBytes();
        return topK.top(weights, from, to, Math.min(budgetTokens, to - from), out, 0);
    }

    /**
     * The exact per-token attention weights of {@code query}, averaged over the query heads (they sum
     * to 1), into {@code dst} (at least {@link #tokens()} long). Allocation-free.
     */
    public void weights(float[] query, float[] dst) {
        Checks.queryRows(query, queryHeads, headDim);
        Checks.capacity("dst", dst.length, tokens);
        java.util.Arrays.fill(dst, 0, tokens, 0f);
        float inv = 1f / queryHeads;
        int n = tokens, d = headDim;
        int h0 = 0;
        while (h0 < queryHeads) {
            // Up to four query heads of one KV head per pass over its keys: the pass is bound by
            // reading the keys, so each key is read once for four heads instead of four times.
            int heads = Math.min(4, groupSize - h0 % groupSize);
            float[] k = keys[h0 / groupSize];
            if (heads == 4) {
                Softmax.logits4(query, h0 * d, d, k, 0, n, scale, logits, 0, 0);
            } else {
                for (int j = 0; j < heads; j++) {
                    float[] row = logits[j];
                    int q0 = (h0 + j) * d;
                    for (int t = 0; t < n; t++) {
                        row[t] = scale * dot(query, q0, k, t * d, d);
                    }
                }
            }
            for (int j = 0; j < heads; j++) {
                float[] row = logits[j];
                // The same arithmetic as ExactAttention (float weights, double sum, one float normaliser).
                float norm = Softmax.exponentiate(row, 0, n);
                for (int t = 0; t < n; t++) {
                    dst[t] += (row[t] * norm) * inv;
                }
            }
            h0 += heads;
        }
    }

    @Override
    public int maxSelected(int budgetTokens) {
        checkBudget(budgetTokens);
        return Math.min(budgetTokens, tokens);
    }

    /** The key cache the oracle scores against: {@code 4 × tokens × kvHeads × headDim}. */
    @Override
    public long indexBytes() {
        return 4L * tokens * kvHeads * headDim;
    }
}
