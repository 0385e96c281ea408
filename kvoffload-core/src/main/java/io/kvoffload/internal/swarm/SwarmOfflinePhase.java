package io.kvoffload.internal.swarm;

import io.kvoffload.strategy.swarm.ClusterOptions;
import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.storage.ClusterPlan;
import io.kvoffload.internal.storage.ReplicaSpread;
import io.kvoffload.internal.sequence.SequenceLayerKv;
import io.kvoffload.internal.sequence.UnitLayouts;
import java.util.BitSet;
import java.util.List;

/**
 * Swarm's offline phase for one layer of a stored sequence [Swarm §5.1–5.2]: profile
 * co-activation, cluster with Algorithm 1, place with Eq. 7. The result is a {@link ClusterPlan}
 * the storage writes as cluster extents.
 */
final class SwarmOfflinePhase {
    private SwarmOfflinePhase() {}

    static Clustering cluster(CoActivationProfile profile, ClusterOptions o) {
        ClusterRadius radius = o.radiusQuantile() > 0 ? ClusterRadius.quantile(o.radiusQuantile(), 100_000, 1)
                : ClusterRadius.fixed(o.radius());
        ClusteringConfig config = new ClusteringConfig(radius, o.maxClusterSize(), o.maxReplicas(),
                IsolatedEntryPolicy.POSITIONAL_BLOCKS, 16, Math.min(256, Runtime.getRuntime().availableProcessors()));
        return new CoActivationClustering(config).cluster(profile);
    }

    static CoActivationNormaliser normaliser(ClusterOptions o) {
        return o.perQueryNormaliser() ? CoActivationNormaliser.perQuery() : CoActivationNormaliser.sumOfCounts();
    }

    static CoActivationProfile fromActivationSets(int tokens, List<int[]> sets, ClusterOptions o) {
        return CoActivationProfile.fromActivationSets(tokens, sets, normaliser(o));
    }

    static CoActivationProfile fromQueries(SequenceLayerKv keys, List<float[]> queries, int queryHeads,
            ClusterOptions o) {
        int n = keys.tokens();
        BitSet excluded = new BitSet(n);
        excluded.set(0, Math.min(n, o.sinkTokens()));
        excluded.set(Math.max(0, n - o.windowTokens()), n);
        if (excluded.cardinality() == n) {
            excluded.clear(); // a context shorter than sinks + window: profile everything
        }
        return CoActivationProfile.fromQueries(keys, queries, queryHeads, o.sparsity(), excluded, normaliser(o),
                Math.min(256, Runtime.getRuntime().availableProcessors()));
    }

    /** The Eq. 7 placement of a clustering over the engine's devices, as the storage consumes it. */
    static ClusterPlan plan(Clustering clustering, int devices) {
        return plan(clustering, devices, ClusterOptions.Placement.ROUND_ROBIN);
    }

    /** {@link #plan(Clustering, int)} with a placement choice (FIRST_DEVICE is the No-Balance ablation). */
    static ClusterPlan plan(Clustering clustering, int devices, ClusterOptions.Placement choice) {
        ClusterPlacement placement = choice == ClusterOptions.Placement.FIRST_DEVICE
                ? ClusterPlacement.firstDevice(clustering, devices) : ClusterPlacement.of(clustering, devices);
        ClusterPlan eq7 = ClusterPlan.of(clustering.entries(), clustering.clusterCount(), clustering.stats().tau(),
                clustering.coActivationClusters(), clustering::medoid, placement::entriesOn);
        // Eq. 7 fixes how many members of a cluster each device holds; the copies of one token go to
        // distinct devices where those counts allow (the No-Balance ablation keeps Eq. 7's raw order).
        return choice == ClusterOptions.Placement.FIRST_DEVICE ? eq7 : ReplicaSpread.of(eq7, devices).plan();
    }

    /**
     * A clustering from caller-given clusters ({@code Swarm.clusterLayer(sequence, layer, int[][], options)}):
     * each cluster's first element is its medoid. Validated here so the message names the caller's
     * argument; τ is reported as {@code options.radius()}.
     */
    static Clustering fromClusters(int tokens, int[][] clusters, ClusterOptions options) {
        int[] members = new int[UnitLayouts.checkUnits("clusters", tokens, clusters)];
        int[] offsets = new int[clusters.length + 1];
        int[] medoids = new int[clusters.length];
        int k = 0;
        for (int c = 0; c < clusters.length; c++) {
            System.arraycopy(clusters[c], 0, members, k, clusters[c].length);
            k += clusters[c].length;
            medoids[c] = clusters[c][0];
            offsets[c + 1] = k;
        }
        return Clustering.restore(tokens, offsets, members, medoids, clusters.length, options.radius());
    }

    /** The clustering a persisted layout describes (members in storage order). */
    static Clustering restore(ClusterLayout layout) {
        return Clustering.restore(layout.clusteredTokens(), layout.memberOffsets(), layout.allMembers(),
                layout.medoids(), layout.coActivationClusters(), layout.tau());
    }
}
