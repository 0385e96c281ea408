package io.kvoffload.strategy.swarm;

/**
 * What the Swarm offline phase built for one layer.
 *
 * @param layer the layer
 * @param tokens tokens clustered
 * @param clusters clusters in all
 * @param coActivationClusters clusters formed by Algorithm 1 (the rest group entries no co-activation
 *     placed, by position)
 * @param meanClusterSize mean members per cluster
 * @param replicationFactor stored entries / tokens (copies across clusters)
 * @param tau the radius used
 * @param clusterMillis profiling and clustering time
 * @param writeMillis time to write the cluster extents
 * @param medoidIndexBytes DRAM of the medoid index (medoid keys, all KV heads)
 * @param layoutBytes DRAM of the route table (extents, per-entry checksums, replica map)
 */
public record ClusterSummary(int layer, int tokens, int clusters, int coActivationClusters, double meanClusterSize,
        double replicationFactor, double tau, long clusterMillis, long writeMillis, long medoidIndexBytes,
        long layoutBytes) {}
