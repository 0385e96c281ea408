package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

/** {@link DecodeStats#plus} and {@link DecodeStats#since}: a batch's totals and warm-up removal. */
class DecodeStatsTest {

    private static LatencyHistogram latencies(long... nanos) {
        Histogram h = new Histogram(3_600_000_000_000L, 3);
        for (long n : nanos) {
            h.recordValue(n);
        }
        return new LatencyHistogram(h);
    }

    private static DecodeStats stats(long k, long... fetchNanos) {
        long[] sizes = new long[64];
        sizes[12] = k;
        return new DecodeStats(k, 2 * k, 3 * k, 4 * k, 5 * k, 6 * k, 7 * k, 8 * k, 9 * k, 10 * k, 11 * k, 12 * k, 13 * k,
                sizes, sizes, 14 * k, 15 * k, 16 * k, 17 * k, latencies(fetchNanos), latencies(fetchNanos),
                latencies(), 0);
    }

    @Test
    void plusSumsEveryCounterGaugeAndDistribution() {
        DecodeStats a = stats(1, 1_000, 2_000);
        DecodeStats b = stats(10, 59_861_106_688L);
        DecodeStats sum = a.plus(b);
        assertEquals(stats(11).steps(), sum.steps());
        assertEquals(44, sum.bytesRead());
        assertEquals(11 * 12, sum.cacheBytes(), "gauges of two decoders add up");
        assertEquals(11 * 16, sum.reuseBytes());
        assertEquals(11, sum.readSizeCount()[12]);
        assertEquals(3, sum.fetchLatency().count());
        assertEquals(0, sum.ioLatency().count());
    }

    @Test
    void sinceUndoesPlusForCounters() {
        DecodeStats a = stats(3, 5_000);
        DecodeStats b = stats(4, 7_000, 9_000);
        DecodeStats back = a.plus(b).since(b);
        assertEquals(a.steps(), back.steps());
        assertEquals(a.waitNanos(), back.waitNanos());
        assertArrayEquals(a.readSizeBytes(), back.readSizeBytes());
        assertEquals(1, back.fetchLatency().count());
    }
}
