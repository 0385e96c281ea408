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
 * @param readSizeCount reads by size: element b counts reads of {@code [2^b, 2^(b+1))} bytes
 * @param readSizeBytes bytes of those reads, by the same buckets
 */
public record DecodeStats(long steps, long selectNanos, long ioNanos, long bytesRead, long readRequests,
        long tokensFetched, long tokensCached, long tokensWindow, long clustersSelected, long cacheHits,
        long cacheMisses, long cacheBytes, long windowBytes, long[] readSizeCount, long[] readSizeBytes) {

    public DecodeStats {
        readSizeCount = readSizeCount.clone();
        readSizeBytes = readSizeBytes.clone();
    }

    @Override
    public long[] readSizeCount() {
        return readSizeCount.clone();
    }

    @Override
    public long[] readSizeBytes() {
        return readSizeBytes.clone();
    }

    /** Share of selected clusters found in the cache. */
    public double cacheHitRate() {
        long n = cacheHits + cacheMisses;
        return n == 0 ? 0 : (double) cacheHits / n;
    }
}
