package io.kvoffload.strategy.swarm;

/**
 * What the Swarm offline phase built for one layer.
 *
 * @param layer the layer
 * @param tokens tokens clustered
 * @param clusters clusters in all
 * @param coActivationClusters clusters formed by Algorithm 1 (the rest group entries no co-activation
 *     placed, by position)
 * @param coActivationShare share of the tokens in at least one co-activation cluster, 0..1; below
 *     {@link #LOW_CO_ACTIVATION_SHARE} the library logs a WARN: the index is then in effect
 *     positional blocks
 * @param meanClusterSize mean members per cluster
 * @param replicationFactor stored entries / tokens (copies across clusters)
 * @param tau the radius used
 * @param clusterMillis profiling and clustering time
 * @param writeMillis time to write the cluster extents
 * @param medoidIndexBytes DRAM of the medoid index (medoid keys, all KV heads)
 * @param layoutBytes DRAM of the route table (extents, per-entry checksums, replica map)
 */
public record ClusterSummary(int layer, int tokens, int clusters, int coActivationClusters, double coActivationShare,
        double meanClusterSize, double replicationFactor, double tau, long clusterMillis, long writeMillis,
        long medoidIndexBytes, long layoutBytes) {

    /** Below this share of co-activation-clustered tokens the offline phase warns (1%). */
    public static final double LOW_CO_ACTIVATION_SHARE = 0.01;

    /** Whether co-activation clustered almost nothing ({@link #coActivationShare} below {@link #LOW_CO_ACTIVATION_SHARE}). */
    public boolean lowCoActivation() {
        return coActivationShare < LOW_CO_ACTIVATION_SHARE;
    }
}
