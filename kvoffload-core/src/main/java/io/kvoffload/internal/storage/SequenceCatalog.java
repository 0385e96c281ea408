package io.kvoffload.internal.storage;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The committed sequences an engine knows: their manifests, how many handles hold each (a held
 * sequence is never evicted), least-recently-used order for capacity eviction, and the prefix
 * index. Not thread-safe: {@link Store} serialises access.
 */
public final class SequenceCatalog {
    /** A committed sequence. */
    public static final class Entry {
        Manifest manifest;
        int refs;
        /** Whether one of the {@link #refs} is an append handle (then it is the only one). */
        boolean writer;
        long lastUsed;
        String unavailable;
        java.util.List<long[]> reserved = java.util.List.of();

        /**
         * Why the sequence cannot be served (a device it uses is missing or failed), or null. Such a
         * manifest keeps its own device numbering; {@link #reserved()} lists its extents on the
         * devices that are here, as (device, offset, length).
         */
        public String unavailable() {
            return unavailable;
        }

        public java.util.List<long[]> reserved() {
            return reserved;
        }

        public Manifest manifest() {
            return manifest;
        }

        public int refs() {
            return refs;
        }

        /** Whether an append handle holds the sequence. */
        public boolean heldByWriter() {
            return writer;
        }
    }

    private final Map<String, Entry> entries = new HashMap<>();
    private final Map<Integer, PrefixIndex> prefixByBlockTokens = new TreeMap<>();
    private final Map<String, Integer> openUncommitted = new HashMap<>();
    private long clock;

    public Entry get(String id) {
        return entries.get(id);
    }

    public Collection<Entry> all() {
        return entries.values();
    }

    public boolean contains(String id) {
        return entries.containsKey(id) || openUncommitted.containsKey(id);
    }

    /** Reserves an id for a sequence being written but not yet committed. */
    public void reserve(String id) {
        openUncommitted.merge(id, 1, Integer::sum);
    }

    public void unreserve(String id) {
        openUncommitted.remove(id);
    }

    /**
     * Adds or replaces a committed manifest; {@code refs} handles hold it, one of them an append
     * handle when {@code writer}.
     */
    public void put(Manifest m, int refs, boolean writer) {
        Entry e = entries.get(m.id());
        if (e != null) {
            index(e.manifest).remove(m.id(), e.manifest.shape().fingerprint(), e.manifest.tokenIds(),
                    e.manifest.blockTokens());
        } else {
            e = new Entry();
            entries.put(m.id(), e);
        }
        e.manifest = m;
        e.refs = refs;
        e.writer = writer;
        e.lastUsed = ++clock;
        index(m).add(m.id(), m.shape().fingerprint(), m.tokenIds(), m.blockTokens());
        openUncommitted.remove(m.id());
    }

    /** Adds a committed sequence that cannot be served now; it is listed, never evicted, never matched. */
    public void putUnavailable(Manifest m, String reason, java.util.List<long[]> reserved) {
        Entry e = new Entry();
        e.manifest = m;
        e.unavailable = reason;
        e.reserved = java.util.List.copyOf(reserved);
        e.lastUsed = ++clock;
        entries.put(m.id(), e);
    }

    public Entry remove(String id) {
        Entry e = entries.remove(id);
        if (e != null && e.unavailable == null) {
            index(e.manifest).remove(id, e.manifest.shape().fingerprint(), e.manifest.tokenIds(),
                    e.manifest.blockTokens());
        }
        return e;
    }

    /**
     * Grants a handle: any number of readers, or one append handle alone. The check and the grant
     * happen together under the caller's lock, so two openers can never both pass the check.
     *
     * @throws IllegalStateException if the grant would put an append handle beside another handle
     */
    public void acquire(Entry e, boolean append) {
        if (append && e.refs > 0) {
            throw new IllegalStateException("sequence " + e.manifest.id() + " is held by " + e.refs
                    + (e.writer ? " append" : "") + " handle(s); appending needs it alone");
        }
        if (e.writer) {
            throw new IllegalStateException("sequence " + e.manifest.id() + " is open for append; close that handle"
                    + " first");
        }
        e.refs++;
        e.writer = append;
        e.lastUsed = ++clock;
    }

    public void release(Entry e, boolean append) {
        if (e.refs <= 0) {
            throw new IllegalStateException("sequence " + e.manifest.id() + " released more often than opened");
        }
        e.refs--;
        if (append) {
            e.writer = false;
        }
        e.lastUsed = ++clock;
    }

    public void touch(Entry e) {
        e.lastUsed = ++clock;
    }

    /**
     * The committed sequence no handle holds, other than {@code except}, to evict next: the least
     * recently used of those {@code first} accepts (they can be had back elsewhere), else the least
     * recently used of all; or null.
     */
    public Entry evictionCandidate(String except, java.util.function.Predicate<String> first) {
        Entry best = null;
        boolean bestFirst = false;
        for (Entry e : entries.values()) {
            if (e.refs != 0 || e.unavailable != null || e.manifest.id().equals(except)) {
                continue;
            }
            boolean f = first.test(e.manifest.id());
            if (best == null || (f && !bestFirst) || (f == bestFirst && e.lastUsed < best.lastUsed)) {
                best = e;
                bestFirst = f;
            }
        }
        return best;
    }

    /** Number of committed sequences held open. */
    public int heldCount() {
        int n = 0;
        for (Entry e : entries.values()) {
            if (e.refs > 0) {
                n++;
            }
        }
        return n;
    }

    private PrefixIndex index(Manifest m) {
        return prefixByBlockTokens.computeIfAbsent(m.blockTokens(), b -> new PrefixIndex());
    }

    /** Ids of committed sequences sharing the most full blocks with {@code prompt}, any block size. */
    public List<String> prefixCandidates(String fingerprint, int[] prompt) {
        List<String> out = new ArrayList<>();
        for (Map.Entry<Integer, PrefixIndex> e : prefixByBlockTokens.entrySet()) {
            Set<String> s = e.getValue().longestChain(fingerprint, prompt, e.getKey());
            out.addAll(s);
        }
        return out;
    }
}
