package io.kvoffload.strategy.sparf;

import io.kvoffload.DType;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.strategy.LayerContext;
import io.kvoffload.strategy.LayerSelector;
import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.strategy.StoredUnits;
import io.kvoffload.strategy.UnitLayouts;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;

/**
 * InstInfer's SparF attention [InstInfer §IV-B, Algorithm 1; §IV-C, Fig. 9] read from flash: the
 * key cache is stored twice, and each decoding step reads in two steps.
 *
 * <ul>
 *   <li><b>Offline</b> ({@link #layOut}): the token-major entries in page groups of
 *       {@link #pageTokens()} consecutive tokens (the default positional layout, each entry with its
 *       checksum) and the <em>dual</em>, dimension-major copy of K ("hidden embedding-indexed
 *       mapping"): for every slice of {@link #sliceTokens(DType)} consecutive tokens, every KV head and
 *       every dimension {@code i}, one unit holding {@code K[t, head, i]} of the slice's tokens back to
 *       back — one 4 KiB page (2048 FP16 tokens, as the paper's "each page can store 2K tokens"). A
 *       (slice, head)'s {@code headDim} units sit consecutively on one device (slices and heads
 *       round-robin over the SSDs), so a query's top-r dimensions are r page reads there, and
 *       neighbouring dimensions merge into one read. Under {@link io.kvoffload.Placement#HEAD_SHARDED}
 *       a head's units go instead to the device serving its head group in the slice's row (InstInfer's
 *       head sharding: each SSD serves whole heads, in step 1 as in step 2's page groups, which the
 *       default layout shards the same way). Written with {@link UnitLayouts#write} (all or
 *       nothing, a checksum per unit) and persisted in the manifest with this strategy's name and
 *       {@link #VERSION}.</li>
 *   <li><b>Step 1</b> ({@link LayerSelector#planUnits}): the {@code r} dimensions of largest
 *       {@code |q_i|} (ties: the lower dimension; {@code r = headDim / 8} by default, the paper's 1/8
 *       setting), per KV head over the sum of its query heads' {@code |q|} by default
 *       ({@link Dimensions}); their slices are read from the SSDs through the pipeline.
 *       The approximate scores are SparQ's, {@code ŝ_h = softmax(q[i]·K[:, i]ᵀ / √(d·‖q[i]‖₁/‖q‖₁))},
 *       averaged over the query heads.</li>
 *   <li><b>Step 2</b>: a page group ranks by the best {@code ŝ} among its tokens (InstInfer drops a
 *       page only when none of its tokens reaches the top-k); the best {@code ⌈budget / G⌉} groups
 *       are fetched whole through the normal entry pipeline (each group one merged read).</li>
 * </ul>
 *
 * <p>What a decoder keeps in DRAM per layer is the unit layout's table and per-step scratch (the
 * scores of the laid-out tokens), not K: the dimension slices come from the SSDs every step. The
 * whole-K index of the in-memory baseline is {@code sparf-memory}. At a budget that covers the
 * layer, no step-1 read is made and every token is fetched (dense attention).
 *
 * @param rank dimensions kept per query head; {@value #AUTO} for {@code max(1, headDim / 8)}
 * @param pageTokens G, tokens per page group (the token-major layout's unit), 1..4096
 * @param dimensions how the r dimensions are chosen when several query heads share a KV head (GQA)
 */
public record SparF(int rank, int pageTokens, Dimensions dimensions) implements SelectionStrategy {
    /** How step 1 chooses the dimensions it reads. */
    public enum Dimensions {
        /**
         * One set per KV head: the top-r of {@code Σ |q_i|} over the query heads sharing it (SparQ's
         * handling of grouped-query attention), so step 1 reads {@code r / headDim} of K.
         */
        PER_KV_HEAD,
        /**
         * One set per query head (Algorithm 1 as written, for multi-head attention): a KV head's
         * slices are the union of its query heads' sets, up to {@code r × queryHeads / kvHeads}
         * dimensions.
         */
        PER_QUERY_HEAD
    }

    /** {@link #rank()} value for {@code headDim / 8}. */
    public static final int AUTO = 0;
    /** This strategy's unit-layout format. */
    public static final int VERSION = 1;
    /** The owner name of the dual layout, shared by both {@link Dimensions} variants (the bytes are the same). */
    public static final String LAYOUT_OWNER = "sparf";
    /** Bytes of one dimension slice: a flash page, and the devices' direct-I/O alignment. */
    static final int SLICE_BYTES = 4096;
    private static final int PARAMS_BYTES = 21;

    public SparF {
        if (rank != AUTO) {
            Checks.inRange("rank", rank, 1, 1 << 16);
        }
        Checks.inRange("pageTokens", pageTokens, 1, 4096);
        Checks.notNull("dimensions", dimensions);
    }

    /**
     * The paper's settings: r = headDim / 8, groups of 16 tokens; dimensions per KV head.
     */
    public SparF() {
        this(AUTO, 16, Dimensions.PER_KV_HEAD);
    }

    public SparF withDimensions(Dimensions d) {
        return new SparF(rank, pageTokens, d);
    }

