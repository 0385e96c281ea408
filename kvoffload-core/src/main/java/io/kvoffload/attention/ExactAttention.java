package io.kvoffload.attention;

import io.kvoffload.internal.util.Softmax;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.strategy.LayerKv;
import io.kvoffload.KvShape;
import io.kvoffload.internal.util.Checks;
import java.util.BitSet;

/**
 * Dense reference attention: softmax of {@code q·k/√headDim} over every key of a layer, per query
 * head, with grouped-query attention (query head {@code h} reads KV head {@code h / groupSize}).
 * It is the ground truth selectors are measured against, written for clarity and streamed in
 * chunks so it also runs over a lazily generated million-token layer.
 *
 * <p>A query is {@code queryHeads × headDim} floats, head after head.
 */
public final class ExactAttention {
    private static final int CHUNK_BYTES = 1 << 18;

    private final int queryHeads;
    private final int kvHeads;
    private final int headDim;
    private final int groupSize;
    private final float scale;

    /**
     * @param queryHeads a positive multiple of {@code kvHeads}
     * @param kvHeads 1..1024
     * @param headDim 1..16384
     */
    public ExactAttention(int queryHeads, int kvHeads, int headDim) {
        Checks.inRange("kvHeads", kvHeads, 1, 1024);
        Checks.inRange("headDim", headDim, 1, 16384);
        Checks.queryHeads(queryHeads, kvHeads);
        this.queryHeads = queryHeads;
        this.kvHeads = kvHeads;
        this.headDim = headDim;
        this.groupSize = queryHeads / kvHeads;
        this.scale = (float) (1.0 / Math.sqrt(headDim));
    }

    /** Attention for a model of this shape. */
    public static ExactAttention of(KvShape shape) {
        return new ExactAttention(shape.queryHeads(), shape.kvHeads(), shape.headDim());
    }

    public int queryHeads() { return queryHeads; }

    /**
     * Dense attention of one query.
     *
     * @param weights per token, the softmax weight averaged over the query heads (sums to 1): the
     *     share of the query's attention a token receives, what "attention mass" means everywhere
     * @param output the attention output, {@code queryHeads × headDim}, or {@code null} if the layer
     *     holds no values
     */
    public record Result(float[] weights, float[] output) {
        /** Lengths and the first values, not array identities. */
        @Override
        public String toString() {
            return "Result{weights=" + head(weights) + ", output=" + head(output) + "}";
        }

        private static String head(float[] a) {
            if (a == null) {
                return "null";
            }
            float[] first = java.util.Arrays.copyOf(a, Math.min(a.length, 8));
            String s = java.util.Arrays.toString(first);
            return a.length + " values " + (a.length > first.length ? s.substring(0, s.length() - 1) + ", ...]" : s);
        }
    }

    /** Per-token attention weights averaged over the query heads; they sum to 1. */
    public float[] weights(LayerKv kv, float[] query) {
        return run(kv, query, false, null).weights();
    }

    /**
     * Per-query-head attention weights: row {@code h} is query head {@code h}'s softmax over every
     * token (sums to 1). Their mean over the heads is {@link #weights}.
     */
    public float[][] headWeights(LayerKv kv, float[] query) {
        checkLayer(kv, query);
        float[][] rows = new float[queryHeads][];
        run(kv, query, false, rows);
        return rows;
    }

    /** Weights and, when the layer has values, the dense output. */
    public Result compute(LayerKv kv, float[] query) {
        return run(kv, query, kv.hasValues(), null);
    }

    /**
     * The attention output restricted to {@code selected}: softmax over the selected keys only,
     * what a sparse kernel computes from the fetched entries. Duplicates count once.
     *
     * @param selected token ids, each in {@code [0, kv.tokens())}, at least one
     */
    public float[] sparseOutput(LayerKv kv, float[] query, int[] selected) {
        Checks.notNull("selected", selected);
        if (selected.length == 0) {
            throw new IllegalArgumentException("selected is empty; allowed: at least one token");
        }
        int[][] perHead = new int[kvHeads][];
        java.util.Arrays.fill(perHead, selected);
        return sparseOutput(kv, query, perHead);
    }

