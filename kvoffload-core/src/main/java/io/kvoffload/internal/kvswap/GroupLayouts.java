package io.kvoffload.internal.kvswap;

import io.kvoffload.DType;
import io.kvoffload.strategy.kvswap.GroupOptions;
import io.kvoffload.strategy.kvswap.GroupSummary;
import io.kvoffload.KvShape;
import io.kvoffload.internal.sequence.ExtentLedger;
import io.kvoffload.internal.sequence.LayerState;
import io.kvoffload.internal.sequence.SequenceHooks;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.KvSequence;
import io.kvoffload.internal.storage.BlockTable;
import io.kvoffload.internal.storage.EntryChecksum;
import io.kvoffload.internal.storage.GroupLayout;
import io.kvoffload.internal.storage.GroupLayoutWriter;
import io.kvoffload.internal.storage.Store;
import io.kvoffload.internal.util.ElementCodec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.function.IntSupplier;

/**
 * KVSwap's offline phase on one sequence [KVSwap §3.2–3.4]: fits a layer's low-rank K adapter on
 * its stored keys and writes its group layout; rebuilds the compressed K cache a decoder predicts
 * with; installs the groups the rolling buffer flushes. One per sequence ({@link #of}), attached
 * through its {@link SequenceHooks}; the layouts go to the sequence's {@link ExtentLedger}.
 */
public final class GroupLayouts {
    /** Keys and values read per pass. */
    private static final int CHUNK = 2048;

    private final SequenceHooks hooks;
    private final KvSequence sequence;
    private final Store store;
    private final String id;
    private final KvShape shape;
    private final EntryChecksum checksum;
    private final int blockTokens;
    private final int half;

    private GroupLayouts(SequenceHooks hooks) {
        this.hooks = hooks;
        this.sequence = hooks.sequence();
        this.store = hooks.store();
        this.id = sequence.id();
        this.shape = sequence.shape();
        this.checksum = hooks.checksum();
        this.blockTokens = sequence.blockTokens();
        this.half = shape.halfEntryBytes();
    }

    /** The sequence's KVSwap state. */
    public static GroupLayouts of(SequenceHooks hooks) {
        return hooks.attachment(GroupLayouts.class, GroupLayouts::new);
    }

    /**
     * KVSwap's offline phase for {@code layer} (see {@link io.kvoffload.strategy.kvswap.KvSwap#groupLayer}):
     * the layer's cluster or group layout is replaced; the block extents the groups now cover are
     * released after the next commit.
     */
    public GroupSummary layOut(int layer, GroupOptions options) {
        return hooks.exclusive(() -> {
            hooks.checkWritable();
            Checks.index("layer", layer, shape.layers());
            Checks.notNull("options", options);
            GroupSummary summary = write(layer, hooks.ledger(), options, () -> options.rankFor(shape), () -> {
                hooks.checkNoFetchInFlight("re-lay out");
                hooks.flushWrites();
            });
            hooks.changed();
            return summary;
        });
    }

    /**
     * The rolling buffer flushed full groups: {@code grown} appends groups to the layer's current
     * group layout ({@link GroupLayoutWriter#append}) and shares all its extents. Blocks whose tokens
     * are now all grouped are retired; the next commit persists the grown layout, and a close
     * without commit frees only the appended segments.
     */
    public void extend(int layer, GroupLayout grown) {
        hooks.checkWritable();
        hooks.ledger().extendGroups(layer, grown);
        hooks.flushWrites(); // a block about to be retired may still have its write queued
        hooks.ledger().retireCoveredBlocks(layer, grown.groupedTokens());
        hooks.changed();
    }

    /** The layer's group layout, or null. */
    public GroupLayout layout(int layer) {
        Checks.index("layer", layer, shape.layers());
        return hooks.ledger().layer(layer).groups();
    }

