package io.kvoffload;

import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.storage.ClusterPlan;
import io.kvoffload.internal.swarm.ClusterPlacement;
import io.kvoffload.internal.swarm.ClusterRadius;
import io.kvoffload.internal.swarm.Clustering;
import io.kvoffload.internal.swarm.ClusteringConfig;
import io.kvoffload.internal.swarm.CoActivationClustering;
import io.kvoffload.internal.swarm.CoActivationNormaliser;
import io.kvoffload.internal.swarm.CoActivationProfile;
import io.kvoffload.internal.swarm.IsolatedEntryPolicy;
import java.util.BitSet;
import java.util.List;

/**
 * Swarm's offline phase for one layer of a stored sequence (papers/000 §5.1–5.2): profile
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
        ClusterPlacement placement = ClusterPlacement.of(clustering, devices);
        return new ClusterPlan() {
            @Override
            public int clusteredTokens() {
                return clustering.entries();
            }

            @Override
            public int clusterCount() {
                return clustering.clusterCount();
            }

            @Override
            public int medoid(int cluster) {
                return clustering.medoid(cluster);
            }

            @Override
            public double tau() {
                return clustering.stats().tau();
            }

            @Override
            public int coActivationClusters() {
                return clustering.coActivationClusters();
            }

            @Override
            public int[] tokensOn(int cluster, int device) {
                return placement.entriesOn(cluster, device);
            }
        };
    }

    /** The clustering a persisted layout describes (members in storage order). */
    static Clustering restore(ClusterLayout layout) {
        return Clustering.restore(layout.clusteredTokens(), layout.memberOffsets(), layout.allMembers(),
                layout.medoids(), layout.coActivationClusters(), layout.tau());
    }
}
