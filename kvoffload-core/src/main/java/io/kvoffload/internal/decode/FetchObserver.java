package io.kvoffload.internal.decode;

import io.kvoffload.internal.obs.FetchEvents;

/**
 * Times a decoder's fetches: per pipeline slot, when the fetch began and what selection cost, then
 * on completion the latency histograms (fetch, select, I/O) and, when a flight recording is on, a
 * {@code io.kvoffload.Fetch} JFR event spanning prefetch to await with the fetch's bytes, reads and times. No event
 * is built unless a recording enables it, so with JFR off a step allocates nothing.
 */
public final class FetchObserver {
    private final DecodeCounters counters;
    private final String sequenceId;
    private final long[] startedAt;
    private final long[] selectNanos;
    /** Created when a recording first wants fetch events (see {@link FetchEvents}). */
    private FetchEvents events;
    // Counters before the fetch being completed.
    private long select0;
    private long io0;
    private long bytes0;
    private long reads0;
    private long fetched0;
    private long wait0;

    /** Whether a recording wants fetch events (see {@link FetchEvents#enabled()}). */
    static boolean fetchEventsEnabled() {
        return FetchEvents.enabled();
    }

    public FetchObserver(DecodeCounters counters, String sequenceId, int slots) {
        this.counters = counters;
        this.sequenceId = sequenceId;
        this.startedAt = new long[slots];
        this.selectNanos = new long[slots];
    }

    /** Before the layer's fetcher selects and submits; returns the start time. */
    public long starting() {
        select0 = counters.selectNanos;
        return System.nanoTime();
    }

    /** The fetch of {@code slot} was submitted; {@code t0} is what {@link #starting} returned. */
    public void started(int slot, long t0) {
        startedAt[slot] = t0;
        long sel = counters.selectNanos - select0;
        selectNanos[slot] = sel;
        counters.selectLatency.record(sel);
        if (FetchEvents.enabled()) {
            if (events == null) {
                events = new FetchEvents(startedAt.length);
            }
            events.begin(slot);
        }
    }

    /** Before the fetcher waits for and gathers the reads of a fetch. */
    public void finishing() {
        io0 = counters.ioNanos;
        bytes0 = counters.bytesRead;
        reads0 = counters.readRequests;
        fetched0 = counters.tokensFetched;
        wait0 = System.nanoTime();
    }

    /** The fetch of {@code slot} ended ({@code ok}: its view is ready); records what it cost. */
    public void finished(int slot, int layer, int rows, boolean ok) {
        long now = System.nanoTime();
        long wait = now - wait0;
        counters.waitNanos += wait;
        long reads = counters.readRequests - reads0;
        long io = counters.ioNanos - io0;
        if (ok) {
            counters.fetchLatency.record(now - startedAt[slot]);
            if (reads > 0) {
                counters.ioLatency.record(io);
            }
        }
        if (events != null) {
            events.end(slot, ok, sequenceId, layer, rows, counters.bytesRead - bytes0, reads,
                    counters.tokensFetched - fetched0, selectNanos[slot], io, wait);
        }
    }
}
