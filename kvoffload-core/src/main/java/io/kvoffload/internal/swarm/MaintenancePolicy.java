package io.kvoffload.internal.swarm;

/**
 * Where a token that leaves the local window goes ({@link OnlineClusterMaintenance}). {@link #SWARM}
 * is the paper's mechanism; the other two are the comparison policies of Swarm's Table 5.
 */
public enum MaintenancePolicy {
    /**
     * Swarm Eq. 9: the token joins every cluster whose distance {@code d(e, C) = 1 − f(e, m_C) / W}
     * is below τ ({@code f} the window steps in which the token and the cluster's medoid were both
     * activated, {@code W} the steps the token was observed), replicating it; when none is, the token
     * becomes the medoid of a new cluster.
     */
    SWARM,
    /**
     * Table 5's Min-Size: exactly one cluster, the smallest one (ties: lowest id), "based solely on
     * cluster size". Never creates a cluster.
     */
    MIN_SIZE,
    /**
     * Table 5's Min-Diff: exactly one cluster, the one whose medoid is most similar to the token,
     * "based on similarity to the cluster medoid". The paper does not say which similarity; here it
     * is the smallest key difference (the caller's {@link OnlineClusterMaintenance.KeyDifference},
     * e.g. the L2 distance of the keys over all KV heads), the embedding similarity Swarm argues
     * co-activation improves on. Ties: lowest id. Never creates a cluster.
     */
    MIN_DIFF
}
