package io.kvoffload;

/**
 * Counters of a {@link KvDecoder} since it opened.
 *
 * @param steps fetches completed (one per layer per decoding step)
 * @param selectNanos time spent scoring, selecting and scheduling, before the batch was submitted
 * @param ioNanos time from submission until the last read completed (as seen by {@link KvView#await()},
 *     which verifies and gathers the earlier reads meanwhile)
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
 * @param reuseHits KVSwap: requested groups found in the reuse buffer (no I/O)
 * @param reuseMisses KVSwap: requested groups read from the SSDs
 * @param reuseBytes KVSwap: DRAM holding reuse-buffer slots and compressed K caches now
 *
 * <p>For KVSwap layers, {@code clustersSelected} counts predicted groups and {@code tokensCached}
 * rows served from the reuse buffer.
 */
public record DecodeStats(long steps, long selectNanos, long ioNanos, long bytesRead, long readRequests,
        long tokensFetched, long tokensCached, long tokensWindow, long clustersSelected, long cacheHits,
        long cacheMisses, long cacheBytes, long windowBytes, long[] readSizeCount, long[] readSizeBytes,
        long reuseHits, long reuseMisses, long reuseBytes) {

    public DecodeStats {
        readSizeCount = readSizeCount.clone();
        readSizeBytes = readSizeBytes.clone();
    }

    /**
     * The counters accumulated since {@code earlier} (a snapshot of the same decoder); the DRAM
     * gauges ({@code cacheBytes}, {@code windowBytes}, {@code reuseBytes}) are this snapshot's.
     * Benchmarks use it to leave warm-up steps out.
     */
    public DecodeStats since(DecodeStats earlier) {
        long[] count = readSizeCount.clone();
        long[] bytes = readSizeBytes.clone();
        for (int i = 0; i < count.length && i < earlier.readSizeCount.length; i++) {
            count[i] -= earlier.readSizeCount[i];
            bytes[i] -= earlier.readSizeBytes[i];
        }
        return new DecodeStats(steps - earlier.steps, selectNanos - earlier.selectNanos, ioNanos - earlier.ioNanos,
                bytesRead - earlier.bytesRead, readRequests - earlier.readRequests, tokensFetched - earlier.tokensFetched,
                tokensCached - earlier.tokensCached, tokensWindow - earlier.tokensWindow,
                clustersSelected - earlier.clustersSelected, cacheHits - earlier.cacheHits,
                cacheMisses - earlier.cacheMisses, cacheBytes, windowBytes, count, bytes, reuseHits - earlier.reuseHits,
                reuseMisses - earlier.reuseMisses, reuseBytes);
    }

    /** KVSwap's reuse rate: share of requested groups found in the reuse buffer (0 before any request). */
    public double reuseHitRate() {
        long n = reuseHits + reuseMisses;
        return n == 0 ? 0 : (double) reuseHits / n;
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
