package io.kvoffload.bench.report;

import java.util.Arrays;

/**
 * Durations in nanoseconds gathered one at a time (a benchmark's per-step selection times), and their
 * {@link Medians median} in microseconds. Not thread-safe: callers that add from several threads
 * synchronise.
 */
public final class NanoSamples {
    private long[] nanos = new long[64];
    private int size;

    /** Adds one duration. */
    public void add(long n) {
        if (size == nanos.length) {
            nanos = Arrays.copyOf(nanos, size * 2);
        }
        nanos[size++] = n;
    }

    /** The durations added. */
    public int size() {
        return size;
    }

    /** Their median in microseconds (the mean of the middle two for an even count); NaN when none. */
    public double medianMicros() {
        double[] us = new double[size];
        for (int i = 0; i < size; i++) {
            us[i] = nanos[i] / 1e3;
        }
        return Medians.of(us);
    }
}
