package io.kvoffload.strategy.swarm;

import io.kvoffload.DecodeOptions;
import io.kvoffload.KvSequence;
import io.kvoffload.internal.decode.DecodeCounters;
import io.kvoffload.internal.decode.LayerFetcher;
import io.kvoffload.internal.sequence.SequenceHooks;
import io.kvoffload.internal.decode.PipelineStrategy;
import io.kvoffload.internal.sequence.SequenceAccess;
import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.swarm.SwarmLayouts;
import java.util.List;
import io.kvoffload.internal.swarm.MaintenancePolicy;
import io.kvoffload.internal.swarm.SwarmLayer;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.strategy.LayerContext;
import io.kvoffload.strategy.LayerSelector;
import io.kvoffload.strategy.SelectionStrategy;

/**
 * Swarm [Swarm] as a strategy, the decoders' default: co-activation clusters laid out by
 * {@link #clusterLayer(KvSequence, int, List, ClusterOptions)} (the offline phase needs the activations or queries the engine
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
     * not tell. Use {@link #clusterLayerFromQueries} or {@link #clusterLayer(KvSequence, int, List, ClusterOptions)}.
     */
    @Override
    public void layOut(KvSequence sequence, int layer) {
        throw new UnsupportedOperationException("swarm lays a layer out from observed activations: call"
                + " Swarm.clusterLayerFromQueries(sequence, layer, queries, options) or clusterLayer(sequence, layer,"
                + " activationSets, options) for layer " + layer + " of sequence " + sequence.id());
    }

    /** Refused: Swarm's selection runs inside the pipeline (clusters, replicas, cache), not as a position list. */
    @Override
    public LayerSelector openLayer(LayerContext context) {
        throw new UnsupportedOperationException("swarm selects clusters inside the decoder's pipeline; pass it to"
                + " DecodeOptions.Builder.strategy, not as a LayerSelector");
    }

    /**
     * Swarm's offline phase for {@code layer} of a writable sequence, from activation sets the
     * engine observed: for each profiled query (e.g. sampled prefill queries), the token positions
     * it activated (its top-k). Clusters co-activated tokens (Algorithm 1), spreads every cluster
     * over all SSDs (Eq. 7), writes one extent per cluster per SSD and builds the DRAM medoid index.
     * {@link KvSequence#commit} persists it.
     *
     * @param activationSets 1..{@value io.kvoffload.internal.swarm.CoActivationProfile#MAX_QUERIES}
     *     sets of positions in {@code 0..tokenCount(layer)-1}
     */
    public static ClusterSummary clusterLayer(KvSequence sequence, int layer, List<int[]> activationSets,
            ClusterOptions options) {
        return layouts(sequence).fromActivationSets(layer, activationSets, options);
    }

    /**
     * Swarm's offline phase for {@code layer} from queries: the library computes each query's exact
     * top activations ({@code options.sparsity()} of the tokens; sinks and the local window excluded)
     * over the stored keys, then clusters as {@link #clusterLayer(KvSequence, int, List, ClusterOptions)}
     * does.
     *
     * @param queries each {@code queryHeads × headDim} floats, head after head
     */
    public static ClusterSummary clusterLayerFromQueries(KvSequence sequence, int layer, List<float[]> queries,
            ClusterOptions options) {
        return layouts(sequence).fromQueries(layer, queries, options);
    }

    /**
     * Lays {@code layer} out by clusters the caller chose (e.g. fixed positional groups for engines
     * that select single tokens, or a clustering computed elsewhere): cluster {@code c} holds the
     * token positions {@code clusters[c]}, its first element is its medoid (what the decoder's
     * medoid index scores), and its members are placed over the SSDs in the given order by
     * {@code options.placement()} (Eq. 7 round robin by default). A token may appear in several
     * clusters (a replica, stored once per cluster). Other options are not used. Every entry gets a
     * checksum and the DRAM medoid index is built; {@link KvSequence#commit} persists it.
     *
     * @param clusters 1..2^30 non-empty clusters of distinct positions in {@code 0..tokenCount(layer)-1},
     *     together covering every one of them
     */
    public static ClusterSummary clusterLayer(KvSequence sequence, int layer, int[][] clusters,
            ClusterOptions options) {
        return layouts(sequence).fromClusters(layer, clusters, options);
    }

    /** Clusters of {@code layer} (0 if it is not clustered). */
    public static int clusterCount(KvSequence sequence, int layer) {
        SwarmLayouts l = layouts(sequence);
        ClusterLayout cl = l.layout(layer);
        return cl == null ? 0 : cl.clusterCount();
    }

    /** Token positions of a cluster of {@code layer}, in storage order. */
    public static int[] clusterMembers(KvSequence sequence, int layer, int cluster) {
        return clusterOf(sequence, layer, cluster).members(cluster);
    }

    /** The medoid (representative token) of a cluster of {@code layer}. */
    public static int clusterMedoid(KvSequence sequence, int layer, int cluster) {
        return clusterOf(sequence, layer, cluster).medoid(cluster);
    }

    private static ClusterLayout clusterOf(KvSequence sequence, int layer, int cluster) {
        ClusterLayout cl = layouts(sequence).layout(layer);
        Checks.index("cluster", cluster, cl == null ? 0 : cl.clusterCount());
        return cl;
    }

    private static SwarmLayouts layouts(KvSequence sequence) {
        SequenceHooks hooks = SequenceAccess.of(sequence);
        hooks.checkOpen();
        return SwarmLayouts.of(hooks);
    }

    /** Internal: the decoder opens a layer's online phase through this. */
    @Override
    public LayerFetcher openFetcher(SequenceHooks sequence, DecodeOptions options, int layer, DecodeCounters counters) {
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
