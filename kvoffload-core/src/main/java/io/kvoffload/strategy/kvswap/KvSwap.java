package io.kvoffload.strategy.kvswap;

import io.kvoffload.DecodeOptions;
import io.kvoffload.KvSequence;
import io.kvoffload.internal.decode.DecodeCounters;
import io.kvoffload.internal.decode.LayerFetcher;
import io.kvoffload.internal.sequence.SequenceHooks;
import io.kvoffload.internal.decode.PipelineStrategy;
import io.kvoffload.internal.sequence.SequenceAccess;
import io.kvoffload.internal.kvswap.GroupLayouts;
import io.kvoffload.internal.kvswap.KvSwapLayer;
import io.kvoffload.internal.storage.GroupLayout;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.strategy.LayerContext;
import io.kvoffload.strategy.LayerSelector;
import io.kvoffload.strategy.SelectionStrategy;

/**
 * KVSwap [KVSwap] as a strategy: the offline phase ({@link #layOut}, {@link KvSwap#groupLayer})
 * fits the layer's low-rank K adapter and lays it out in groups of G tokens; online, the group
 * predictor scores the query against the compressed K cache in DRAM, picks the top
 * {@code M = ⌈budget / G⌉} groups (the budget is {@link DecodeOptions#budgetTokens()} when set, else
 * the shared {@code ⌈sparsity × tokens⌉} less sinks and window, as for every strategy),
 * serves repeats from the reuse buffer and reads the misses through the shared scheduler. Full groups
 * of decoded tokens are flushed group-major every {@code blockTokens} tokens or so (the rolling
 * buffer). A layer without a group layout is left to the default strategy. Immutable.
 *
 * @param reuseSlots groups per layer kept in DRAM between steps (the reuse buffer, C); hits need no
 *     I/O; {@value #AUTO} takes M, the paper's setting; 0 disables it; else 1..2^20, raised to M when
 *     smaller
 * @param reusePolicy which slot a missed group overwrites
 * @param rollingFlush whether full groups that left the window are written to the SSDs (else they
 *     stay in DRAM)
 * @param groupOptions the offline phase's settings ({@link #layOut})
 */
public record KvSwap(int reuseSlots, ReusePolicy reusePolicy, boolean rollingFlush, GroupOptions groupOptions)
        implements SelectionStrategy, PipelineStrategy {

    /** Reuse-buffer replacement ([KVSwap] §3.4.3). */
    public enum ReusePolicy {
        /** The paper's FIFO: the slot filled longest ago goes first (skipping groups this step requested). */
        FIFO,
        /** The public artifact's: misses overwrite slots whose group this step did not request, in slot order. */
        REPLACE_UNREQUESTED
    }

    /** {@link #reuseSlots()} value that takes M. */
    public static final int AUTO = -1;

    private static final KvSwap DEFAULTS = new KvSwap(AUTO, ReusePolicy.FIFO, true, GroupOptions.defaults());

    public KvSwap {
        if (reuseSlots != AUTO) {
            Checks.inRange("reuseSlots", reuseSlots, 0, 1 << 20);
        }
        Checks.notNull("reusePolicy", reusePolicy);
        Checks.notNull("groupOptions", groupOptions);
    }

    /** The paper's settings: C = M, FIFO, rolling flush on, G = 4; rank kvHeads × headDim / 8 (σ = 8, the paper's with 8 KV heads). */
    public static KvSwap defaults() {
        return DEFAULTS;
    }

    /** The reuse settings an offline tuning chose ({@link KvSwapTuning#load}); see {@link KvSwapTuning#applyTo}. */
    public static KvSwap tuned(KvSwapTuning tuning) {
        Checks.notNull("tuning", tuning);
        return new KvSwap(tuning.reuseSlots(), tuning.reusePolicy(), true, DEFAULTS.groupOptions);
    }

    public KvSwap withReuseSlots(int slots) {
        return new KvSwap(slots, reusePolicy, rollingFlush, groupOptions);
    }

    public KvSwap withReusePolicy(ReusePolicy policy) {
        return new KvSwap(reuseSlots, policy, rollingFlush, groupOptions);
    }

    public KvSwap withRollingFlush(boolean on) {
        return new KvSwap(reuseSlots, reusePolicy, on, groupOptions);
    }

    public KvSwap withGroupOptions(GroupOptions options) {
        return new KvSwap(reuseSlots, reusePolicy, rollingFlush, options);
    }

    @Override
    public String name() {
        return "kvswap";
    }

    /** KVSwap's offline phase with {@link #groupOptions()}. */
    @Override
    public void layOut(KvSequence sequence, int layer) {
        groupLayer(sequence, layer, groupOptions);
    }

    /**
     * KVSwap's offline phase for {@code layer} of a writable sequence [KVSwap §3.2–3.4]: fits the
     * layer's low-rank K adapter (SVD of up to {@code options.calibrationRows()} of its own stored
     * keys) and lays tokens {@code [0, ⌊tokens / G⌋·G)} out in groups of G: each group one aligned
     * region {@code [K of G tokens | V of G tokens]} with its checksum, groups round-robin over the
     * SSDs (under {@link io.kvoffload.Placement#HEAD_SHARDED}: each group cut into head groups, one
     * per device, each with its checksum, so every SSD serves whole heads). The last partial group stays in the block layout (a decoder keeps it in DRAM, the rolling
     * buffer). {@link KvSequence#commit} persists the layout and the adapter; a decoder with this
     * strategy then predicts and fetches groups. A cluster or group layout the layer had is
     * replaced; the block extents the groups now cover are released after the next commit.
     *
     * @throws IllegalArgumentException if the layer holds fewer than G tokens, or the rank exceeds
     *     {@code kvHeads × headDim}
     */
    public static GroupSummary groupLayer(KvSequence sequence, int layer, GroupOptions options) {
        return GroupLayouts.of(SequenceAccess.of(sequence)).layOut(layer, options);
    }

    /** Groups of {@code layer} (0 if it has no group layout). */
    public static int groupCount(KvSequence sequence, int layer) {
        SequenceHooks hooks = SequenceAccess.of(sequence);
        hooks.checkOpen();
        GroupLayout g = GroupLayouts.of(hooks).layout(layer);
        return g == null ? 0 : g.groupCount();
    }

    /** Refused: KVSwap predicts groups inside the pipeline (reuse buffer, rolling buffer), not as a position list. */
    @Override
    public LayerSelector openLayer(LayerContext context) {
        throw new UnsupportedOperationException("kvswap predicts groups inside the decoder's pipeline; pass it to"
                + " DecodeOptions.Builder.strategy, not as a LayerSelector");
    }

    /** Internal: the decoder opens a layer's online phase through this. */
    @Override
    public LayerFetcher openFetcher(SequenceHooks sequence, DecodeOptions options, int layer, DecodeCounters counters) {
        GroupLayout groups = GroupLayouts.of(sequence).layout(layer);
        return groups == null ? null : new KvSwapLayer(sequence, options, layer, groups, counters, reuseSlots,
                reusePolicy == ReusePolicy.FIFO, rollingFlush);
    }
}
