package io.kvoffload.internal.obs;

import jdk.jfr.FlightRecorder;

/**
 * Emits the JFR events of rare occurrences (evictions, checksum failures, device errors, commits):
 * each builds its event and fills its fields only when a recording wants it, and nothing at all —
 * not even loading the event classes — while JFR has never been started in the JVM
 * ({@link FlightRecorder#isInitialized()}, a flag read). The per-step fetch event is emitted by the
 * decoder's observer.
 */
public final class Flight {
    private Flight() {}

    private static boolean off() {
        return !FlightRecorder.isInitialized();
    }

    public static void eviction(String sequence, int tokens, long bytes) {
        if (off()) {
            return;
        }
        EvictionEvent e = new EvictionEvent();
        if (e.shouldCommit()) {
            e.sequence = sequence;
            e.tokens = tokens;
            e.bytes = bytes;
            e.commit();
        }
    }

    public static void checksumFailure(String sequence, int device, int layer, int fromToken, int toToken,
            boolean fatal) {
        if (off()) {
            return;
        }
        ChecksumFailureEvent e = new ChecksumFailureEvent();
        if (e.shouldCommit()) {
            e.sequence = sequence;
            e.device = device;
            e.layer = layer;
            e.fromToken = fromToken;
            e.toToken = toToken;
            e.fatal = fatal;
            e.commit();
        }
    }

    public static void deviceError(int device, String uuid, String directory, String reason) {
        if (off()) {
            return;
        }
        DeviceErrorEvent e = new DeviceErrorEvent();
        if (e.shouldCommit()) {
            e.device = device;
            e.uuid = uuid;
            e.directory = directory;
            e.reason = reason;
            e.commit();
        }
    }

    /** Starts timing a commit (null while JFR is off); finish it with {@link #committed}. */
    public static CommitEvent commitStarted() {
        if (off()) {
            return null;
        }
        CommitEvent e = new CommitEvent();
        e.begin();
        return e;
    }

    public static void committed(CommitEvent e, String sequence, long commitNumber, int tokens, long storedBytes,
            boolean succeeded) {
        if (e == null) {
            return;
        }
        e.end();
        if (e.shouldCommit()) {
            e.sequence = sequence;
            e.commitNumber = commitNumber;
            e.tokens = tokens;
            e.storedBytes = storedBytes;
            e.succeeded = succeeded;
            e.commit();
        }
    }

    public static void degradation(String kind, String sequence, int layer, String message) {
        if (off()) {
            return;
        }
        DegradationEvent e = new DegradationEvent();
        if (e.shouldCommit()) {
            e.kind = kind;
            e.sequence = sequence;
            e.layer = layer;
            e.message = message;
            e.commit();
        }
    }
}
