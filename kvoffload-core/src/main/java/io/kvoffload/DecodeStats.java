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
 * @param waitNanos time spent in {@link KvView#await()}: the part of the fetches not hidden behind
 *     the caller's compute
 * @param fetchLatency per fetch, from {@code prefetch} until {@code await} returned
 * @param selectLatency per fetch, scoring, selecting and scheduling before the submission
 * @param ioLatency per fetch that read from the SSDs, from the submission until its last read completed
 * @param unclusteredLayers layers this decoder opened that were never laid out by a strategy: every
 *     token of such a layer is kept in DRAM and attended (a WARN is logged and a
 *     {@link KvDegradation.Kind#UNCLUSTERED_LAYER} reported when this decoder opened the layer)
 *
 * <p>For KVSwap layers, {@code clustersSelected} counts predicted groups and {@code tokensCached}
 * rows served from the reuse buffer.
 */
public record DecodeStats(long steps, long selectNanos, long ioNanos, long bytesRead, long readRequests,
        long tokensFetched, long tokensCached, long tokensWindow, long clustersSelected, long cacheHits,
        long cacheMisses, long cacheBytes, long windowBytes, long[] readSizeCount, long[] readSizeBytes,
        long reuseHits, long reuseMisses, long reuseBytes, long waitNanos, LatencyHistogram fetchLatency,
        LatencyHistogram selectLatency, LatencyHistogram ioLatency, int unclusteredLayers) {

    public DecodeStats {
        readSizeCount = readSizeCount.clone();
        readSizeBytes = readSizeBytes.clone();
        java.util.Objects.requireNonNull(fetchLatency, "fetchLatency");
        java.util.Objects.requireNonNull(selectLatency, "selectLatency");
        java.util.Objects.requireNonNull(ioLatency, "ioLatency");
    }

    /**
     * The counters accumulated since {@code earlier} (a snapshot of the same decoder); the DRAM
     * gauges ({@code cacheBytes}, {@code windowBytes}, {@code reuseBytes}) are this snapshot's.
     * Benchmarks use it to leave warm-up steps out.
     */
    public DecodeStats since(DecodeStats earlier) {
        return combine(earlier, -1, fetchLatency.since(earlier.fetchLatency),
                selectLatency.since(earlier.selectLatency), ioLatency.since(earlier.ioLatency));
    }

    /**
     * The counters of two decoders together (a batch's sequences, say): every counter, gauge and
     * latency distribution summed; {@code unclusteredLayers} is the larger of the two.
     */
    public DecodeStats plus(DecodeStats other) {
        return combine(other, +1, fetchLatency.plus(other.fetchLatency), selectLatency.plus(other.selectLatency),
                ioLatency.plus(other.ioLatency));
    }

    /** {@code this + sign × other}, counter by counter; gauges are this snapshot's when subtracting. */
    private DecodeStats combine(DecodeStats o, int sign, LatencyHistogram fetch, LatencyHistogram select,
            LatencyHistogram io) {
        long[] count = readSizeCount.clone();
        long[] bytes = readSizeBytes.clone();
        for (int i = 0; i < count.length && i < o.readSizeCount.length; i++) {
            count[i] += sign * o.readSizeCount[i];
            bytes[i] += sign * o.readSizeBytes[i];
        }
        boolean sum = sign > 0;
        return new DecodeStats(steps + sign * o.steps, selectNanos + sign * o.selectNanos, ioNanos + sign * o.ioNanos,
                bytesRead + sign * o.bytesRead, readRequests + sign * o.readRequests,
                tokensFetched + sign * o.tokensFetched, tokensCached + sign * o.tokensCached,
                tokensWindow + sign * o.tokensWindow, clustersSelected + sign * o.clustersSelected,
                cacheHits + sign * o.cacheHits, cacheMisses + sign * o.cacheMisses,
                sum ? cacheBytes + o.cacheBytes : cacheBytes, sum ? windowBytes + o.windowBytes : windowBytes, count,
                bytes, reuseHits + sign * o.reuseHits, reuseMisses + sign * o.reuseMisses,
                sum ? reuseBytes + o.reuseBytes : reuseBytes, waitNanos + sign * o.waitNanos, fetch, select, io,
                sum ? Math.max(unclusteredLayers, o.unclusteredLayers) : unclusteredLayers);
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

    /** Every counter by name; the read sizes as {@code size-bucket: reads/bytes} for the buckets used. */
    @Override
    public String toString() {
        StringBuilder sizes = new StringBuilder("[");
        for (int b = 0; b < readSizeCount.length; b++) {
            if (readSizeCount[b] != 0) {
                sizes.append(sizes.length() > 1 ? ", " : "").append(bucketName(b)).append(": ")
                        .append(readSizeCount[b]).append(" reads/").append(readSizeBytes[b]).append(" B");
            }
        }
        sizes.append(']');
        return "DecodeStats{steps=" + steps + ", selectNanos=" + selectNanos + ", ioNanos=" + ioNanos + ", waitNanos="
                + waitNanos + ", bytesRead=" + bytesRead + ", readRequests=" + readRequests + ", tokensFetched="
                + tokensFetched + ", tokensCached=" + tokensCached + ", tokensWindow=" + tokensWindow
                + ", clustersSelected=" + clustersSelected + ", cacheHits=" + cacheHits + ", cacheMisses=" + cacheMisses
                + ", cacheBytes=" + cacheBytes + ", windowBytes=" + windowBytes + ", reuseHits=" + reuseHits
                + ", reuseMisses=" + reuseMisses + ", reuseBytes=" + reuseBytes + ", unclusteredLayers="
                + unclusteredLayers + ", fetch={" + fetchLatency + "}, select={" + selectLatency + "}, io={" + ioLatency
                + "}, readSizes=" + sizes + "}";
    }

    /** {@code 4KiB+} for the bucket of reads of [4 KiB, 8 KiB). */
    private static String bucketName(int b) {
        long low = 1L << b;
        return low >= 1 << 20 ? (low >> 20) + "MiB+" : low >= 1 << 10 ? (low >> 10) + "KiB+" : low + "B+";
    }
}
