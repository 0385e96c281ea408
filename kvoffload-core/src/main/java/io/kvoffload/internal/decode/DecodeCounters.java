package io.kvoffload.internal.decode;

import io.kvoffload.internal.obs.LatencyRecorder;

/**
 * A decoder's counters, in one place: every layer fetcher of the decoder adds to the same instance
 * (one thread uses a decoder), and {@link io.kvoffload.KvDecoder#stats()} copies them out. Gauges
 * (DRAM held, cache hit counts kept by the caches) are summed from the layers when asked for.
 */
public final class DecodeCounters {
    public long steps;
    public long selectNanos;
    public long ioNanos;
    public long bytesRead;
    public long readRequests;
    public long tokensFetched;
    /** Rows served from a layer's DRAM cache (Swarm's hot clusters, KVSwap's reuse buffer). */
    public long tokensCached;
    public long tokensWindow;
    /** Units selected: clusters (Swarm), groups (KVSwap), positions (plug-in strategies). */
    public long unitsSelected;
    /** Time the owner spent in {@code await} (fetch time not hidden behind its compute). */
    public long waitNanos;
    /** Layers opened by this decoder whose tokens were never laid out: attended from DRAM in full. */
    public int unclusteredLayers;
    /** Per fetch: prefetch until await returned; selection before submission; submission until the last read. */
    public final LatencyRecorder fetchLatency = new LatencyRecorder();
    public final LatencyRecorder selectLatency = new LatencyRecorder();
    public final LatencyRecorder ioLatency = new LatencyRecorder();
    public long reuseHits;
    public long reuseMisses;
    /** Reads by size: bucket b counts requests of [2^b, 2^(b+1)) bytes (benchmarks compare against fio at these sizes). */
    public final long[] readSizeCount = new long[40];
    public final long[] readSizeBytes = new long[40];

    /** One read of {@code length} bytes landed. */
    public void countRead(long length) {
        bytesRead += length;
        readRequests++;
        int bucket = 63 - Long.numberOfLeadingZeros(length);
        readSizeCount[bucket]++;
        readSizeBytes[bucket] += length;
    }

    /** Gauges a layer adds when stats are taken. */
    public static final class Gauges {
        public long cacheHits;
        public long cacheMisses;
        public long cacheBytes;
        public long windowBytes;
        public long reuseBytes;
    }
}
