package io.kvoffload.internal.swarm;

import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.internal.sequence.SequenceHooks;
import io.kvoffload.internal.sequence.SequenceLayerKv;
import io.kvoffload.internal.sequence.UnitLayouts;
import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.storage.ClusterPlan;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.strategy.swarm.ClusterOptions;
import io.kvoffload.strategy.swarm.ClusterSummary;
import java.lang.foreign.Arena;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Swarm's offline phase on one sequence [Swarm §5]: clusters a layer (from activation sets, from
 * queries, or as the caller chose), writes the cluster layout (Eq. 7 placement, one extent per
 * cluster and device, a checksum per entry), and keeps each layer's DRAM medoid index for the
 * decoders. One per sequence ({@link #of}), attached to it through its {@link SequenceHooks} and
 * closed with it.
 */
public final class SwarmLayouts implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(SwarmLayouts.class);
    /** Profiling from queries keeps a layer's keys in memory up to this size (else it streams them from the SSDs). */
    private static final long PROFILE_KEYS_IN_MEMORY = 1L << 30;

    private final SequenceHooks hooks;
    private final KvSequence sequence;
    private final KvShape shape;
    private final MedoidIndex[] medoidIndex;
    /** The layout each medoid index was built or extended for. */
    private final ClusterLayout[] indexLayout;
    private Arena indexArena;

    private SwarmLayouts(SequenceHooks hooks) {
        this.hooks = hooks;
        this.sequence = hooks.sequence();
        this.shape = sequence.shape();
        this.medoidIndex = new MedoidIndex[shape.layers()];
        this.indexLayout = new ClusterLayout[shape.layers()];
    }

    /** The sequence's Swarm state. */
    public static SwarmLayouts of(SequenceHooks hooks) {
        return hooks.attachment(SwarmLayouts.class, SwarmLayouts::new);
    }

    /** Clusters the layer from observed activation sets. */
    public ClusterSummary fromActivationSets(int layer, List<int[]> activationSets, ClusterOptions options) {
        return hooks.exclusive(() -> {
            int tokens = checkOffline(layer, "activationSets", activationSets, options);
            long t0 = System.nanoTime();
            CoActivationProfile profile = SwarmOfflinePhase.fromActivationSets(tokens, activationSets, options);
            return build(layer, SwarmOfflinePhase.cluster(profile, options), options.placement(), t0);
        });
    }

    /** Clusters the layer from the exact top activations of {@code queries} over its stored keys. */
    public ClusterSummary fromQueries(int layer, List<float[]> queries, ClusterOptions options) {
        return hooks.exclusive(() -> {
            int tokens = checkOffline(layer, "queries", queries, options);
            long t0 = System.nanoTime();
            CoActivationProfile profile;
            try (SequenceLayerKv kv = new SequenceLayerKv(sequence, layer, tokens).keysInMemory(PROFILE_KEYS_IN_MEMORY)) {
                profile = SwarmOfflinePhase.fromQueries(kv, queries, shape.queryHeads(), options);
            }
            return build(layer, SwarmOfflinePhase.cluster(profile, options), options.placement(), t0);
        });
    }

    /** Lays the layer out by clusters the caller chose. */
    public ClusterSummary fromClusters(int layer, int[][] clusters, ClusterOptions options) {
        return hooks.exclusive(() -> {
            int tokens = checkOffline(layer, "clusters", clusters, options);
            long t0 = System.nanoTime();
            return build(layer, SwarmOfflinePhase.fromClusters(tokens, clusters, options), options.placement(), t0);
        });
    }

    /** Checks an offline call's arguments; returns the layer's token count. */
    private int checkOffline(int layer, String inputName, Object input, Object options) {
        hooks.checkWritable();
        Checks.index("layer", layer, shape.layers());
        Checks.notNull(inputName, input);
        Checks.notNull("options", options);
        return hooks.ledger().layer(layer).tokens();
    }

    private ClusterSummary build(int layer, Clustering clustering, ClusterOptions.Placement placement, long t0) {
        long t1 = System.nanoTime();
        apply(layer, SwarmOfflinePhase.plan(clustering, hooks.store().devices().size(), placement));
        long t2 = System.nanoTime();
        ClusterLayout cl = hooks.ledger().layer(layer).clusters();
        MedoidIndex index = medoidIndex(layer);
        ClusterSummary summary = new ClusterSummary(layer, cl.clusteredTokens(), cl.clusterCount(),
                cl.coActivationClusters(), CoActivationCoverage.share(cl), (double) cl.storedEntries() / cl.clusterCount(),
                (double) cl.storedEntries() / cl.clusteredTokens(), cl.tau(), (t1 - t0) / 1_000_000, (t2 - t1) / 1_000_000,
                index.memoryBytes(), cl.memoryBytes());
        CoActivationCoverage.warnIfLow(LOG, summary);
        return summary;
    }

    /**
     * Lays tokens {@code [0, plan.clusteredTokens())} of {@code layer} out by cluster [Swarm §5.2]
     * through the generic unit layout ({@link UnitLayouts#install}).
     */
    public void apply(int layer, ClusterPlan plan) {
        UnitLayouts.install(hooks, layer, plan);
    }

    /**
     * Online maintenance (Eq. 9) grew the layer's clusters: {@code grown} extends the current layout
     * with appended entries (and new clusters) and shares all its extents; {@code index} is the
     * medoid index the decoder extended for it. Blocks whose tokens are now all clustered are
     * retired; the next commit persists the grown layout.
     */
    public void extend(int layer, ClusterLayout grown, MedoidIndex index) {
        hooks.checkWritable();
        hooks.ledger().extendClusters(layer, grown);
        hooks.changed();
        medoidIndex[layer] = index;
        indexLayout[layer] = grown;
    }

    /** The layer's cluster layout, or null. */
    public ClusterLayout layout(int layer) {
        Checks.index("layer", layer, shape.layers());
        return hooks.ledger().layer(layer).clusters();
    }

    /**
     * The layer's DRAM medoid index, built on first use (after a restart, from the persisted
     * clustering and the medoids' keys read back from the SSDs).
     */
    public MedoidIndex medoidIndex(int layer) {
        ClusterLayout cl = layout(layer);
        if (cl == null) {
            throw new IllegalStateException("layer " + layer + " of sequence " + sequence.id() + " is not clustered;"
                    + " call Swarm.clusterLayer first");
        }
        MedoidIndex index = medoidIndex[layer];
        if (index == null || indexLayout[layer] != cl) {
            if (indexArena == null) {
                indexArena = Arena.ofShared();
            }
            try (SequenceLayerKv kv = new SequenceLayerKv(sequence, layer, cl.clusteredTokens()).keysOf(cl.medoids())) {
                index = MedoidIndex.build(SwarmOfflinePhase.restore(cl), kv, shape.queryHeads(), indexArena);
            }
            medoidIndex[layer] = index;
            indexLayout[layer] = cl;
        }
        return index;
    }

    /** Frees the medoid indexes' memory. */
    @Override
    public void close() {
        if (indexArena != null) {
            indexArena.close();
            indexArena = null;
        }
    }
}