    public SparF withRank(int r) {
        return new SparF(r, pageTokens, dimensions);
    }

    /** {@code sparf}, or {@code sparf-qh} for {@link Dimensions#PER_QUERY_HEAD}. */
    @Override
    public String name() {
        return dimensions == Dimensions.PER_KV_HEAD ? "sparf" : "sparf-qh";
    }

    @Override
    public int version() {
        return VERSION;
    }

    /** Tokens in one dimension slice: one 4 KiB page of {@code dtype} elements. */
    public static int sliceTokens(DType dtype) {
        return SLICE_BYTES / dtype.bytes();
    }

    /** r for {@code headDim}. */
    int rankFor(int headDim) {
        return rank == AUTO ? Math.max(1, headDim / 8) : Math.min(rank, headDim);
    }

    /**
     * Writes the page groups (token-major, the default layout) and then the dimension-major copy of
     * K of all of {@code layer}'s tokens; {@link KvSequence#commit} persists both.
     */
    @Override
    public void layOut(KvSequence sequence, int layer) {
        SelectionStrategy.super.layOut(sequence, layer);
        writeDual(sequence, layer);
    }

    /** The dimension-major copy of K: unit {@code (slice · kvHeads + head) · headDim + dim}. */
    private void writeDual(KvSequence sequence, int layer) {
        KvShape shape = sequence.shape();
        int tokens = sequence.tokenCount(layer);
        int heads = shape.kvHeads(), d = shape.headDim(), eb = shape.dtype().bytes();
        int slice = sliceTokens(shape.dtype());
        int slices = (tokens + slice - 1) / slice;
        long half = shape.halfEntryBytes();
        ByteBuffer p = ByteBuffer.allocate(PARAMS_BYTES);
        p.putInt(slice).putInt(tokens).putInt(pageTokens).putInt(heads).putInt(d).put((byte) shape.dtype().ordinal());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment keys = arena.allocate(slice * half, 64);
            MemorySegment values = arena.allocate(slice * half, 64);
            int[] cached = {-1};
            UnitLayouts.write(sequence, layer, LAYOUT_OWNER, VERSION, p.array(), slice * eb, slices * heads * d,
                    new UnitLayouts.Source() {
                        @Override
                        public int device(int unit) {
                            return unit / d; // (slice, head) pairs round-robin; a pair's dimensions together
                        }

                        @Override
                        public int kvHead(int unit) {
                            return unit / d % heads; // head-sharded: a head's slices where its head group is served
                        }

                        @Override
                        public int row(int unit) {
                            return unit / (heads * d); // a slice's heads: one row of head groups
                        }

                        @Override
                        public void fill(int unit, MemorySegment dst) {
                            int s = unit / (heads * d), h = unit / d % heads, i = unit % d;
                            int from = s * slice, n = Math.min(slice, tokens - from);
                            if (cached[0] != s) {
                                sequence.read(layer, from, n, keys.asSlice(0, n * half), values.asSlice(0, n * half));
                                cached[0] = s;
                            }
                            long src = ((long) h * d + i) * eb;
                            for (int t = 0; t < n; t++) {
                                MemorySegment.copy(keys, src + t * half, dst, (long) t * eb, eb);
                            }
                        }
                    });
        }
    }

    /**
     * Opens the layer's SparF selector over its dual layout.
     *
     * @throws IllegalStateException if the layer has no dual layout of this strategy and version
     *     (lay it out with {@link #layOut} and commit), or one written for another shape
     */
    @Override
    public LayerSelector openLayer(LayerContext context) {
        StoredUnits u = context.units();
        if (u == null || !u.owner().equals(LAYOUT_OWNER) || u.version() != VERSION) {
            throw new IllegalStateException("layer " + context.layer() + " has "
                    + (u == null ? "no unit layout" : "the unit layout of '" + u.owner() + "' version " + u.version())
                    + "; allowed: SparF's dual layout version " + VERSION + " (lay the layer out with SparF.layOut"
                    + " and commit)");
        }
        KvShape shape = context.shape();
        ByteBuffer p = ByteBuffer.wrap(u.params());
        int slice = p.getInt(), laidOut = p.getInt(), g = p.getInt(), heads = p.getInt(), d = p.getInt();
        int dtype = p.get();
        if (heads != shape.kvHeads() || d != shape.headDim() || dtype != shape.dtype().ordinal()
                || slice != sliceTokens(shape.dtype()) || laidOut > context.tokens()
                || u.unitCount() != (laidOut + slice - 1) / slice * heads * d) {
            throw new IllegalStateException("layer " + context.layer() + ": SparF's dual layout (" + heads + " KV heads × "
                    + d + " dims, " + laidOut + " tokens in slices of " + slice + ", " + u.unitCount() + " units) does"
                    + " not match the sequence's shape " + shape + " and " + context.tokens() + " tokens");
        }
        return new SparFLayer(shape, laidOut, slice, g, rankFor(d), context.sinkTokens(), context.localWindow(),
                u.memoryBytes(), dimensions == Dimensions.PER_KV_HEAD);
    }
}
