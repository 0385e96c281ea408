package io.kvoffload.internal.kvswap;

import io.kvoffload.DecodeOptions;
import io.kvoffload.GroupOptions;
import io.kvoffload.KvSequence;
import io.kvoffload.internal.decode.DecodeCounters;
import io.kvoffload.internal.decode.LayerFetcher;
import io.kvoffload.internal.decode.LayerStore;
import io.kvoffload.internal.decode.PipelineStrategy;
import io.kvoffload.internal.storage.GroupLayout;
import io.kvoffload.strategy.LayerContext;
import io.kvoffload.strategy.LayerSelector;
import io.kvoffload.strategy.SelectionStrategy;

/**
 * KVSwap as a strategy: the offline phase fits the layer's low-rank K adapter and lays it out in
 * groups ({@link KvSequence#groupLayer}); online, {@link KvSwapLayer} predicts groups from the
 * compressed K cache and fetches the misses of its reuse buffer. A layer without a group layout is
 * left to the default strategy.
 */
public final class KvSwapStrategy implements SelectionStrategy, PipelineStrategy {
    public static final KvSwapStrategy INSTANCE = new KvSwapStrategy();

    private KvSwapStrategy() {}

    @Override
    public String name() {
        return "kvswap";
    }

    /** KVSwap's offline phase with the paper's defaults ({@link GroupOptions#defaults()}). */
    @Override
    public void layOut(KvSequence sequence, int layer) {
        sequence.groupLayer(layer, GroupOptions.defaults());
    }

    /** Refused: KVSwap predicts groups inside the pipeline (reuse buffer, rolling buffer), not as a position list. */
    @Override
    public LayerSelector openLayer(LayerContext context) {
        throw new UnsupportedOperationException("kvswap predicts groups inside the decoder's pipeline; use it through"
                + " DecodeOptions.selector(KVSWAP) or strategy(\"kvswap\"), not as a LayerSelector");
    }

    @Override
    public LayerFetcher openFetcher(LayerStore sequence, DecodeOptions options, int layer, DecodeCounters counters) {
        GroupLayout groups = sequence.groupLayout(layer);
        return groups == null ? null : new KvSwapLayer(sequence, options, layer, groups, counters);
    }

    @Override
    public String toString() {
        return "KvSwapStrategy";
    }
}
