package io.kvoffload;

import org.HdrHistogram.Histogram;

/**
 * A latency distribution in nanoseconds (an immutable snapshot), as {@link DecodeStats} reports it
 * for fetch, selection and I/O: percentiles to two significant digits (1%), recorded by an
 * HdrHistogram that the decoder allocates once so that recording costs no allocation.
 */
public final class LatencyHistogram {
    private static final LatencyHistogram EMPTY = new LatencyHistogram(new Histogram(1, 2, 2));
    private final Histogram histogram;

    /** Takes ownership of {@code histogram} (a copy no one else records into). */
    LatencyHistogram(Histogram histogram) {
        this.histogram = histogram;
    }

    /** A distribution of no values. */
    public static LatencyHistogram empty() {
        return EMPTY;
    }

    /** Values recorded. */
    public long count() {
        return histogram.getTotalCount();
    }

    /**
     * The value at {@code percentile} (0..100) in nanoseconds, 0 when nothing was recorded.
     *
     * @throws IllegalArgumentException if {@code percentile} is outside 0..100 or not a number
     */
    public long percentileNanos(double percentile) {
        if (!(percentile >= 0 && percentile <= 100)) {
            throw new IllegalArgumentException("percentile = " + percentile + "; allowed: 0..100");
        }
        return count() == 0 ? 0 : histogram.getValueAtPercentile(percentile);
    }

    public long p50Nanos() {
        return percentileNanos(50);
    }

    public long p99Nanos() {
        return percentileNanos(99);
    }

    public long p999Nanos() {
        return percentileNanos(99.9);
    }

    /** The largest value recorded (to the histogram's precision), 0 when none was. */
    public long maxNanos() {
        return count() == 0 ? 0 : histogram.getMaxValue();
    }

    /** The mean in nanoseconds, 0 when nothing was recorded. */
    public double meanNanos() {
        return count() == 0 ? 0 : histogram.getMean();
    }

    /**
     * The values recorded since {@code earlier}, a snapshot of the same decoder's distribution
     * (benchmarks use it to leave warm-up steps out).
     */
    public LatencyHistogram since(LatencyHistogram earlier) {
        if (earlier.count() == 0) {
            return this;
        }
        Histogram h = histogram.copy();
        h.subtract(earlier.histogram);
        return new LatencyHistogram(h);
    }

    /** Both distributions together (a batch's decoders, say). */
    public LatencyHistogram plus(LatencyHistogram other) {
        if (other.count() == 0) {
            return this;
        }
        if (count() == 0) {
            return other;
        }
        Histogram h = histogram.copy();
        h.add(other.histogram);
        return new LatencyHistogram(h);
    }

    /** {@code n=…, p50=…, p99=…, p99.9=…, max=…} in µs. */
    @Override
    public String toString() {
        return String.format(java.util.Locale.ROOT, "n=%d p50=%.1fus p99=%.1fus p99.9=%.1fus max=%.1fus", count(),
                p50Nanos() / 1e3, p99Nanos() / 1e3, p999Nanos() / 1e3, maxNanos() / 1e3);
    }
}
