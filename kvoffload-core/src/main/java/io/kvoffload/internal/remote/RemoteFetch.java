package io.kvoffload.internal.remote;

import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.PrefixMatch;
import io.kvoffload.internal.storage.PrefixIndex;
import io.kvoffload.spi.RemoteTier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Pulls the longest remote prefix of a prompt into the local store (SSD-backed PagedAttention's
 * prefix reuse [SSD-PagedAttention §2.2], across engines). The run of leading blocks whose records
 * exist and name the prompt's tokens is fetched a window at a time (every blob's CRC32C verified),
 * appended to a new local sequence and committed; the prefix ends at the first block that is
 * missing, fails verification, or whose fetch fails, so it never has holes and never holds data
 * that did not verify. A pull that got no block commits nothing.
 */
final class RemoteFetch {
    private static final Logger LOG = LoggerFactory.getLogger(RemoteFetch.class);
    /** Bytes of blobs fetched at once: enough requests in flight to keep every master busy. */
    private static final long WINDOW_BYTES = 32L << 20;

    private final KvEngine engine;
    private final RemoteTier tier;
    private final RemoteKeys keys;
    private final RemoteCounters counters;
    private final long timeoutMillis;

    RemoteFetch(KvEngine engine, RemoteTier tier, RemoteKeys keys, RemoteCounters counters, long timeoutMillis) {
        this.engine = engine;
        this.tier = tier;
        this.keys = keys;
        this.counters = counters;
        this.timeoutMillis = timeoutMillis;
    }

    /**
     * A local sequence holding the remote prefix of {@code prompt}, if that prefix is longer than
     * {@code localMatched} tokens; empty otherwise (or when the tier fails: the caller keeps its
     * local match).
     */
    Optional<PrefixMatch> pull(KvShape shape, int bt, int[] prompt, int localMatched) {
        int full = prompt.length / bt;
        if ((long) full * bt <= localMatched) {
            return Optional.empty();
        }
        byte[][] chain = PrefixIndex.chainHashes(shape.fingerprint(), prompt, full * bt, bt);
        List<String> records = new ArrayList<>(full);
        for (byte[] h : chain) {
            records.add(keys.blockRecord(h));
        }
        int run;
        byte[][] recs;
        try {
            boolean[] present = RemoteLink.await(tier.exists(records), timeoutMillis);
            run = 0;
            while (run < full && present[run]) {
                run++;
            }
            if ((long) run * bt <= localMatched) {
                return Optional.empty();
            }
            recs = RemoteLink.await(tier.get(records.subList(0, run)), timeoutMillis);
        } catch (RuntimeException e) {
            counters.fetchFailures.increment();
            LOG.warn("remote prefix lookup failed; using the local match only: {}", e.toString());
            return Optional.empty();
        }
        for (int b = 0; b < run; b++) {
            if (!RemoteRecords.blockMatches(records.get(b), recs[b], shape.layers(), prompt, b * bt, bt)) {
                // Absent now (evicted since EXISTS) or not this prompt's block: the prefix ends here.
                if (recs[b] != null && !RemoteBlob.verify(records.get(b), recs[b], -1)) {
                    corrupt(records.get(b));
                }
                run = b;
                break;
            }
        }
        if ((long) run * bt <= localMatched) {
            return Optional.empty();
        }
        String id = RemoteKeys.localId(chain[run - 1]);
        int done = pullInto(id, shape, bt, prompt, chain, run, 1);
        return done == 0 ? Optional.empty() : Optional.of(new PrefixMatch(id, done * bt, done * bt));
    }

    /**
     * Pulls back, under {@code id}, the sequence whose record ends at {@code lastChain}: all of its
     * blocks or nothing.
     *
     * @return whether it was restored
     */
    boolean restore(String id, KvShape shape, int bt, byte[] lastChain) {
        String key = keys.sequenceRecord(lastChain);
        byte[] rec;
        try {
            rec = RemoteLink.await(tier.get(List.of(key)), timeoutMillis)[0];
        } catch (RuntimeException e) {
            counters.fetchFailures.increment();
            LOG.warn("reading the remote record of evicted sequence {} failed: {}", id, e.toString());
            return false;
        }
        int[] tokens = RemoteRecords.sequenceTokens(key, rec, shape.fingerprint(), bt);
        if (tokens == null) {
            if (rec != null) {
                corrupt(key);
            }
            return false;
        }
        byte[][] chain = PrefixIndex.chainHashes(shape.fingerprint(), tokens, tokens.length, bt);
        if (chain.length == 0 || tokens.length != chain.length * bt || !Arrays.equals(chain[chain.length - 1], lastChain)) {
            return false; // not the sequence this engine published
        }
        return pullInto(id, shape, bt, tokens, chain, chain.length, chain.length) == chain.length;
    }

