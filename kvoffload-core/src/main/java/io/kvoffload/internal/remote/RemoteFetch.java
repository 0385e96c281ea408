package io.kvoffload.internal.remote;

import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.PrefixMatch;
import io.kvoffload.internal.storage.Manifest;
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
     * local match). The whole blocks the local match {@code localId} already holds are copied from
     * it, not fetched.
     */
    Optional<PrefixMatch> pull(KvShape shape, int bt, int[] prompt, int localMatched, String localId) {
        int full = prompt.length / bt;
        if ((long) full * bt <= localMatched) {
            return Optional.empty();
        }
        int have = localId == null ? 0 : localMatched / bt;
        byte[][] chain = PrefixIndex.chainHashes(shape.fingerprint(), prompt, full * bt, bt);
        List<String> records = new ArrayList<>(full);
        for (byte[] h : chain) {
            records.add(keys.blockRecord(h));
        }
        int run;
        byte[][] recs;
        try {
            boolean[] present = RemoteLink.await(tier.exists(records.subList(have, full)), timeoutMillis);
            run = have;
            while (run < full && present[run - have]) {
                run++;
            }
            if ((long) run * bt <= localMatched) {
                return Optional.empty();
            }
            recs = RemoteLink.await(tier.get(records.subList(have, run)), timeoutMillis);
        } catch (RuntimeException e) {
            counters.fetchFailures.increment();
            LOG.warn("remote prefix lookup failed; using the local match only: {}", e.toString());
            return Optional.empty();
        }
        for (int b = have; b < run; b++) {
            byte[] rec = recs[b - have];
            if (!RemoteRecords.blockMatches(records.get(b), rec, shape.layers(), prompt, b * bt, bt)) {
                // Absent now (evicted since EXISTS) or not this prompt's block: the prefix ends here.
                if (rec != null && !RemoteBlob.verify(records.get(b), rec, -1)) {
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
        int done = pullInto(id, shape, bt, prompt, chain, run, have + 1, localId, have);
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
        return pullInto(id, shape, bt, tokens, chain, chain.length, chain.length, null, 0) == chain.length;
    }

    /**
     * Pulls blocks [0, run) of {@code prompt} into a new local sequence {@code id}, the first
     * {@code have} copied from the local sequence {@code localId} and the rest fetched, and commits it
     * if at least {@code minBlocks} (and one) arrived whole; returns how many were committed, else 0
     * (nothing is left behind).
     */
    private int pullInto(String id, KvShape shape, int bt, int[] prompt, byte[][] chain, int run, int minBlocks,
            String localId, int have) {
        KvSequence s;
        try {
            s = engine.createSequence(id, shape);
        } catch (IllegalArgumentException e) {
            // Another thread is pulling the same prefix right now (or just committed it).
            LOG.debug("not pulling {}: {}", id, e.getMessage());
            return 0;
        }
        try (s) {
            if (have > 0 && !copyLocal(s, localId, shape, prompt, have * bt)) {
                return 0;
            }
            int done = fetchInto(s, shape, bt, prompt, chain, have, run);
            if (done < Math.max(1, minBlocks)) {
                return 0; // closing discards the uncommitted sequence
            }
            s.commit();
            return done;
        }
    }

    /** Appends tokens [0, n) of the local sequence {@code from} to {@code s}; false if it is gone. */
    private boolean copyLocal(KvSequence s, String from, KvShape shape, int[] prompt, int n) {
        KvSequence src;
        try {
            src = engine.openSequence(from);
        } catch (RuntimeException e) {
            LOG.debug("local match {} is gone ({}); not pulling now", from, e.getMessage());
            return false;
        }
        int half = shape.halfEntryBytes();
        int chunk = (int) Math.max(1, Math.min(n, (WINDOW_BYTES / 2) / half));
        try (src; Arena arena = Arena.ofConfined()) {
            MemorySegment k = arena.allocate((long) chunk * half);
            MemorySegment v = arena.allocate((long) chunk * half);
            for (int first = 0; first < n; first += chunk) {
                int c = Math.min(chunk, n - first);
                s.appendTokens(Arrays.copyOfRange(prompt, first, first + c));
                for (int l = 0; l < shape.layers(); l++) {
                    MemorySegment ks = k.asSlice(0, (long) c * half);
                    MemorySegment vs = v.asSlice(0, (long) c * half);
                    src.read(l, first, c, ks, vs);
                    s.appendKv(l, ks, vs);
                }
            }
        }
        return true;
    }

    /**
     * One layer of one block of a committed local sequence, as published (K entries then V entries),
     * verified against its remote checksum; null when the tier has no good copy or fails.
     */
    MemorySegment block(Manifest m, int layer, int block) {
        int bt = m.blockTokens();
        byte[][] chain = PrefixIndex.chainHashes(m.shape().fingerprint(), m.tokenIds(), (block + 1) * bt, bt);
        String key = keys.layer(chain[block], layer);
        int payload = 2 * bt * m.shape().halfEntryBytes();
        byte[] blob;
        try {
            blob = RemoteLink.await(tier.get(List.of(key)), timeoutMillis)[0];
        } catch (RuntimeException e) {
            counters.fetchFailures.increment();
            LOG.warn("fetching remote block {} of sequence {} (layer {}) failed: {}", block, m.id(), layer, e.toString());
            return null;
        }
        if (!RemoteBlob.verify(key, blob, payload)) {
            if (blob != null) {
                corrupt(key);
            }
            return null;
        }
        counters.bytesFetched.add(payload);
        return MemorySegment.ofArray(blob).asSlice(RemoteBlob.HEADER, payload);
    }

    /** Appends the verified blocks [start, run) to {@code s}; returns up to which block they reach. */
    private int fetchInto(KvSequence s, KvShape shape, int bt, int[] prompt, byte[][] chain, int start, int run) {
        if (start >= run) {
            return run;
        }
        int layers = shape.layers();
        int half = bt * shape.halfEntryBytes();
        int window = (int) Math.max(1, Math.min(run - start, WINDOW_BYTES / ((long) layers * 2 * half)));
        try (Arena arena = Arena.ofConfined()) {
            // A window's blocks are appended per layer in one call, so the local writes go out as one batch.
            MemorySegment k = arena.allocate((long) window * half);
            MemorySegment v = arena.allocate((long) window * half);
            // The next window's GETs are in flight while this window is verified and written locally.
            CompletableFuture<byte[][]> pending = fetch(chain, start, Math.min(window, run - start), layers);
            for (int first = start; first < run; first += window) {
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
