package io.kvoffload.internal.decode;

import io.kvoffload.internal.sequence.SequenceHooks;

import io.kvoffload.DecodeOptions;

/**
 * A built-in strategy whose online phase needs more of the pipeline than positions (clusters with
 * replicas and a hot cache, groups with a reuse buffer): it opens its own {@link LayerFetcher}.
 * Plug-in strategies see only the public {@link io.kvoffload.strategy.SelectionStrategy}.
 */
public interface PipelineStrategy {
    /**
     * Opens {@code layer}'s fetcher, or returns null when the layer has no layout of this strategy
     * (the decoder then uses the default strategy, which attends an unlaid-out layer from DRAM).
     */
    LayerFetcher openFetcher(SequenceHooks sequence, DecodeOptions options, int layer, DecodeCounters counters);
}