    /**
     * The attention output when each KV head attends its own token set (per-head selection): the
     * query heads of KV head {@code h} take the softmax over {@code selected[h]} only. With the same
     * set for every head it equals {@link #sparseOutput(LayerKv, float[], int[])} bit for bit.
     *
     * @param selected one array of token ids per KV head, each id in {@code [0, kv.tokens())},
     *     each array at least one id; duplicates count once
     */
    public float[] sparseOutput(LayerKv kv, float[] query, int[][] selected) {
        checkLayer(kv, query);
        if (!kv.hasValues()) {
            throw new IllegalStateException("the layer holds keys only; an output needs values");
        }
        Checks.notNull("selected", selected);
        if (selected.length != kvHeads) {
            throw new IllegalArgumentException("selected.length = " + selected.length + " must be kvHeads = " + kvHeads);
        }
        float[] out = new float[queryHeads * headDim];
        float[] k = new float[headDim];
        float[] v = new float[headDim];
        float[][] one = new float[groupSize][1];
        for (int kvh = 0; kvh < kvHeads; kvh++) {
            int[] ids = distinct(selected[kvh], kv.tokens());
            if (ids.length == 0) {
                throw new IllegalArgumentException("selected[" + kvh + "] is empty; allowed: at least one token per KV head");
            }
            float[] logits = new float[ids.length * groupSize];
            for (int i = 0; i < ids.length; i++) {
                kv.keys(kvh, ids[i], 1, k, 0);
                logits(query, kvh * groupSize * headDim, k, 0, 1, one, 0); // the dense path's arithmetic
                for (int g = 0; g < groupSize; g++) {
                    logits[g * ids.length + i] = one[g][0];
                }
            }
            float[] norms = new float[groupSize];
            for (int g = 0; g < groupSize; g++) {
                // Same arithmetic as the dense path, so the full set reproduces it bit for bit.
                norms[g] = Softmax.exponentiate(logits, g * ids.length, ids.length);
            }
            for (int i = 0; i < ids.length; i++) {
                kv.values(kvh, ids[i], 1, v, 0);
                for (int g = 0; g < groupSize; g++) {
                    float w = logits[g * ids.length + i] * norms[g];
                    int o = (kvh * groupSize + g) * headDim;
                    for (int d = 0; d < headDim; d++) {
                        out[o + d] += w * v[d];
                    }
                }
            }
        }
        return out;
    }

    /** Dense attention; when {@code headRows} is given, each query head's weights are kept there. */
    private Result run(LayerKv kv, float[] query, boolean withOutput, float[][] headRows) {
        checkLayer(kv, query);
        int n = kv.tokens();
        float[] weights = new float[n];
        float[] output = withOutput ? new float[queryHeads * headDim] : null;
        int chunkTokens = Math.max(1, CHUNK_BYTES / (4 * headDim));
        float[] chunk = new float[chunkTokens * headDim];
        // Every head's rows kept anyway and keys not in memory (a stored layer): all heads' logits range by
        // range, so each range of keys is read once for all KV heads, not once a head.
        float[][][] all = null;
        if (headRows != null && !(kv instanceof DenseLayerKv)) {
            HeadLogits h = new HeadLogits(n, query);
            h.range(kv, 0, n);
            all = h.rows;
        }
        float[][] logits = all == null ? new float[groupSize][n] : null;
        float inv = 1f / queryHeads;
        for (int kvh = 0; kvh < kvHeads; kvh++) {
            int q0 = kvh * groupSize * headDim;
            for (int from = 0; all == null && from < n; from += chunkTokens) {
                int count = Math.min(chunkTokens, n - from);
                float[] src;
                int base;
                if (kv instanceof DenseLayerKv dense) {
                    src = dense.keyArray(kvh); // no copy: the array is read in place
                    base = from * headDim;
                } else {
                    kv.keys(kvh, from, count, chunk, 0);
                    src = chunk;
                    base = 0;
                }
                logits(query, q0, src, base, count, logits, from);
            }
            float[][] rows = all == null ? logits : all[kvh];
            for (int g = 0; g < groupSize; g++) {
                float[] row = rows[g];
                float norm = Softmax.exponentiate(row, 0, n);
                for (int t = 0; t < n; t++) {
                    row[t] *= norm;
                    weights[t] += row[t] * inv;
                }
                if (headRows != null) {
                    headRows[kvh * groupSize + g] = all == null ? row.clone() : row;
                }
            }
            if (withOutput) {
                accumulate(kv, kvh, rows, output, chunk, chunkTokens);
            }
        }
        return new Result(weights, output);
    }

    /**
     * Every query head's attention weights for {@code query} over a layer of {@code tokens} tokens whose
     * keys a caller reads range by range anyway: it hands each range to {@link HeadLogits#range} in order,
     * and {@link HeadLogits#weights} then gives what {@link #headWeights} gives, bit for bit, without a
     * second pass over the keys (a stored layer's opening summarises it and weighs its candidates with
     * one read).
     *
     * @param tokens the layer's tokens, 1..2^31 − 9
     * @param query {@code queryHeads × headDim} floats (copied)
     */
    public HeadLogits headLogits(int tokens, float[] query) {
        Checks.inRange("tokens", tokens, 1, Integer.MAX_VALUE - 8);
        Checks.notNull("query", query);
        Checks.queryRows(query, queryHeads, headDim);
        return new HeadLogits(tokens, query.clone());
    }

    /** Every query head's logits over a layer, taken range by range ({@link #headLogits}). Not thread-safe. */
    public final class HeadLogits {
        private final int tokens;
        private final float[] query;
        private final float[][][] rows; // [KV head][member of its group][token]
        private final int chunkTokens = Math.max(1, CHUNK_BYTES / (4 * headDim));
        private final float[] chunk = new float[chunkTokens * headDim];
        private int next;              // the first token not taken yet
        private boolean normalised;

