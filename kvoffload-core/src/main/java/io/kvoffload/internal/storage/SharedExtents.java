package io.kvoffload.internal.storage;

import java.util.HashMap;
import java.util.Map;

/**
 * How many holders each extent with more than one has: a block a {@linkplain
 * io.kvoffload.KvEngine#fork fork} shares with its source (and with further forks) is named by
 * several manifests, and its space returns to the allocator only when the last of them lets it go.
 * An extent not listed has one holder, the common case, so nothing is kept for it. Holders are the
 * committed manifests naming the extent plus uncommitted fork handles (and a fork in progress,
 * which pins the source while it copies). Rebuilt at open from the manifests ({@link
 * ManifestRecovery}); never written to disk. Not thread-safe: {@link Store} serialises it.
 */
final class SharedExtents {
    /** Extent key {@code device << 48 | offset} → holders (always at least 2). */
    private final Map<Long, Integer> holders = new HashMap<>();

    private static long key(int device, long offset) {
        return ((long) device << 48) | offset;
    }

    /** One more holder of the extent at {@code offset} of {@code device}. */
    void share(int device, long offset) {
        holders.merge(key(device, offset), 2, (n, two) -> n + 1);
    }

    /**
     * One holder lets the extent go; returns whether it was the last, so the caller gives the space
     * back.
     */
    boolean release(int device, long offset) {
        long k = key(device, offset);
        Integer n = holders.get(k);
        if (n == null) {
            return true;
        }
        if (n == 2) {
            holders.remove(k);
        } else {
            holders.put(k, n - 1);
        }
        return false;
    }

    /** The holders of an extent (1 for one that is not shared). */
    int holders(int device, long offset) {
        return holders.getOrDefault(key(device, offset), 1);
    }

    /** Extents with more than one holder. */
    int size() {
        return holders.size();
    }
}
