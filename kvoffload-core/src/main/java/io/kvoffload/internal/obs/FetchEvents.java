package io.kvoffload.internal.obs;

/**
 * A decoder's fetch events in flight, one per pipeline slot. Created only once a recording enables
 * fetch events: loading an event class makes the JVM call into JFR to instrument it, a cost a
 * JVM without JFR should never pay, so nothing else on the decode path names {@link FetchEvent}.
 */
public final class FetchEvents {
    private final FetchEvent[] events;

    public FetchEvents(int slots) {
        this.events = new FetchEvent[slots];
    }

    /** A fetch began in {@code slot}. */
    public void begin(int slot) {
        FetchEvent e = new FetchEvent();
        e.begin();
        events[slot] = e;
    }

    /** The fetch of {@code slot} ended; commits its event when {@code ok} and the recording wants it. */
    public void end(int slot, boolean ok, String sequence, int layer, int rows, long bytes, long reads,
            long tokensFetched, long selectNanos, long ioNanos, long waitNanos) {
        FetchEvent e = events[slot];
        if (e == null) {
            return;
        }
        events[slot] = null;
        if (ok && e.shouldCommit()) {
            e.sequence = sequence;
            e.layer = layer;
            e.rows = rows;
            e.bytes = bytes;
            e.reads = reads;
            e.tokensFetched = tokensFetched;
            e.selectNanos = selectNanos;
            e.ioNanos = ioNanos;
            e.waitNanos = waitNanos;
            e.commit();
        }
    }

    /** Whether a recording wants fetch events now (JFR running, the event type enabled). */
    public static boolean enabled() {
        if (!jdk.jfr.FlightRecorder.isInitialized()) {
            return false;
        }
        jdk.jfr.EventType t = type;
        if (t == null) {
            type = t = jdk.jfr.EventType.getEventType(FetchEvent.class);
        }
        return t.isEnabled();
    }

    /** Looked up once JFR is running (the lookup registers the event type). */
    private static volatile jdk.jfr.EventType type;
}
