package io.kvoffload.internal.baseline;

import io.kvoffload.internal.util.PartialTopK;
import io.kvoffload.internal.util.Softmax;
import io.kvoffload.internal.util.StampSet;
import io.kvoffload.internal.util.TopK;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.strategy.LayerKv;

/**
 * SparQ's scoring, shared by {@link SparQSelector} and {@link SparFSelector}: the keys are also
 * stored dimension-major ({@code K^T}, one row of {@code tokens} floats per KV head and dimension),
 * so approximating {@code q·k} from the {@code r} largest {@code |q_i|} reads only {@code r} rows.
 *
 * <p>Per query head {@code h}: {@code i_h} = the {@code r} dimensions with the largest {@code |q_i|}
 * (ties: lower dimension); {@code ŝ_h = softmax(q[i_h]·K[:, i_h]ᵀ / √(d · ‖q[i_h]‖₁ / ‖q‖₁))}, SparQ's
 * temperature that corrects for the dropped dimensions. A token's score is {@code ŝ_h} averaged over
 * the query heads (the published method ranks per head; one token set per layer needs one score, and
 * the average approximates the weights attention-mass recall sums). The newest {@code localWindow}
 * tokens are always kept (SparQ's Algorithm 1 adds 1 to their score before the top-k) and count
 * against the budget.
 */
abstract class AbstractSparseQuerySelector extends AbstractSelector {
    final int rank;
    final int localWindow;
    private final float[][] transposed; // per KV head: headDim × tokens
    private final float[] logits;
    private final int[] dims;
    private final float[] dimMagnitude;
    private final StampSet rowsRead;    // the (KV head, dimension) rows this step read
    /** Per token, ŝ averaged over the query heads, for the last scored query. */
    final float[] scores;
    final PartialTopK topK;

    AbstractSparseQuerySelector(LayerKv kv, int queryHeads, int rank, int localWindow) {
        super(kv, queryHeads);
        this.rank = Checks.inRange("rank", rank, 1, headDim);
        this.localWindow = Checks.inRange("localWindow", localWindow, 0, 1 << 30);
        this.transposed = new float[kvHeads][];
        int n = tokens, d = headDim;
        for (int h = 0; h < kvHeads; h++) {
            float[] k = headKeys(kv, h);
            float[] kt = new float[n * d];
            int tile = 64; // tiles keep both the reads and the writes within a few cache lines
            for (int t0 = 0; t0 < n; t0 += tile) {
                int t1 = Math.min(n, t0 + tile);
                for (int i = 0; i < d; i++) {
                    int row = i * n;
                    for (int t = t0; t < t1; t++) {
                        kt[row + t] = k[t * d + i];
                    }
                }
            }
            transposed[h] = kt;
        }
        this.logits = new float[n];
        this.scores = new float[n];
        this.dims = new int[rank];
        this.dimMagnitude = new float[rank];
        this.rowsRead = new StampSet(kvHeads * headDim);
        this.topK = new PartialTopK(n);
    }

    /** Dimensions kept per query head. */
    public final int rank() {
        return rank;
    }

    @Override
    public final int select(float[] query, int budgetTokens, int[] out) {
        checkSelect(query, budgetTokens, out);
        if (budgetTokens >= tokens) {
            lastScoredBytes = 0;
            return whole(out);
        }
        score(query);
        int w = Math.min(localWindow, tokens);
        if (budgetTokens <= w) { // the +1 of Algorithm 1 puts the window first; the budget cuts into it
            return pick(tokens - w, tokens, budgetTokens, out, 0, tokens, tokens);
        }
        return pick(0, tokens - w, budgetTokens - w, out, 0, tokens - w, tokens);
    }

    /**
     * This selector's window inside {@code [from, to)} first (in a pipeline it is the pipeline's, so
     * nothing of it is), then the top of the rest by ŝ.
     */
    @Override
    public final int selectBetween(float[] query, int budgetTokens, int from, int to, int[] out) {
        checkBetween(query, budgetTokens, from, to, out);
        int k = Math.min(budgetTokens, to - from);
        if (k == to - from) {
            lastScoredBytes = 0;
            return pick(from, to, k, out, 0, to, to);
        }
        score(query);
        int w = Math.max(from, Math.min(to, tokens - Math.min(localWindow, tokens)));
        if (k <= to - w) { // the budget cuts into the window, as in select
            return pick(w, to, k, out, 0, to, to);
        }
        return pick(from, w, k - (to - w), out, 0, w, to);
    }

    /** Everything, when the budget covers the layer: no scoring is needed. */
    abstract int whole(int[] out);

    /**
     * Writes the top {@code k} scores of {@code [from, to)} at {@code out[at …]}, then the tokens
     * {@code [windowFrom, windowTo)} (all kept), and returns the end.
     */
    abstract int pick(int from, int to, int k, int[] out, int at, int windowFrom, int windowTo);

    /** Fills {@link #scores} with ŝ averaged over the query heads. */
    final void score(float[] query) {
        int n = tokens, d = headDim;
        java.util.Arrays.fill(scores, 0f);
        rowsRead.clear(0);
        long rows = 0;
        float inv = 1f / queryHeads;
        for (int h = 0; h < queryHeads; h++) {
            int q0 = h * d;
            int kvh = h / groupSize;
            float[] kt = transposed[kvh];
            int kept = topDimensions(query, q0);
            float l1All = 0, l1Kept = 0;
            for (int i = 0; i < d; i++) {
                l1All += Math.abs(query[q0 + i]);
            }
            for (int j = 0; j < kept; j++) {
                l1Kept += dimMagnitude[j];
            }
            for (int j = 0; j < kept; j++) {
                int i = dims[j];
                float qi = query[q0 + i];
                int row = i * n;
                if (j == 0) {
                    for (int t = 0; t < n; t++) {
                        logits[t] = qi * kt[row + t];
                    }
                } else {
                    for (int t = 0; t < n; t++) {
                        logits[t] += qi * kt[row + t];
                    }
                }
                if (rowsRead.add(kvh * d + i)) {
                    rows++;
                }
            }
            // SparQ's temperature: as if the kept dimensions carried the query's whole L1 mass.
            float temperature = l1All > 0 && l1Kept > 0 ? (float) (1.0 / Math.sqrt(d * (double) l1Kept / l1All)) : 1f;
            for (int t = 0; t < n; t++) {
                logits[t] *= temperature;
            }
            float norm = Softmax.exponentiate(logits, 0, n) * inv;
            for (int t = 0; t < n; t++) {
                scores[t] += logits[t] * norm;
            }
        }
        lastScoredBytes = 4L * rows * n;
    }

    /** The {@code rank} dimensions of query head {@code q0} with the largest {@code |q_i|} into {@link #dims}. */
    private int topDimensions(float[] query, int q0) {
        int kept = 0;
        for (int i = 0; i < headDim; i++) { // ties: the lower dimension first
            kept = TopK.offer(dimMagnitude, dims, 0, kept, rank, Math.abs(query[q0 + i]), i);
        }
        return kept;
    }

    @Override
    public final int maxSelected(int budgetTokens) {
        checkBudget(budgetTokens);
        return Math.min(budgetTokens, tokens);
    }

    /** {@code K^T} as float32: the whole key cache once more, dimension-major. */
    @Override
    public final long indexBytes() {
        return 4L * tokens * kvHeads * headDim;
    }
}
