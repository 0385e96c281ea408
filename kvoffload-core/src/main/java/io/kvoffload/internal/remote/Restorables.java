package io.kvoffload.internal.remote;

import io.kvoffload.KvShape;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The sequences this engine published whole (every block, no partial tail) and may therefore pull
 * back under their id after evicting them locally. Every commit, creation or deletion of an id
 * forgets it, stamped with a logical clock; the publisher notes the clock before it reads a
 * sequence and remembers it only if the id was not forgotten since, so a restore never returns an
 * older state than the last commit. Held in memory for the engine's life, at most {@link #MAX}
 * sequences and {@link #MAX} stamps (when a stamp is dropped, remembering anything the publisher
 * read before it is refused: conservative, never stale).
 */
final class Restorables {
    static final int MAX = 65536;

    record Published(KvShape shape, int blockTokens, byte[] lastChain) {}

    private long clock;
    private long droppedUpTo = Long.MIN_VALUE; // stamps up to this may have been dropped
    private final LinkedHashMap<String, Published> entries = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Published> eldest) {
            return size() > MAX;
        }
    };
    private final LinkedHashMap<String, Long> forgotten = new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
            if (size() > MAX) {
                droppedUpTo = Math.max(droppedUpTo, eldest.getValue());
                return true;
            }
            return false;
        }
    };

    /** A commit, a new sequence or a delete of {@code id}: what was published of it is stale. */
    synchronized void forget(String id) {
        entries.remove(id);
        forgotten.remove(id); // re-inserted last, so the map stays in stamp order
        forgotten.put(id, ++clock);
    }

    /** The clock, noted by the publisher before it reads a sequence. */
    synchronized long now() {
        return clock;
    }

    /** Remembers {@code id} as published whole, unless it was forgotten after {@code readAt}. */
    synchronized void remember(String id, long readAt, Published e) {
        if (readAt >= droppedUpTo && forgotten.getOrDefault(id, Long.MIN_VALUE) <= readAt) {
            entries.put(id, e);
        }
    }

    synchronized Published get(String id) {
        return entries.get(id);
    }
}
