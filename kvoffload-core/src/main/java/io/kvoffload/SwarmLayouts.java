package io.kvoffload;

import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.storage.ClusterPlan;
import io.kvoffload.internal.swarm.Clustering;
import io.kvoffload.internal.swarm.CoActivationProfile;
import io.kvoffload.internal.swarm.MedoidIndex;
import java.lang.foreign.Arena;
import java.util.List;
import java.util.function.IntFunction;

/**
 * Swarm's offline phase on a sequence: clusters a layer (from activation sets, from queries, or as
 * the caller chose), has the clusters laid out, and keeps each layer's DRAM medoid index. It sees
 * the sequence only through its layouts, a {@link PlanWriter} and {@link LayerViews}.
 */
final class SwarmLayouts implements AutoCloseable {
    /** Profiling from queries keeps a layer's keys in memory up to this size (else it streams them from the SSDs). */
    private static final long PROFILE_KEYS_IN_MEMORY = 1L << 30;

    /** Writes and installs a plan's cluster layout for a layer of the sequence. */
    @FunctionalInterface
    interface PlanWriter {
        void apply(int layer, ClusterPlan plan);
    }

    /** The first {@code tokens} tokens of a layer of the sequence as a key/value view. */
    @FunctionalInterface
    interface LayerViews {
        SequenceLayerKv open(int layer, int tokens);
    }

    private final String id;
    private final KvShape shape;
    private final int devices;
    private final IntFunction<ClusterLayout> layouts;
    private final PlanWriter planWriter;
    private final LayerViews views;
    private final MedoidIndex[] medoidIndex;
    /** The layout each medoid index was built or extended for. */
    private final ClusterLayout[] indexLayout;
    private Arena indexArena;

    /** @param layouts the cluster layout of a layer of the sequence, or null */
    SwarmLayouts(String id, KvShape shape, int devices, IntFunction<ClusterLayout> layouts, PlanWriter planWriter,
            LayerViews views) {
        this.id = id;
        this.shape = shape;
        this.devices = devices;
        this.layouts = layouts;
        this.planWriter = planWriter;
        this.views = views;
        this.medoidIndex = new MedoidIndex[shape.layers()];
        this.indexLayout = new ClusterLayout[shape.layers()];
    }

    /** Clusters the layer's {@code tokens} tokens from observed activation sets. */
    ClusterSummary fromActivationSets(int layer, int tokens, List<int[]> activationSets, ClusterOptions options) {
        long t0 = System.nanoTime();
        CoActivationProfile profile = SwarmOfflinePhase.fromActivationSets(tokens, activationSets, options);
        return build(layer, SwarmOfflinePhase.cluster(profile, options), options.placement(), t0);
    }

    /** Clusters the layer's {@code tokens} tokens from the exact top activations of {@code queries}. */
    ClusterSummary fromQueries(int layer, int tokens, List<float[]> queries, ClusterOptions options) {
        long t0 = System.nanoTime();
        CoActivationProfile profile;
        try (SequenceLayerKv kv = views.open(layer, tokens).keysInMemory(PROFILE_KEYS_IN_MEMORY)) {
            profile = SwarmOfflinePhase.fromQueries(kv, queries, shape.queryHeads(), options);
        }
        return build(layer, SwarmOfflinePhase.cluster(profile, options), options.placement(), t0);
    }

    /** Lays the layer's {@code tokens} tokens out by clusters the caller chose. */
    ClusterSummary fromClusters(int layer, int tokens, int[][] clusters, ClusterOptions options) {
        long t0 = System.nanoTime();
        return build(layer, SwarmOfflinePhase.fromClusters(tokens, clusters, options), options.placement(), t0);
    }

    private ClusterSummary build(int layer, Clustering clustering, ClusterOptions.Placement placement, long t0) {
        long t1 = System.nanoTime();
        planWriter.apply(layer, SwarmOfflinePhase.plan(clustering, devices, placement));
        long t2 = System.nanoTime();
        ClusterLayout cl = layouts.apply(layer);
        MedoidIndex index = medoidIndex(layer);
        return new ClusterSummary(layer, cl.clusteredTokens(), cl.clusterCount(), cl.coActivationClusters(),
                (double) cl.storedEntries() / cl.clusterCount(), (double) cl.storedEntries() / cl.clusteredTokens(),
                cl.tau(), (t1 - t0) / 1_000_000, (t2 - t1) / 1_000_000, index.memoryBytes(), cl.memoryBytes());
    }

    /**
     * The layer's DRAM medoid index, built on first use (after a restart, from the persisted
     * clustering and the medoids' keys read back from the SSDs).
     */
    MedoidIndex medoidIndex(int layer) {
        ClusterLayout cl = layouts.apply(layer);
        if (cl == null) {
            throw new IllegalStateException("layer " + layer + " of sequence " + id + " is not clustered; call"
                    + " clusterLayer first");
        }
        MedoidIndex index = medoidIndex[layer];
        if (index == null || indexLayout[layer] != cl) {
            if (indexArena == null) {
                indexArena = Arena.ofShared();
            }
            try (SequenceLayerKv kv = views.open(layer, cl.clusteredTokens()).keysOf(cl.medoids())) {
                index = MedoidIndex.build(SwarmOfflinePhase.restore(cl), kv, shape.queryHeads(), indexArena);
            }
            medoidIndex[layer] = index;
            indexLayout[layer] = cl;
        }
        return index;
    }

    /** Installs a medoid index the decoder extended for {@code layout} (so it is not rebuilt from the SSDs). */
    void install(int layer, MedoidIndex index, ClusterLayout layout) {
        medoidIndex[layer] = index;
        indexLayout[layer] = layout;
    }

    /** The layer is no longer clustered. */
    void forget(int layer) {
        medoidIndex[layer] = null;
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
