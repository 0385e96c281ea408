package io.kvoffload.internal.storage;

import java.util.function.IntToLongFunction;
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

    /**
     * The step of cluster {@code cluster}'s head-sharded rotation ({@link HeadShards#rotations}):
     * clusters with the same step put each head group on the same device. By default each cluster its
     * own step (consecutive clusters one device further); a packed plan gives a run of small
     * neighbouring units one step, so their slices of a head group lie side by side on one SSD.
     */
    default long rotationStep(int cluster) {
        return cluster;
    }

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
        return of(clusteredTokens, clusterCount, tau, coActivationClusters, medoid, placement, c -> c);
    }

    /** {@link #of} with {@code rotationSteps} as the plan's {@link #rotationStep}. */
    static ClusterPlan of(int clusteredTokens, int clusterCount, double tau, int coActivationClusters,
            IntUnaryOperator medoid, Placement placement, IntToLongFunction rotationSteps) {
        return new Parts(clusteredTokens, clusterCount, tau, coActivationClusters, medoid, placement, rotationSteps);
    }

    /** The same clusters placed by {@code placement}. */
    default ClusterPlan placedBy(Placement placement) {
        return of(clusteredTokens(), clusterCount(), tau(), coActivationClusters(), this::medoid, placement,
                this::rotationStep);
    }

    /** {@link #of}'s plan; medoids and placement are asked lazily. */
    record Parts(int clusteredTokens, int clusterCount, double tau, int coActivationClusters, IntUnaryOperator medoids,
            Placement placement, IntToLongFunction rotationSteps) implements ClusterPlan {
        @Override
        public int medoid(int cluster) {
            return medoids.applyAsInt(cluster);
        }

        @Override
        public int[] tokensOn(int cluster, int device) {
            return placement.tokensOn(cluster, device);
        }

        @Override
        public long rotationStep(int cluster) {
            return rotationSteps.applyAsLong(cluster);
        }
    }
}