    /**
     * Fits the adapter of {@code layer} and writes its group layout, which replaces the layer's
     * group and cluster layouts in {@code ledger};
     * {@code rank} gives the adapter's rank for the options (validating it), {@code beforeWrite}
     * runs once the options are validated, before anything is read.
     *
     * @throws IllegalArgumentException if the layer holds fewer than G tokens, the rank exceeds
     *     {@code kvHeads × headDim}, or the groups would not cover a block the layer no longer has
     */
    private GroupSummary write(int layer, ExtentLedger ledger, GroupOptions options, IntSupplier rankFor,
            Runnable beforeWrite) {
        LayerState state = ledger.layer(layer);
        int tokens = state.tokens();
        int g = options.groupSize();
        if (g > tokens) {
            throw new IllegalArgumentException("options.groupSize() = " + g + " is out of range for layer " + layer
                    + ", which holds " + tokens + " tokens; allowed: 1.." + Math.max(1, tokens));
        }
        int rank = rankFor.getAsInt();
        int grouped = tokens / g * g;
        BlockTable t = state.blocks();
        for (int b = 0; b < t.size(); b++) {
            if (!t.hasExtent(b) && (long) (b + 1) * blockTokens > grouped) {
                throw new IllegalArgumentException("options.groupSize() = " + g + " would lay out only " + grouped
                        + " tokens of layer " + layer + ", but its current layout already covers block " + b
                        + "; allowed: a group size that covers at least " + (long) (b + 1) * blockTokens + " tokens");
            }
        }
        beforeWrite.run();
        long t0 = System.nanoTime();
        LowRankAdapter adapter = fitAdapter(layer, tokens, rank, options.calibrationRows(), options.seed());
        long t1 = System.nanoTime();
        GroupLayout layout = GroupLayoutWriter.write(store, id, checksum, layer, shape, g, grouped, adapter,
                (positions, k, v) -> sequence.read(layer, positions, k, v));
        long t2 = System.nanoTime();
        ledger.installGroups(layer, layout);
        return new GroupSummary(layer, grouped, layout.groupCount(), g, adapter.rank(), adapter.compressionRatio(),
                adapter.retainedEnergy(), layout.stride() * layout.shards(), CompressedKCache.bytesFor(grouped, adapter.rank(), DType.F16),
                (t1 - t0) / 1_000_000, (t2 - t1) / 1_000_000);
    }

    /** Fits the adapter on up to {@code maxRows} stored keys of the layer, sampled uniformly in position order. */
    private LowRankAdapter fitAdapter(int layer, int tokens, int rank, int maxRows, long seed) {
        int rows = Math.min(tokens, maxRows);
        int[] sample = new int[rows];
        // Selection sampling (Knuth's Algorithm S): a uniform subset, already in position order.
        SplittableRandom rnd = new SplittableRandom(seed);
        for (int p = 0, k = 0; p < tokens && k < rows; p++) {
            if (rnd.nextInt(tokens - p) < rows - k) {
                sample[k++] = p;
            }
        }
        LowRankAdapter.Calibration cal = LowRankAdapter.calibration(shape.kvHeads(), shape.headDim());
        forEachKeyChunk(layer, sample, (keys, n) -> cal.add(keys, 0, n));
        return cal.fit(rank);
    }

    /**
     * The compressed K cache of a layer laid out as {@code gl} (null: none, which fails), rebuilt
     * from its stored (CRC-checked) keys through the persisted adapter: tokens
     * {@code [0, groupedTokens)}.
     */
    public CompressedKCache compressedKeys(int layer, DType storage, int expectedTokens) {
        GroupLayout gl = layout(layer);
        if (gl == null) {
            throw new IllegalStateException("layer " + layer + " of sequence " + id + " has no group layout; call"
                    + " groupLayer first");
        }
        int grouped = gl.groupedTokens();
        CompressedKCache cache = new CompressedKCache(adapter(gl), storage, Math.max(grouped, expectedTokens));
        int[] positions = new int[grouped];
        Arrays.setAll(positions, i -> i);
        forEachKeyChunk(layer, positions, (keys, n) -> cache.append(keys, 0, n));
        return cache;
    }

    /** Takes the keys of a chunk of positions: {@code rows} tokens, decoded to float, token-major. */
    @FunctionalInterface
    private interface KeyChunk {
        void accept(float[] keys, int rows);
    }

    /** Reads the stored keys of {@code positions} of the layer, {@value #CHUNK} tokens at a time, in order. */
    private void forEachKeyChunk(int layer, int[] positions, KeyChunk sink) {
        int elements = shape.elementsPerToken();
        float[] f = new float[CHUNK * elements];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment k = arena.allocate((long) CHUNK * half, 64);
            MemorySegment v = arena.allocate((long) CHUNK * half, 64);
            for (int from = 0; from < positions.length; from += CHUNK) {
                int n = Math.min(CHUNK, positions.length - from);
                sequence.read(layer, Arrays.copyOfRange(positions, from, from + n), k, v);
                ElementCodec.read(shape.dtype(), k, 0, f, 0, n * elements);
                sink.accept(f, n);
            }
        }
    }

    /** The low-rank K adapter a group layout this package wrote holds as its state. */
    static LowRankAdapter adapter(GroupLayout layout) {
        return (LowRankAdapter) layout.state();
    }
}
