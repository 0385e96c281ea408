package io.kvoffload.internal.baseline;

import io.kvoffload.strategy.LayerKv;

/**
 * SparQ attention's token selection: approximate every token's attention from the {@code r}
 * largest-magnitude query dimensions (reading {@code r} rows of the dimension-major key copy), then
 * keep the top {@code budget} tokens, the newest {@code localWindow} among them (SparQ's Algorithm 1
 * adds 1 to their score before the top-k). Per query head {@code h}, {@code i} = its {@code r}
 * largest {@code |q_i|} (ties: lower dimension) and {@code ŝ_h = softmax(q[i]·K[:, i]ᵀ /
 * √(d·‖q[i]‖₁/‖q‖₁))}, SparQ's temperature correcting for the dropped dimensions.
 *
 * <p>GQA: SparQ ranks per query head; one token set per layer needs one score, so a token's score is
 * {@code ŝ_h} averaged over the query heads, which approximates the averaged attention weight that
 * attention-mass recall sums.
 *
 * <p>SparQ's default at its 1/8 compression setting is {@code r = headDim / 8}
 * ({@link #DEFAULT_RANK_DIVISOR}). SparQ also blends the mean value vector into the output with the
 * approximate mass of the selected tokens; that changes the attention output, not the selection, and
 * is not modelled here.
 *
 * <p>Index: the whole key cache again, dimension-major (float32); each step reads the distinct
 * {@code (KV head, dimension)} rows its query heads chose ({@link BaselineSelector#lastScoredBytes()}).
 */
public final class SparQSelector extends AbstractSparseQuerySelector {
    /** {@code r = headDim / 8}: SparQ's setting for a 1/8 transfer ratio. */
    public static final int DEFAULT_RANK_DIVISOR = 8;

    /** SparQ with {@code r = headDim / 8}. */
    public SparQSelector(LayerKv kv, int queryHeads, int localWindow) {
        this(kv, queryHeads, Math.max(1, kv.headDim() / DEFAULT_RANK_DIVISOR), localWindow);
    }

    /**
     * @param rank {@code r}, query dimensions kept per query head, 1..headDim
     * @param localWindow newest tokens always kept, 0..2^30
     */
    public SparQSelector(LayerKv kv, int queryHeads, int rank, int localWindow) {
        super(kv, queryHeads, rank, localWindow);
    }

    @Override
    public String name() {
        return "sparq";
    }

    @Override
    int whole(int[] out) {
        return range(out, 0, 0, tokens);
    }

    @Override
    int pick(int from, int to, int k, int[] out, int at, int windowFrom, int windowTo) {
        int n = at + topK.top(scores, from, to, k, out, at);
        return range(out, n, windowFrom, windowTo);
    }
}
