package io.kvoffload.internal.remote;

import io.kvoffload.KvEngine;
import io.kvoffload.KvException;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.internal.storage.PrefixIndex;
import io.kvoffload.spi.RemoteTier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes committed sequences' full blocks to the remote tier on a thread of its own, so a commit
 * (and decoding) never waits on the network. The queue is bounded: a commit that finds it full is
 * not published and is counted ({@code publishesDropped}); a sequence already queued is queued once.
 *
 * <p>The publisher first asks which block records exist (a block another engine, or an earlier
 * commit, already published is skipped), then, a window of blocks at a time, stores every layer's
 * blob of those blocks, and only once all have been stored, their block records: a reader that sees
 * a record finds every layer (unless the cluster evicted one since, which the reader sees as a
 * miss). A failure leaves at most layer blobs without a record, which no reader uses and which the
 * TTL or the eviction policy removes.
 */
final class RemotePublisher implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RemotePublisher.class);
    /** Bytes of blobs published at once. */
    private static final long WINDOW_BYTES = 16L << 20;
    /** Bytes of one layer (K and V) read in one local call: batched, yet small enough that sending starts early. */
    private static final long RUN_BYTES = 2L << 20;

    private final KvEngine engine;
    private final RemoteTier tier;
    private final RemoteKeys keys;
    private final RemoteCounters counters;
    private final Restorables restorables;
    private final long timeoutMillis;
    private final long budgetBytes;
    private final int capacity;
    private final LinkedHashSet<String> queue = new LinkedHashSet<>();
    private final Thread thread;
    private int busy; // sequences being published now (0 or 1)
    private boolean closed;
    private boolean budgetLogged;

    RemotePublisher(KvEngine engine, RemoteTier tier, RemoteKeys keys, RemoteCounters counters,
            Restorables restorables, long timeoutMillis, long budgetBytes, int capacity) {
        this.engine = engine;
        this.tier = tier;
        this.keys = keys;
        this.counters = counters;
        this.restorables = restorables;
        this.timeoutMillis = timeoutMillis;
        this.budgetBytes = budgetBytes;
        this.capacity = capacity;
        this.thread = Thread.ofPlatform().daemon().name("kvoffload-remote-publisher").start(this::run);
    }

    /** Queues {@code id} for publishing; never blocks. */
    void offer(String id) {
        synchronized (this) {
            if (closed || queue.contains(id)) {
                return;
            }
            if (queue.size() < capacity) {
                queue.add(id);
                notifyAll();
                return;
            }
        }
        counters.publishesDropped.increment();
        LOG.debug("publish queue full ({} sequences): sequence {} is not published", capacity, id);
    }

    /** Waits until nothing is queued or being published; false if {@code millis} passed first. */
    synchronized boolean awaitIdle(long millis) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        while (!queue.isEmpty() || busy > 0) {
            long left = end - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
        return true;
    }

    private void run() {
        while (true) {
            String id;
            synchronized (this) {
                while (queue.isEmpty() && !closed) {
                    try {
                        wait();
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                if (closed) {
                    return;
                }
                id = queue.removeFirst();
                busy++;
            }
            try {
                publish(id);
            } catch (RuntimeException e) {
                counters.publishFailures.increment();
                LOG.warn("publishing sequence {} to the remote tier failed; blocks published before the failure stay"
                        + " usable, the failed block is not visible: {}", id, e.toString());
            } finally {
                synchronized (this) {
                    busy--;
                    notifyAll();
                }
            }
        }
    }

    private void publish(String id) {
        if (restorables.contains(id)) {
            // Already published whole as it is now (a commit or delete forgets it): a second offer of the
            // same state, e.g. the writer's close after its commit, sends nothing and counts nothing.
            return;
        }
        long readAt = restorables.now();
        KvSequence s;
        try {
            s = engine.openSequence(id);
        } catch (IllegalArgumentException | IllegalStateException | KvException e) {
            // Deleted, evicted, or still held for append: the writer's close queues it again.
            LOG.debug("sequence {} not published now: {}", id, e.getMessage());
            return;
        }
        try (s) {
            KvShape shape = s.shape();
            int bt = s.blockTokens();
            int[] tokens = s.tokenIds();
            byte[][] chain = PrefixIndex.chainHashes(shape.fingerprint(), tokens, tokens.length, bt);
            if (chain.length == 0) {
                return;
            }
            List<String> records = new ArrayList<>(chain.length);
            for (byte[] h : chain) {
                records.add(keys.blockRecord(h));
            }
            boolean[] present = RemoteLink.await(tier.exists(records), timeoutMillis);
            int half = bt * shape.halfEntryBytes();
            long blockBytes = 2L * half * shape.layers();
            // Blocks go a window at a time: each run of missing blocks is read with one call per layer and
            // its layers sent at once; the window's records once every layer of the window is stored. One
            // window's records wait in flight while the next window is read and sent.
            int window = (int) Math.max(1, Math.min(chain.length, WINDOW_BYTES / blockBytes));
            List<CompletableFuture<boolean[]>> layerPuts = new ArrayList<>();
            List<String> recKeys = new ArrayList<>();
            List<byte[]> recs = new ArrayList<>();
            CompletableFuture<boolean[]> inFlight = null;
            int inFlightBlocks = 0;
            boolean budgetSpent = false;
            try (Arena arena = Arena.ofConfined()) {
                // One read per layer for a run of missing blocks: the local store batches its I/O.
                int runCap = (int) Math.max(1, Math.min(window, RUN_BYTES / (2L * half)));
                MemorySegment kRun = arena.allocate((long) runCap * half);
                MemorySegment vRun = arena.allocate((long) runCap * half);
                int b = 0;
                while (b < chain.length) {
                    if (present[b]) {
                        counters.blocksAlreadyPresent.increment();
                        b++;
                    } else {
                        int end = b;
                        int most = Math.min(runCap, window - recKeys.size());
                        while (end < chain.length && !present[end] && end - b < most) {
                            if (budgetBytes > 0 && counters.bytesPublished.sum()
                                    + (inFlightBlocks + recKeys.size() + end - b + 1) * blockBytes > budgetBytes) {
                                budgetSpent = true;
                                break;
                            }
                            end++;
                        }
                        if (end > b) {
                            sendRun(s, shape, chain, b, end - b, bt, half, kRun, vRun, layerPuts);
                            for (int r = b; r < end; r++) {
                                recKeys.add(records.get(r));
                                recs.add(RemoteRecords.block(records.get(r), shape.layers(), tokens, r * bt, bt));
                            }
                        }
                        b = end;
                    }
                    if (!recKeys.isEmpty() && (recKeys.size() >= window || b == chain.length || budgetSpent)) {
                        List<String> rk = List.copyOf(recKeys);
                        List<byte[]> rv = List.copyOf(recs);
                        CompletableFuture<boolean[]> next = CompletableFuture
                                .allOf(layerPuts.toArray(CompletableFuture[]::new)).thenCompose(x -> tier.put(rk, rv));
                        layerPuts.clear();
                        recKeys.clear();
                        recs.clear();
                        if (inFlight != null) {
                            completed(inFlight, inFlightBlocks, blockBytes);
                        }
                        inFlight = next;
                        inFlightBlocks = rk.size();
                    }
                    if (budgetSpent) {
                        break;
                    }
                }
            }
            if (inFlight != null) {
                completed(inFlight, inFlightBlocks, blockBytes);
            }
            if (budgetSpent) {
                counters.publishesDropped.increment();
                if (!budgetLogged) {
                    budgetLogged = true;
                    LOG.warn("remote budget of {} bytes spent: this engine publishes no more blocks", budgetBytes);
                }
                return;
            }
            String seqKey = keys.sequenceRecord(chain[chain.length - 1]);
            RemoteLink.await(tier.put(List.of(seqKey), List.of(RemoteRecords.sequence(seqKey, shape.fingerprint(), bt,
                    tokens, chain.length * bt))), timeoutMillis);
            if (tokens.length == chain.length * bt) { // whole blocks only: it can be pulled back exactly
                restorables.remember(id, readAt, new Restorables.Published(shape, bt, tokens.length, chain[chain.length - 1]));
            }
        }
    }

    /**
     * Reads blocks [first, first + n) layer by layer (one read each) and sends each layer's blobs as
     * soon as it is read, so the network works while the next layer is read.
     */
    private void sendRun(KvSequence s, KvShape shape, byte[][] chain, int first, int n, int bt, int half,
            MemorySegment kRun, MemorySegment vRun, List<CompletableFuture<boolean[]>> puts) {
        for (int l = 0; l < shape.layers(); l++) {
            List<String> layerKeys = new ArrayList<>(n);
            List<byte[]> blobs = new ArrayList<>(n);
            s.read(l, first * bt, n * bt, kRun.asSlice(0, (long) n * half), vRun.asSlice(0, (long) n * half));
            for (int i = 0; i < n; i++) {
                String key = keys.layer(chain[first + i], l);
                byte[] blob = RemoteBlob.allocate(2 * half);
                MemorySegment seg = MemorySegment.ofArray(blob);
                MemorySegment.copy(kRun, (long) i * half, seg, RemoteBlob.HEADER, half);
                MemorySegment.copy(vRun, (long) i * half, seg, RemoteBlob.HEADER + half, half);
                layerKeys.add(key);
                blobs.add(RemoteBlob.seal(key, blob));
            }
            puts.add(tier.put(layerKeys, blobs));
        }
    }

    private void completed(CompletableFuture<boolean[]> window, int blocks, long blockBytes) {
        RemoteLink.await(window, timeoutMillis);
        counters.blocksPublished.add(blocks);
        counters.bytesPublished.add(blocks * blockBytes);
    }

    /** Stops publishing: a sequence being published finishes its current request, the queue is dropped. */
    @Override
    public void close() {
        synchronized (this) {
            closed = true;
            queue.clear();
            notifyAll();
        }
        try {
            thread.join(2 * timeoutMillis + 1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
