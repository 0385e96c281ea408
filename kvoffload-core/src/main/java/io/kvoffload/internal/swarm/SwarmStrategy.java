package io.kvoffload.internal.swarm;

import io.kvoffload.DecodeOptions;
import io.kvoffload.KvSequence;
import io.kvoffload.internal.decode.DecodeCounters;
import io.kvoffload.internal.decode.LayerFetcher;
import io.kvoffload.internal.decode.LayerStore;
import io.kvoffload.internal.decode.PipelineStrategy;
import io.kvoffload.strategy.LayerContext;
import io.kvoffload.strategy.LayerSelector;
import io.kvoffload.strategy.SelectionStrategy;

/**
 * Swarm as a strategy (the default): co-activation clusters laid out by
 * {@link KvSequence#clusterLayer} (the offline phase needs the activations or queries the engine
 * observed), selected by medoid score with a hot-cluster cache and Eq. 9 maintenance inside the
 * decoder ({@link SwarmLayer}). A layer that is not clustered is attended from DRAM.
 */
public final class SwarmStrategy implements SelectionStrategy, PipelineStrategy {
    public static final SwarmStrategy INSTANCE = new SwarmStrategy();

    private SwarmStrategy() {}

    @Override
    public String name() {
        return "swarm";
    }

    /**
     * Refused: Swarm clusters tokens by how queries co-activate them, which a layer's keys alone do
     * not tell. Use {@link KvSequence#clusterLayerFromQueries} or {@link KvSequence#clusterLayer}.
     */
    @Override
    public void layOut(KvSequence sequence, int layer) {
        throw new UnsupportedOperationException("swarm lays a layer out from observed activations: call"
                + " KvSequence.clusterLayerFromQueries(layer, queries, options) or clusterLayer(layer, activationSets,"
                + " options) for layer " + layer + " of sequence " + sequence.id());
    }

    /** Refused: Swarm's selection runs inside the pipeline (clusters, replicas, cache), not as a position list. */
    @Override
    public LayerSelector openLayer(LayerContext context) {
        throw new UnsupportedOperationException("swarm selects clusters inside the decoder's pipeline; use it through"
                + " DecodeOptions (the default strategy), not as a LayerSelector");
    }

    @Override
    public LayerFetcher openFetcher(LayerStore sequence, DecodeOptions options, int layer, DecodeCounters counters) {
        return new SwarmLayer(sequence, options, layer, counters);
    }

    @Override
    public String toString() {
        return "SwarmStrategy";
    }
}