        private HeadLogits(int tokens, float[] query) {
            this.tokens = tokens;
            this.query = query;
            this.rows = new float[kvHeads][groupSize][tokens];
        }

        /**
         * The logits of tokens {@code [from, to)}, every KV head's keys read chunk by chunk from {@code kv}.
         *
         * @throws IllegalArgumentException unless {@code from} is the first token not taken yet, {@code to}
         *     lies between it and the layer's end, and {@code kv} has the shape and at least {@code to} tokens
         */
        public void range(LayerKv kv, int from, int to) {
            Checks.notNull("kv", kv);
            if (from != next || to < from || to > tokens) {
                throw new IllegalArgumentException("range [" + from + ", " + to + "); allowed: from the next token not taken, "
                        + next + ", up to the layer's " + tokens);
            }
            if (kv.kvHeads() != kvHeads || kv.headDim() != headDim || kv.tokens() < to) {
                throw new IllegalArgumentException("kv of " + kv.kvHeads() + " KV heads × " + kv.headDim() + ", "
                        + kv.tokens() + " tokens; allowed: " + kvHeads + " × " + headDim + " with at least " + to);
            }
            for (int at = from; at < to; at += chunkTokens) {
                int count = Math.min(chunkTokens, to - at);
                for (int kvh = 0; kvh < kvHeads; kvh++) {
                    if (kv instanceof DenseLayerKv dense) { // no copy: the array is read in place
                        logits(query, kvh * groupSize * headDim, dense.keyArray(kvh), at * headDim, count, rows[kvh], at);
                    } else {
                        kv.keys(kvh, at, count, chunk, 0);
                        logits(query, kvh * groupSize * headDim, chunk, 0, count, rows[kvh], at);
                    }
                }
            }
            next = to;
        }

        /**
         * Row {@code h}: query head {@code h}'s softmax over every token (sums to 1), once every token was
         * taken; the rows are this object's own, normalised in place on the first call.
         *
         * @throws IllegalStateException while tokens are still to be taken
         */
        public float[][] weights() {
            if (next != tokens) {
                throw new IllegalStateException("tokens [" + next + ", " + tokens + ") not taken yet");
            }
            float[][] out = new float[queryHeads][];
            for (int kvh = 0; kvh < kvHeads; kvh++) {
                for (int g = 0; g < groupSize; g++) {
                    float[] row = rows[kvh][g];
                    if (!normalised) {
                        float norm = Softmax.exponentiate(row, 0, tokens);
                        for (int t = 0; t < tokens; t++) {
                            row[t] *= norm;
                        }
                    }
                    out[kvh * groupSize + g] = row;
                }
            }
            normalised = true;
            return out;
        }
    }

    /**
     * Logits of {@code count} tokens for every query head of one KV head ({@link Softmax#logits}: four heads
     * a pass over a key, a vector of tokens at a time where the Vector API is there, the same floats either
     * way).
     */
    private void logits(float[] q, int q0, float[] k, int base, int count, float[][] out, int outFrom) {
        Softmax.logits(q, q0, groupSize, headDim, k, base, count, scale, out, outFrom);
    }

    private void accumulate(LayerKv kv, int kvh, float[][] probs, float[] output, float[] chunk, int chunkTokens) {
        int n = kv.tokens();
        for (int from = 0; from < n; from += chunkTokens) {
            int count = Math.min(chunkTokens, n - from);
            kv.values(kvh, from, count, chunk, 0);
            for (int g = 0; g < groupSize; g++) {
                float[] p = probs[g];
                int o = (kvh * groupSize + g) * headDim;
                for (int t = 0; t < count; t++) {
                    float w = p[from + t];
                    int vo = t * headDim;
                    for (int d = 0; d < headDim; d++) {
                        output[o + d] += w * chunk[vo + d];
                    }
                }
            }
        }
    }

    private void checkLayer(LayerKv kv, float[] query) {
        Checks.notNull("kv", kv);
        Checks.notNull("query", query);
        if (kv.kvHeads() != kvHeads || kv.headDim() != headDim) {
            throw new IllegalArgumentException("layer has kvHeads = " + kv.kvHeads() + ", headDim = " + kv.headDim()
                    + "; this attention expects kvHeads = " + kvHeads + ", headDim = " + headDim);
        }
        Checks.queryRows(query, queryHeads, headDim);
    }

    /** Distinct ids in ascending order, each checked against {@code [0, tokens)}. */
    static int[] distinct(int[] ids, int tokens) {
        Checks.notNull("selected", ids);
        BitSet seen = new BitSet(tokens);
        for (int id : ids) {
            Checks.index("selected token", id, tokens);
            seen.set(id);
        }
        return seen.stream().toArray();
    }

    static float dot(float[] a, int ao, float[] b, int bo, int n) {
        return Softmax.dot(a, ao, b, bo, n);
    }
}
