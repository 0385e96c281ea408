package io.kvoffload.internal.obs;

import org.HdrHistogram.Histogram;

/**
 * A latency distribution recorded on the decode path: an HdrHistogram allocated once, so that
 * {@link #record} allocates nothing. Values are nanoseconds from 1 ns to a minute, kept to two
 * significant digits (1%), which is what p50/p99/p99.9 need and keeps each histogram near 30 KiB.
 * One thread records (the decoder's owner); {@link #copy} is taken under the same ownership.
 */
public final class LatencyRecorder {
    /** Longer values are recorded as this: a minute is far beyond any fetch. */
    public static final long MAX_NANOS = 60_000_000_000L;
    private final Histogram histogram = new Histogram(1, MAX_NANOS, 2);

    /** Records one value; values outside [1 ns, a minute] are clamped into it. */
    public void record(long nanos) {
        histogram.recordValue(Math.max(1, Math.min(MAX_NANOS, nanos)));
    }

    /** A copy to hand out (allocates; not for the hot path). */
    public Histogram copy() {
        return histogram.copy();
    }
}
