package io.kvoffload.internal.kvswap;

import io.kvoffload.internal.util.Checks;

/**
 * A simple model of how long the SSDs take to serve one step's group reads, used by the
 * {@link ParameterTuner} and the benchmarks in place of KVSwap's profiled I/O delay (Appendix A.3).
 *
 * <p>Each group is one request of {@code G × entryBytes} bytes ({@code [K of G tokens | V of G
 * tokens]} contiguous, one O_DIRECT read), rounded up to {@code readAlignment}. A device serves
 * {@code reads} such requests in
 * <pre>
 *   t = max(reads / iops, reads × alignUp(bytesPerRead, readAlignment) / bandwidth)
 * </pre>
 * that is, small reads are bound by IOPS and large ones by bandwidth, the two regimes of KVSwap
 * Fig. 2 and of Haas &amp; Leis (a read below the alignment costs a device as much as an aligned
 * one). Queue depth is assumed high enough to reach both limits, and latency is hidden by the
 * pipeline (prediction for layer {@code i} runs during layer {@code i − 1}).
 *
 * @param bandwidthBytesPerSecond sustained random-read bandwidth at large reads, > 0
 * @param iops random reads per second at small reads, > 0
 * @param readAlignment bytes a read is rounded up to (the direct-I/O block), a power of two
 */
public record FetchCostModel(double bandwidthBytesPerSecond, double iops, int readAlignment) {

    public FetchCostModel {
        Checks.positiveFinite("bandwidthBytesPerSecond", bandwidthBytesPerSecond);
        Checks.positiveFinite("iops", iops);
        Checks.powerOfTwo("readAlignment", readAlignment);
    }

    /**
     * This project's measured disk (docs: fio, io_uring, O_DIRECT, iodepth 64): 145k IOPS at 4 KiB
     * and about 1.4 GiB/s at 64 KiB and above.
     */
    public static FetchCostModel measuredNvme() {
        return new FetchCostModel(1.4 * (1L << 30), 145_000, 4096);
    }

    /** Bytes a read of {@code bytes} moves once aligned. */
    public long alignedBytes(long bytes) {
        Checks.inRange("bytes", bytes, 0, Long.MAX_VALUE / 2);
        return Checks.alignUp(bytes, readAlignment);
    }

    /**
     * Seconds for {@code reads} requests of {@code bytesPerRead} bytes each ({@code reads} may be
     * fractional: an expected count).
     */
    public double seconds(double reads, long bytesPerRead) {
        Checks.inRange("reads", reads, 0, 1e15);
        long aligned = alignedBytes(bytesPerRead);
        return Math.max(reads / iops, reads * (double) aligned / bandwidthBytesPerSecond);
    }

    /** Effective bandwidth at reads of {@code bytesPerRead}: useful bytes over time. */
    public double effectiveBandwidth(long bytesPerRead) {
        Checks.positive("bytesPerRead", bytesPerRead);
        return bytesPerRead / seconds(1, bytesPerRead);
    }
}
