package io.kvoffload.internal.swarm;

/**
 * What becomes of entries with no neighbour within the radius (density 0 in Eq. 4), among them
 * every entry the profile never saw activated. No candidate list can hold them, so Algorithm 1
 * would make each one its own cluster: a medoid per entry, a DRAM index as large as the cache and
 * one 4 KiB read per entry.
 */
public enum IsolatedEntryPolicy {
    /**
     * Group them by position: the isolated entries of each aligned block of
     * {@link ClusteringConfig#isolatedBlockSize()} tokens form one cluster, in position order. The
     * evidence for position is that neighbouring tokens tend to be attended together (the reason
     * KVSwap, Quest and InfLLM read runs of consecutive tokens), and that it costs O(N) with no
     * keys needed; grouping by key similarity would need a k-means over the keys of a million
     * entries. The medoid is the member with the most profiled activations (ties: lowest position).
     */
    POSITIONAL_BLOCKS,
    /** One cluster per isolated entry, exactly as Algorithm 1 runs to completion. */
    SINGLETONS
}
