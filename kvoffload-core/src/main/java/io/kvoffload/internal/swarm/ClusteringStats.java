package io.kvoffload.internal.swarm;

/**
 * What one clustering run produced and cost.
 *
 * @param entries entries of the layer
 * @param clusters all clusters
 * @param coActivationClusters clusters grown by Algorithm 1 (ids {@code 0..coActivationClusters−1})
 * @param isolatedClusters clusters of isolated entries (the ids after those)
 * @param meanClusterSize memberships / clusters
 * @param maxClusterSize largest cluster
 * @param cappedClusters clusters that reached the size cap while candidates were left
 * @param memberships sum of cluster sizes (an entry in two clusters counts twice)
 * @param replicationFactor memberships / entries (1 means no replica)
 * @param storageOverhead extra SSD space for replicas: {@code replicationFactor − 1}
 * @param tau the radius used
 * @param pairThreshold the least co-activation count within τ
 * @param frequentEntries entries activated at least {@code pairThreshold} times
 * @param edges pairs within τ
 * @param candidatesChecked candidate pairs the search verified
 * @param isolatedEntries entries with no neighbour within τ
 * @param neverActivatedEntries entries no profiled query activated (a subset of the isolated ones)
 * @param graphBytes memory of the within-radius graph (freed when clustering returns)
 * @param resultBytes memory of the clustering result
 * @param radiusNanos time to resolve τ
 * @param graphNanos time to find the pairs within τ
 * @param expansionNanos time of Algorithm 1's medoid selection and expansion, and the isolated entries
 * @param totalNanos the whole build
 */
public record ClusteringStats(int entries, int clusters, int coActivationClusters, int isolatedClusters,
        double meanClusterSize, int maxClusterSize, int cappedClusters, long memberships, double replicationFactor,
        double storageOverhead, double tau, long pairThreshold, int frequentEntries, long edges, long candidatesChecked,
        int isolatedEntries, int neverActivatedEntries, long graphBytes, long resultBytes, long radiusNanos,
        long graphNanos, long expansionNanos, long totalNanos) {}
