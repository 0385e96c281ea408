package io.kvoffload.internal.storage;

import java.util.function.IntUnaryOperator;

/**
 * What the storage needs to lay a layer out by cluster: for each cluster its medoid and, per
 * device, the tokens of its share in extent order (Swarm Eq. 7 decides which device holds which
 * member; {@code io.kvoffload.internal.swarm.ClusterPlacement} computes it).
 */
public interface ClusterPlan {
    /** Tokens {@code [0, clusteredTokens())} must each appear in at least one cluster. */
    int clusteredTokens();

    int clusterCount();

    /** The radius τ the clustering used, in [0, 1). */
    double tau();

    /** Clusters {@code 0..coActivationClusters()-1} came from Algorithm 1, the rest group isolated entries. */
    int coActivationClusters();

    int medoid(int cluster);

    /** The cluster's tokens stored on {@code device}, in slot order (may be empty). */
    int[] tokensOn(int cluster, int device);

    /** Where a plan puts each cluster's tokens: per (cluster, device), the tokens in slot order. */
    @FunctionalInterface
    interface Placement {
        int[] tokensOn(int cluster, int device);
    }

    /**
     * A plan from its parts. Every producer (the Swarm offline phase, caller-given units, the
     * replica spread) is a clustering's figures plus a placement, so they share this one record.
     */
    static ClusterPlan of(int clusteredTokens, int clusterCount, double tau, int coActivationClusters,
            IntUnaryOperator medoid, Placement placement) {
        return new Parts(clusteredTokens, clusterCount, tau, coActivationClusters, medoid, placement);
    }

    /** The same clusters placed by {@code placement}. */
    default ClusterPlan placedBy(Placement placement) {
        return of(clusteredTokens(), clusterCount(), tau(), coActivationClusters(), this::medoid, placement);
    }

    /** {@link #of}'s plan; medoids and placement are asked lazily. */
    record Parts(int clusteredTokens, int clusterCount, double tau, int coActivationClusters, IntUnaryOperator medoids,
            Placement placement) implements ClusterPlan {
        @Override
        public int medoid(int cluster) {
            return medoids.applyAsInt(cluster);
        }

        @Override
        public int[] tokensOn(int cluster, int device) {
            return placement.tokensOn(cluster, device);
        }
    }
}
