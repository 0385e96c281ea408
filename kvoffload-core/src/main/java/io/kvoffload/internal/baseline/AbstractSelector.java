package io.kvoffload.internal.baseline;

import io.kvoffload.internal.util.Softmax;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.strategy.LayerKv;

/**
 * What every baseline shares: the layer's shape, the GQA group query, argument checks for
 * {@link #select} that build their message only when they fail (so a valid call allocates nothing),
 * and access to one head's keys.
 */
abstract class AbstractSelector implements BaselineSelector {
    final int tokens;
    final int kvHeads;
    final int headDim;
    final int queryHeads;
    final int groupSize;
    /** {@code 1/√headDim}, the softmax scale of a logit. */
    final float scale;
    /** {@code kvHeads × headDim}: per KV head, the sum of the query heads that read it. */
    final float[] groupQuery;
    long lastScoredBytes;

    AbstractSelector(LayerKv kv, int queryHeads) {
        Checks.notNull("kv", kv);
        Checks.positive("kv.tokens()", kv.tokens());
        Checks.queryHeads(queryHeads, kv.kvHeads());
        this.tokens = kv.tokens();
        this.kvHeads = kv.kvHeads();
        this.headDim = kv.headDim();
        this.queryHeads = queryHeads;
        this.groupSize = queryHeads / kvHeads;
        this.scale = (float) (1.0 / Math.sqrt(headDim));
        this.groupQuery = new float[kvHeads * headDim];
    }

    @Override
    public final int tokens() {
        return tokens;
    }

    /** Query heads the selector expects in a query. */
    public final int queryHeads() {
        return queryHeads;
    }

    @Override
    public final long lastScoredBytes() {
        return lastScoredBytes;
    }

    /**
     * Checks the arguments of {@link #select}: a query of {@code queryHeads × headDim} finite floats,
     * a positive budget and an output array of at least {@link #maxSelected} positions.
     */
    final void checkSelect(float[] query, int budgetTokens, int[] out) {
        BaselineSelector.checkSelect(this, queryHeads, headDim, query, budgetTokens, out);
    }

    /**
     * Selects for a pipeline that already attends the tokens before {@code from} (its sinks) and from
     * {@code to} on (its window): exactly {@code min(budgetTokens, to − from)} distinct positions of
     * {@code [from, to)}, chosen by this baseline's scoring, so that every strategy attends the same
     * rows (issue #16: sinks and window inside the budget). {@link #select} keeps the baseline's own
     * sinks and window inside its budget instead; in a pipeline those overlap the resident rows, and
     * the baseline would attend up to 38% fewer rows than the budget. The baseline's own always-kept
     * tokens inside the range (PQCache's and ClusterKV's sinks, InfLLM's initial tokens) come first;
     * a unit (a page, a block) that does not fit whole is cut, its later tokens left out.
     *
     * @param out room for at least {@code min(budgetTokens, to − from)} positions
     * @return how many positions were written: {@code min(budgetTokens, to − from)}, fewer only where
     *     NaN scores would have to be chosen
     */
    public abstract int selectBetween(float[] query, int budgetTokens, int from, int to, int[] out);

    /** Checks the arguments of {@link #selectBetween} ({@link BaselineSelector#checkBetween}). */
    final void checkBetween(float[] query, int budgetTokens, int from, int to, int[] out) {
        BaselineSelector.checkBetween(this, queryHeads, headDim, query, budgetTokens, from, to, out);
    }

    /**
     * Writes the tokens of {@code [a, b) ∩ [from, to)} at {@code out[at …]}, stopping at {@code
     * limit}; returns the new end. A baseline's always-kept tokens inside {@link #selectBetween}'s range.
     */
    static int keep(int[] out, int at, int limit, int a, int b, int from, int to) {
        int lo = Math.max(a, from), hi = Math.min(b, to);
        return range(out, at, lo, Math.max(lo, Math.min(hi, lo + limit - at)));
    }

    static void checkBudget(int budgetTokens) {
        Checks.positive("budgetTokens", budgetTokens);
    }

    /** Checks a {@code tokenScores(query, dst)} call: a query of this layer's heads, room for every token. */
    final void checkTokenScores(float[] query, float[] dst) {
        Checks.queryRows(query, queryHeads, headDim);
        Checks.capacity("dst", dst.length, tokens);
    }

    /** Copies the scored tokens {@code scores[from, to)} into {@code dst} and zeroes every other token. */
    static void copyScores(float[] scores, float[] dst, int from, int to) {
        java.util.Arrays.fill(dst, 0f);
        System.arraycopy(scores, from, dst, from, to - from);
    }

    /** Sums the query heads of each KV head into {@link #groupQuery}. */
    final void sumGroups(float[] query) {
        java.util.Arrays.fill(groupQuery, 0f);
        for (int h = 0; h < queryHeads; h++) {
            int dst = (h / groupSize) * headDim;
            int src = h * headDim;
            for (int i = 0; i < headDim; i++) {
                groupQuery[dst + i] += query[src + i];
            }
        }
    }

    /**
     * One KV head's keys, {@code tokens × headDim} token-major: the array itself for a
     * {@link DenseLayerKv} (read in place, never written), otherwise a copy. Every key must be finite,
     * since a NaN would make every score that touches it meaningless.
     */
    static float[] headKeys(LayerKv kv, int head) {
        int n = kv.tokens(), d = kv.headDim();
        long size = (long) n * d;
        if (size > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("tokens × headDim = " + size + " does not fit one array; allowed: up to "
                    + (Integer.MAX_VALUE - 8));
        }
        float[] keys;
        if (kv instanceof DenseLayerKv dense) {
            keys = dense.keyArray(head);
        } else {
            keys = new float[(int) size];
            int chunk = Math.max(1, (1 << 16) / d);
            for (int t = 0; t < n; t += chunk) {
                int c = Math.min(chunk, n - t);
                kv.keys(head, t, c, keys, t * d);
            }
        }
        for (int i = 0; i < keys.length; i++) {
            if (!Float.isFinite(keys[i])) {
                throw new IllegalArgumentException("key of token " + (i / d) + ", KV head " + head + ", dimension " + (i % d)
                        + " = " + keys[i] + "; allowed: finite values");
            }
        }
        return keys;
    }

    static float dot(float[] a, int ao, float[] b, int bo, int n) {
        return Softmax.dot(a, ao, b, bo, n);
    }

    /** Writes {@code from, from + 1, …, to − 1} into {@code out} at {@code at}; returns the new end. */
    static int range(int[] out, int at, int from, int to) {
        for (int t = from; t < to; t++) {
            out[at++] = t;
        }
        return at;
    }

    @Override
    public String toString() {
        return name() + "{tokens=" + tokens + ", kvHeads=" + kvHeads + ", headDim=" + headDim + ", queryHeads="
                + queryHeads + "}";
    }
}
