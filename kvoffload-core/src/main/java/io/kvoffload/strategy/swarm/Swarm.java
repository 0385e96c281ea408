package io.kvoffload.strategy.swarm;

import io.kvoffload.DecodeOptions;
import io.kvoffload.KvSequence;
import io.kvoffload.internal.decode.DecodeCounters;
import io.kvoffload.internal.decode.LayerFetcher;
import io.kvoffload.internal.decode.LayerStore;
import io.kvoffload.internal.decode.PipelineStrategy;
import io.kvoffload.internal.swarm.MaintenancePolicy;
import io.kvoffload.internal.swarm.SwarmLayer;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.strategy.LayerContext;
import io.kvoffload.strategy.LayerSelector;
import io.kvoffload.strategy.SelectionStrategy;

/**
 * Swarm [Swarm] as a strategy, the decoders' default: co-activation clusters laid out by
 * {@link KvSequence#clusterLayer} (the offline phase needs the activations or queries the engine
 * observed), selected by medoid score until the token budget, hot clusters cached in DRAM (Eq. 6 or
 * LRU) and tokens leaving the local window assigned to clusters online (Eq. 9). A layer that is not
 * clustered is attended in full from DRAM. Immutable; {@link #defaults()} or {@link #builder()}.
 *
 * @param cachePolicy which hot clusters stay in DRAM between steps
 * @param maintenance how tokens leaving the local window join clusters (Table 5)
 */
public record Swarm(CachePolicy cachePolicy, Maintenance maintenance) implements SelectionStrategy,
        PipelineStrategy {

    /** Hot-cluster cache policy in DRAM. */
    public enum CachePolicy {
        /** Eq. 6: a min-heap of clusters by cost-effectiveness score. */
        COST_EFFECTIVENESS,
        /** Least recently activated cluster is evicted first (the paper's comparison policy). */
        LRU
    }

    /** Online cluster maintenance for tokens leaving the local window (Eq. 9, Table 5). */
    public enum Maintenance {
        /** Eq. 9: join every cluster whose medoid co-activated with the token often enough; else a new cluster. */
        SWARM,
        /** Comparison policy: join the smallest cluster. */
        MIN_SIZE,
        /** Comparison policy: join the cluster with the least distance. */
        MIN_DIFF,
        /** Tokens stay in the DRAM window (it grows); nothing is written to clusters. */
        OFF
    }

    private static final Swarm DEFAULTS = new Swarm(CachePolicy.COST_EFFECTIVENESS, Maintenance.SWARM);

    public Swarm {
        Checks.notNull("cachePolicy", cachePolicy);
        Checks.notNull("maintenance", maintenance);
    }

    /** The Eq. 6 cache and Eq. 9 maintenance. */
    public static Swarm defaults() {
        return DEFAULTS;
    }

    public static Builder builder() {
        return new Builder();
    }

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
        throw new UnsupportedOperationException("swarm selects clusters inside the decoder's pipeline; pass it to"
                + " DecodeOptions.Builder.strategy, not as a LayerSelector");
    }

    /** Internal: the decoder opens a layer's online phase through this. */
    @Override
    public LayerFetcher openFetcher(LayerStore sequence, DecodeOptions options, int layer, DecodeCounters counters) {
        return new SwarmLayer(sequence, options, layer, counters, cachePolicy == CachePolicy.LRU,
                switch (maintenance) {
                    case SWARM -> MaintenancePolicy.SWARM;
                    case MIN_SIZE -> MaintenancePolicy.MIN_SIZE;
                    case MIN_DIFF -> MaintenancePolicy.MIN_DIFF;
                    case OFF -> null;
                });
    }

    /** Builder for {@link Swarm}. */
    public static final class Builder {
        private CachePolicy cachePolicy = CachePolicy.COST_EFFECTIVENESS;
        private Maintenance maintenance = Maintenance.SWARM;

        private Builder() {}

        public Builder cachePolicy(CachePolicy v) {
            cachePolicy = v;
            return this;
        }

        public Builder maintenance(Maintenance v) {
            maintenance = v;
            return this;
        }

        public Swarm build() {
            return new Swarm(cachePolicy, maintenance);
        }
    }
}