    /**
     * Pulls blocks [0, run) of {@code prompt} into a new local sequence {@code id} and commits it if
     * at least {@code minBlocks} (and one) arrived whole; returns how many were committed, else 0
     * (nothing is left behind).
     */
    private int pullInto(String id, KvShape shape, int bt, int[] prompt, byte[][] chain, int run, int minBlocks) {
        KvSequence s;
        try {
            s = engine.createSequence(id, shape);
        } catch (IllegalArgumentException e) {
            // Another thread is pulling the same prefix right now (or just committed it).
            LOG.debug("not pulling {}: {}", id, e.getMessage());
            return 0;
        }
        try (s) {
            int done = fetchInto(s, shape, bt, prompt, chain, run);
            if (done < Math.max(1, minBlocks)) {
                return 0; // closing discards the uncommitted sequence
            }
            s.commit();
            return done;
        }
    }

    /** Appends the verified leading blocks [0, run) to {@code s}; returns how many. */
    private int fetchInto(KvSequence s, KvShape shape, int bt, int[] prompt, byte[][] chain, int run) {
        int layers = shape.layers();
        int half = bt * shape.halfEntryBytes();
        int window = (int) Math.max(1, Math.min(run, WINDOW_BYTES / ((long) layers * 2 * half)));
        try (Arena arena = Arena.ofConfined()) {
            // A window's blocks are appended per layer in one call, so the local writes go out as one batch.
            MemorySegment k = arena.allocate((long) window * half);
            MemorySegment v = arena.allocate((long) window * half);
            // The next window's GETs are in flight while this window is verified and written locally.
            CompletableFuture<byte[][]> pending = fetch(chain, 0, window, layers);
            for (int first = 0; first < run; first += window) {
                int n = Math.min(window, run - first);
                byte[][] blobs;
                try {
                    blobs = RemoteLink.await(pending, timeoutMillis);
                } catch (RuntimeException e) {
                    counters.fetchFailures.increment();
                    LOG.warn("fetching remote blocks {}..{} failed; the prefix ends at block {}: {}", first,
                            first + n - 1, first, e.toString());
                    return first;
                }
                int next = first + n;
                pending = next < run ? fetch(chain, next, Math.min(window, run - next), layers) : null;
                int ok = verified(chain, first, n, layers, half, blobs);
                if (ok > 0) {
                    s.appendTokens(Arrays.copyOfRange(prompt, first * bt, (first + ok) * bt));
                    for (int l = 0; l < layers; l++) {
                        for (int i = 0; i < ok; i++) {
                            MemorySegment blob = MemorySegment.ofArray(blobs[i * layers + l]);
                            MemorySegment.copy(blob, RemoteBlob.HEADER, k, (long) i * half, half);
                            MemorySegment.copy(blob, RemoteBlob.HEADER + half, v, (long) i * half, half);
                        }
                        s.appendKv(l, k.asSlice(0, (long) ok * half), v.asSlice(0, (long) ok * half));
                    }
                    counters.blocksFetched.add(ok);
                    counters.bytesFetched.add(2L * half * layers * ok);
                }
                if (ok < n) {
                    return first + ok;
                }
            }
        }
        return run;
    }

    /** How many leading blocks of the window have every layer whole and verified. */
    private int verified(byte[][] chain, int first, int n, int layers, int half, byte[][] blobs) {
        for (int i = 0; i < n; i++) {
            for (int l = 0; l < layers; l++) {
                String key = keys.layer(chain[first + i], l);
                byte[] blob = blobs[i * layers + l];
                if (!RemoteBlob.verify(key, blob, 2 * half)) {
                    if (blob != null) {
                        corrupt(key);
                    }
                    return i;
                }
            }
        }
        return n;
    }

    private CompletableFuture<byte[][]> fetch(byte[][] chain, int first, int n, int layers) {
        List<String> blobKeys = new ArrayList<>(n * layers);
        for (int b = first; b < first + n; b++) {
            for (int l = 0; l < layers; l++) {
                blobKeys.add(keys.layer(chain[b], l));
            }
        }
        return tier.get(blobKeys);
    }

    /** A blob failed verification: counted, and deleted so that the next publisher stores a good copy. */
    private void corrupt(String key) {
        counters.checksumFailures.increment();
        LOG.warn("remote blob {} failed its checksum: treated as a miss and deleted", key);
        try {
            RemoteLink.await(tier.delete(List.of(key)), timeoutMillis);
        } catch (RuntimeException e) {
            LOG.warn("deleting the corrupt remote blob {} failed: {}", key, e.toString());
        }
    }
}
