package io.kvoffload.internal.swarm;

import io.kvoffload.attention.ExactAttention;
import io.kvoffload.internal.util.KeyBounds;
import io.kvoffload.strategy.LayerKv;
import io.kvoffload.strategy.LayoutUnits;

/**
 * The summaries a {@link BlockMassIndex} keeps of a layer's scored blocks (or layout units), per KV
 * head, dimension and block: the largest, smallest and mean key element, staged into the index's int8
 * rows (its bound, mean or MIX rows, whichever it keeps) and its representatives, read from the keys
 * once when the index is built. Every key must be finite; the first that is not is named.
 */
record BlockSummaries(int kvHeads, int headDim, int tokens, int scored, int scoredTokens, Int8Rows max, Int8Rows min,
        Int8Rows mean, Int8Rows mixHi, Int8Rows mixLo, BlockRepresentatives reps) {
    // scored: the scored blocks (or units), of scoredTokens each; a row null where the index keeps none
    // (bounds, MEAN, MIX), mixLo mixHi itself for one-token parts; reps null unless REPS*.

    /** Scored blocks {@link #blocks} reads and transposes at a time, at most: {@link #RANGE} tokens' keys. */
    private static final int TILE = 64;

    /**
     * The summaries of every scored block, a tile of {@link #TILE} blocks at a time: one read of the
     * tile's keys, each block's largest, smallest and summed elements block-major ({@link KeyBounds}),
     * then written dimension-major as runs of the tile's blocks (one element per block and dimension
     * written {@code scored} apart cost a cache miss each). Opening a layer took 3.4 × as long before
     * (docs/benchmarks.md, "Opening a layer"). Tokens outer, heads inner: a stored layer's keys are read
     * range by range, each range once for all heads ({@code SequenceLayerKv} keeps the last one).
     */
    void blocks(LayerKv kv) {
        new Pass().blocks(kv, 0, tokens);
    }

    /**
     * {@link #blocks} of several summaries of one layer's tokens (indexes a calibrating strategy weighs
     * against each other), range by range of {@link #RANGE} tokens, each range for every summary before
     * the next: a stored layer's keys are read once for all of them ({@code SequenceLayerKv} keeps the
     * last range), not once each. Summaries whose tiles do not fit a range's bounds go one after another.
     * A summary of the same tokens in the same parts and rows as an earlier one ({@link #sameAs}: a
     * calibrating opening's finer blocks and its parts of the default's blocks, both of half the tokens)
     * is that one's bytes: built once and copied. A summary whose blocks are runs of another's blocks
     * ({@link #partsOf}) is built in that one's pass. Every summary is quantised. {@code attention}, when
     * not null, takes each range of the summaries' tokens after them, while the range's keys are still at
     * hand (the exact attention a calibrating opening weighs its candidates by), then the layer's tokens
     * past them.
     */
    static void together(LayerKv kv, java.util.List<BlockSummaries> all, ExactAttention.HeadLogits attention) {
        java.util.List<BlockSummaries> built = new java.util.ArrayList<>(); // one of each content
        int[] source = new int[all.size()]; // the built summary each one copies, or -1 for itself
        for (int i = 0; i < all.size(); i++) {
            source[i] = -1;
            for (int j = 0; j < built.size() && source[i] < 0; j++) {
                source[i] = built.get(j).sameAs(all.get(i)) ? j : -1;
            }
            if (source[i] < 0) {
                built.add(all.get(i));
            }
        }
        boolean fit = true;
        for (BlockSummaries s : built) {
            fit &= s.tokens == built.get(0).tokens && RANGE % s.tileTokens() == 0;
        }
        int tokens = built.get(0).tokens;
        if (!fit) {
            for (BlockSummaries s : built) {
                s.blocks(kv);
            }
            if (attention != null) {
                attention.range(kv, 0, kv.tokens());
            }
        } else {
            // A summary whose blocks are whole runs of another's is built in that one's pass over the keys.
            BlockSummaries[] wholeOf = new BlockSummaries[built.size()];
            boolean[] inAnother = new boolean[built.size()];
            for (int f = 0; f < built.size(); f++) {
                for (int c = 0; c < built.size() && wholeOf[f] == null; c++) {
                    if (!inAnother[c] && wholeOf[c] == null && c != f && built.get(f).partsOf(built.get(c))) {
                        wholeOf[f] = built.get(c);
                        inAnother[c] = true;
                    }
                }
            }
            java.util.List<Pass> passes = new java.util.ArrayList<>();
            for (int i = 0; i < built.size(); i++) {
                if (!inAnother[i]) {
                    passes.add(built.get(i).new Pass(wholeOf[i]));
                }
            }
            for (int from = 0; from < tokens; from += RANGE) {
                int to = Math.min(tokens, from + RANGE);
                for (Pass p : passes) {
                    p.blocks(kv, from, to);
                }
                if (attention != null) {
                    attention.range(kv, from, to);
                }
            }
            if (attention != null && tokens < kv.tokens()) {
                attention.range(kv, tokens, kv.tokens());
            }
        }
        for (BlockSummaries s : built) {
            s.quantise();
        }
        for (int i = 0; i < all.size(); i++) {
            if (source[i] >= 0) {
                all.get(i).copyOf(built.get(source[i]));
            }
        }
    }

    /**
     * Whether {@code whole}'s blocks are runs of this summary's, a whole number of them within each of
     * this summary's tiles, so that one pass over the keys can build both ({@link KeyBounds#ofParts});
     * neither keeps representatives.
     */
    private boolean partsOf(BlockSummaries whole) {
        int ratio = whole.scoredTokens / scoredTokens;
        return reps == null && whole.reps == null && kvHeads == whole.kvHeads && headDim == whole.headDim
                && tokens == whole.tokens && ratio > 1 && whole.scoredTokens == ratio * scoredTokens
                && tile() % ratio == 0;
    }

    /**
     * Whether {@code other} summarises the same tokens in the same parts into the same rows, so that
     * building it would write this summary's bytes (neither keeps representatives, which are not copied).
     */
    boolean sameAs(BlockSummaries other) {
        return reps == null && other.reps == null && kvHeads == other.kvHeads && headDim == other.headDim
                && tokens == other.tokens && scored == other.scored && scoredTokens == other.scoredTokens
                && Int8Rows.sameShape(max, other.max) && Int8Rows.sameShape(min, other.min)
                && Int8Rows.sameShape(mean, other.mean) && Int8Rows.sameShape(mixHi, other.mixHi)
                && Int8Rows.sameShape(mixLo, other.mixLo) && (mixLo == mixHi) == (other.mixLo == other.mixHi);
    }

    /** Takes {@code built}'s quantised rows ({@link #sameAs} this, quantised) as this summary's own. */
    private void copyOf(BlockSummaries built) {
        for (Int8Rows[] r : new Int8Rows[][] {{max, built.max}, {min, built.min}, {mean, built.mean},
                {mixHi, built.mixHi}, {mixLo == mixHi ? null : mixLo, built.mixLo}}) {
            if (r[0] != null) {
                r[0].copyOf(r[1]);
            }
        }
    }

    /** Scored blocks a tile holds. */
    private int tile() {
        return Math.max(1, Math.min(TILE, RANGE / scoredTokens));
    }

    /** Tokens a tile spans. */
    private long tileTokens() {
        return (long) tile() * scoredTokens;
    }

    /** Quantises the rows the summaries were staged into (and the representatives). */
    void quantise() {
        for (Int8Rows r : new Int8Rows[] {max, min, mean, mixHi, mixLo == mixHi ? null : mixLo}) {
            if (r != null) {
                r.quantise();
            }
        }
        if (reps != null) {
            reps.quantise();
        }
    }

    /**
     * One pass of {@link #blocks} over the layer, with its buffers: tile by tile, any range of tiles at a
     * time; with a {@code whole} summary ({@link #partsOf}), that one's blocks from the same keys.
     */
    private final class Pass {
        private final int tile = tile();
        private final float[] keys = new float[tile * scoredTokens * headDim];
        private final float[] hi = new float[tile * headDim], lo = new float[tile * headDim], sum = new float[tile * headDim];
        private final float[] blockKeys = reps != null ? new float[scoredTokens * headDim] : null;
        private final boolean vector = KeyBounds.vectorised((long) kvHeads * scored);
        private final BlockSummaries whole;
        private final int ratio;                    // this summary's blocks in one of whole's
        private final float[] wHi, wLo, wSum;       // whole's blocks of a tile

        Pass() {
            this(null);
        }

        Pass(BlockSummaries whole) {
            this.whole = whole;
            this.ratio = whole == null ? 1 : whole.scoredTokens / scoredTokens;
            int n = whole == null ? 0 : tile / ratio * headDim;
            this.wHi = new float[n];
            this.wLo = new float[n];
            this.wSum = new float[n];
            stageRows();
            if (whole != null) {
                whole.stageRows();
            }
        }

        /** The tiles whose first token lies in {@code [fromToken, toToken)}. */
        void blocks(LayerKv kv, int fromToken, int toToken) {
            int d = headDim, st = scoredTokens;
            int first = (fromToken + st - 1) / st, last = Math.min(scored, (toToken + st - 1) / st);
            for (int b0 = first; b0 < last; b0 += tile) { // a range of tokens for every head, then the next
                for (int h = 0; h < kvHeads; h++) {
                    int m = Math.min(tile, scored - b0), from = b0 * st, count = Math.min(m * st, tokens - from);
                    kv.keys(h, from, count, keys, 0);
                    if (whole == null) {
                        for (int i = 0; i < m; i++) {
                            int at = i * st * d, n = Math.min(st, count - i * st);
                            KeyBounds.of(keys, at, d, n, hi, lo, sum, i * d, vector);
                        }
                    } else {
                        wholeBlocks(h, b0, m, count);
                    }
                    if (!finite(sum, m * d)) { // a non-finite key makes its block's sum so
                        requireFinite(keys, count, d, from, h);
                    }
                    for (int i = 0; reps != null && i < m; i++) {
                        int at = i * st * d, n = Math.min(st, count - i * st);
                        System.arraycopy(keys, at, blockKeys, 0, n * d);
                        reps.summarise(h, b0 + i, blockKeys, n);
                    }
                    for (int j = 0; j < d; j++) {
                        for (int i = 0; i < m; i++) {
                            int n = Math.min(st, count - i * st);
                            stage(h, j * scored + b0 + i, hi[i * d + j], lo[i * d + j], sum[i * d + j] / n);
                        }
                    }
                }
            }
        }

        /**
         * This tile's {@code m} blocks ({@code count} tokens from block {@code b0}) of head {@code h} into
         * the pass's buffers, and {@code whole}'s blocks that they make up staged into its rows.
         */
        private void wholeBlocks(int h, int b0, int m, int count) {
            int d = headDim, st = scoredTokens, wt = ratio * st;
            for (int c = 0, i = 0; i < m; c++, i += ratio) {
                int n = Math.min(wt, count - i * st);
                KeyBounds.ofParts(keys, i * st * d, d, n, st, hi, lo, sum, i * d, wHi, wLo, wSum, c * d, vector);
            }
            for (int j = 0, first = b0 / ratio, blocks = (m + ratio - 1) / ratio; j < d; j++) {
                for (int c = 0; c < blocks; c++) {
                    int n = Math.min(wt, count - c * wt);
                    whole.stage(h, j * whole.scored + first + c, wHi[c * d + j], wLo[c * d + j], wSum[c * d + j] / n);
                }
            }
        }
    }

    /** Makes room in every row for the floats {@link #stage} sets. */
    private void stageRows() {
        for (Int8Rows r : new Int8Rows[] {max, min, mean, mixHi, mixLo}) {
            if (r != null) {
                r.stage();
            }
        }
    }

    /** Whether {@code x[0, n)} are all finite. */
    private static boolean finite(float[] x, int n) {
        boolean all = true;
        for (int i = 0; i < n; i++) {
            all &= Float.isFinite(x[i]);
        }
        return all;
    }

    /**
     * Checks the keys {@code keys[0, count × d)} of tokens {@code first …} (KV head {@code h}).
     *
     * @throws IllegalArgumentException naming the token, head and dimension of a non-finite element
     */
    private static void requireFinite(float[] keys, int count, int d, int first, int h) {
        for (int i = 0, n = count * d; i < n; i++) {
            if (!Float.isFinite(keys[i])) {
                throw new IllegalArgumentException("key of token " + (first + i / d) + ", KV head " + h + ", dimension "
                        + i % d + " = " + keys[i] + "; allowed: finite values");
            }
        }
    }

    /**
     * Adds key {@code keys[at, at + d)} to the running largest, smallest and summed elements at {@code
     * [o, o + d)} ({@link #requireFinite} has checked it).
     */
    private static void accumulate(float[] keys, int at, int d, float[] hi, float[] lo, float[] sum, int o) {
        for (int j = 0; j < d; j++) {
            float v = keys[at + j];
            hi[o + j] = Math.max(hi[o + j], v);
            lo[o + j] = Math.min(lo[o + j], v);
            sum[o + j] += v;
        }
    }

    /** Stages one (head, dimension, block) summary: its largest, smallest and mean key element. */
    private void stage(int h, int at, float hi, float lo, float mu) {
        if (max != null) {
            max.set(h, at, hi);
            min.set(h, at, lo);
        }
        if (mean != null) {
            mean.set(h, at, mu);
        }
        if (mixHi != null) {
            mixHi.set(h, at, 0.5f * (hi + mu));
            if (mixLo != mixHi) {
                mixLo.set(h, at, 0.5f * (lo + mu));
            }
        }
    }

    /** Tokens whose keys {@link #units} reads at a time, per head. */
    private static final int RANGE = 4096;

    /**
     * {@link #blocks} over layout units: the keys are read in token order, a range at a time (a
     * layer too large for memory is read from the SSDs once per head, not once per unit), and each
     * token updates every unit that holds it.
     */
    void units(LayerKv kv, LayoutUnits units) {
        int d = headDim, n = scored; // units are scored whole
        int[] start = new int[tokens + 1]; // token t's units at unitOf[start[t] .. start[t + 1])
        for (int u = 0; u < n; u++) {
            for (int i = 0, size = units.size(u); i < size; i++) {
                int t = units.member(u, i);
                if (t < 0 || t >= tokens) {
                    throw new IllegalArgumentException("units.member(" + u + ", " + i + ") = " + t + "; allowed: 0.."
                            + (tokens - 1));
                }
                start[t + 1]++;
            }
        }
        for (int t = 0; t < tokens; t++) {
            start[t + 1] += start[t];
        }
        int[] unitOf = new int[start[tokens]];
        int[] fill = java.util.Arrays.copyOf(start, tokens);
        for (int u = 0; u < n; u++) {
            for (int i = 0, size = units.size(u); i < size; i++) {
                unitOf[fill[units.member(u, i)]++] = u;
            }
        }
        stageRows();
        float[] hi = new float[n * d], lo = new float[n * d], sum = new float[n * d]; // unit-major
        float[] keys = new float[RANGE * d];
        for (int h = 0; h < kvHeads; h++) {
            java.util.Arrays.fill(hi, Float.NEGATIVE_INFINITY);
            java.util.Arrays.fill(lo, Float.POSITIVE_INFINITY);
            java.util.Arrays.fill(sum, 0f);
            for (int from = 0; from < tokens; from += RANGE) {
                int m = Math.min(RANGE, tokens - from);
                kv.keys(h, from, m, keys, 0);
                requireFinite(keys, m, d, from, h);
                for (int k = 0; k < m; k++) {
                    int t = from + k;
                    for (int x = start[t]; x < start[t + 1]; x++) {
                        accumulate(keys, k * d, d, hi, lo, sum, unitOf[x] * d);
                    }
                }
            }
            for (int u = 0; u < n; u++) {
                int size = units.size(u);
                for (int j = 0; j < d; j++) {
                    stage(h, j * n + u, hi[u * d + j], lo[u * d + j], sum[u * d + j] / size);
                }
            }
        }
    }
}
