package io.kvoffload;

/**
 * Counters of a {@link KvDecoder} since it opened.
 *
 * @param steps fetches completed (one per layer per decoding step)
 * @param selectNanos time spent scoring, selecting and scheduling, before the batch was submitted
 * @param ioNanos time from submission until the reads completed (as seen by {@link KvView#await()})
 * @param bytesRead bytes read from the SSDs
 * @param readRequests reads submitted (each a run of adjacent entries on one SSD)
 * @param tokensFetched entries read from the SSDs
 * @param tokensCached view rows served from the hot-cluster cache
 * @param tokensWindow view rows served from the sinks and the local window
 * @param clustersSelected clusters selected, summed over steps
 * @param cacheHits selected clusters that were cached
 * @param cacheMisses selected clusters that were not
 * @param cacheBytes DRAM holding cached clusters now
 * @param windowBytes DRAM holding sinks and windows now
 * @param reuseHits KVSwap: requested groups found in the reuse buffer (no I/O)
 * @param reuseMisses KVSwap: requested groups read from the SSDs
 * @param reuseBytes KVSwap: DRAM holding reuse-buffer slots and compressed K caches now
 *
 * <p>For KVSwap layers, {@code clustersSelected} counts predicted groups and {@code tokensCached}
 * rows served from the reuse buffer.
 */
public record DecodeStats(long steps, long selectNanos, long ioNanos, long bytesRead, long readRequests,
        long tokensFetched, long tokensCached, long tokensWindow, long clustersSelected, long cacheHits,
        long cacheMisses, long cacheBytes, long windowBytes, long reuseHits, long reuseMisses, long reuseBytes) {

    /** Counters without KVSwap's reuse figures (Swarm-only decoders). */
    public DecodeStats(long steps, long selectNanos, long ioNanos, long bytesRead, long readRequests,
            long tokensFetched, long tokensCached, long tokensWindow, long clustersSelected, long cacheHits,
            long cacheMisses, long cacheBytes, long windowBytes) {
        this(steps, selectNanos, ioNanos, bytesRead, readRequests, tokensFetched, tokensCached, tokensWindow,
                clustersSelected, cacheHits, cacheMisses, cacheBytes, windowBytes, 0, 0, 0);
    }

    /** KVSwap's reuse rate: share of requested groups found in the reuse buffer (0 before any request). */
    public double reuseHitRate() {
        long n = reuseHits + reuseMisses;
        return n == 0 ? 0 : (double) reuseHits / n;
    }

    /** Share of selected clusters found in the cache. */
    public double cacheHitRate() {
        long n = cacheHits + cacheMisses;
        return n == 0 ? 0 : (double) cacheHits / n;
    }
}
