package io.kvoffload.internal.obs;

/**
 * Emits the JFR events of rare occurrences (evictions, checksum failures, device errors, commits):
 * each builds its event and fills its fields only when a recording wants it. The per-step fetch
 * event is emitted by the decoder's observer, which avoids even the event object with JFR off.
 */
public final class Flight {
    private Flight() {}

    public static void eviction(String sequence, int tokens, long bytes) {
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
        DeviceErrorEvent e = new DeviceErrorEvent();
        if (e.shouldCommit()) {
            e.device = device;
            e.uuid = uuid;
            e.directory = directory;
            e.reason = reason;
            e.commit();
        }
    }

    /** Starts timing a commit; finish it with {@link #committed}. */
    public static CommitEvent commitStarted() {
        CommitEvent e = new CommitEvent();
        e.begin();
        return e;
    }

    public static void committed(CommitEvent e, String sequence, long commitNumber, int tokens, long storedBytes,
            boolean succeeded) {
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
}
