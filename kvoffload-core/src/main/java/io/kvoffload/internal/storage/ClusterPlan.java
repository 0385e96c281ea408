package io.kvoffload.internal.storage;

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
}
