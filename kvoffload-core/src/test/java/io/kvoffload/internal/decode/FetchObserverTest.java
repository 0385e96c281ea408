package io.kvoffload.internal.decode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.testing.Allocations;
import jdk.jfr.Recording;
import org.junit.jupiter.api.Test;

/**
 * The fetch observer's cost: the histograms record every fetch, and a fetch event is built only
 * while a recording enables it — after a recording has stopped, a step allocates nothing again.
 */
class FetchObserverTest {
    @Test
    void fetchEventsAreBuiltOnlyWhileARecordingWantsThem() {
        DecodeCounters counters = new DecodeCounters();
        FetchObserver o = new FetchObserver(counters, "s", 2);
        try (Recording r = new Recording()) {
            r.enable("io.kvoffload.Fetch");
            r.start();
            assertTrue(FetchObserver.fetchEventsEnabled());
            r.stop();
        }
        assertFalse(FetchObserver.fetchEventsEnabled(), "no recording on");
        Runnable steps = () -> {
            for (int i = 0; i < 1000; i++) {
                long t0 = o.starting();
                counters.selectNanos += 10;
                o.started(i & 1, t0);
                o.finishing();
                counters.ioNanos += 20;
                counters.countRead(4096);
                o.finished(i & 1, 0, 16, true);
            }
        };
        for (int i = 0; i < 20; i++) {
            steps.run(); // warm the JIT up
        }
        assertEquals(0, Allocations.leastOverWindows(steps, 5), "bytes allocated by 1000 observed fetches");
        assertEquals(25_000, counters.fetchLatency.copy().getTotalCount());
        assertEquals(25_000, counters.ioLatency.copy().getTotalCount());
        assertEquals(25_000, counters.selectLatency.copy().getTotalCount());
    }
}
