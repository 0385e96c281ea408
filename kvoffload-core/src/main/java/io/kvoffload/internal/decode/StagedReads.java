package io.kvoffload.internal.decode;

import io.kvoffload.KvIoException;
import io.kvoffload.internal.dram.DramSlot;
import io.kvoffload.internal.sched.BucketScheduler;
import io.kvoffload.internal.storage.EntryChecksum;
import io.kvoffload.internal.storage.Store;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.spi.IoBackend;
import io.kvoffload.spi.IoBatch;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * One fetch's reads: the runs a {@link BucketScheduler} planned, in the aligned reads it grouped them
 * into (runs that share an aligned block are one read, so no block is read twice; runs that touch are
 * one up to a size cap), into a
 * single DRAM staging slot, all in one {@link IoBatch}. Shared by the Swarm and KVSwap fetch paths.
 * The slot, the batch and the bookkeeping grow only when a plan is larger than any before (with
 * headroom, since growing costs a DRAM slot inside {@code prefetch}); a fetch allocates nothing.
 */
public final class StagedReads implements AutoCloseable {
    /**
     * Bytes of landed runs verified and gathered between two {@link IoBackend#poll}s: gathering
     * costs about as much CPU per byte as the SSDs take to read it, so without a poll the queue
     * would drain while a wave of completions is processed.
     */
    static final long REFILL_BYTES = 512 << 10;

    private final Store store;
    private final long alignment;
    private final CRC32C crc = new CRC32C();
    private IoBatch batch;
    private DramSlot staging;
    private ByteBuffer stagingBytes; // a view of the slot made once, so checksums create no buffers
    private long[] runStaging = new long[64];
    /** Per run: the bytes and request its read counts, on the read's first run; 0 on the others. */
    private long[] runReadBytes = new long[64];
    /** Per request: the first run of the read it carries; after the last, the run count. */
    private int[] readRuns = new int[65];
    /** Which runs have been handed to the sink in this fetch (one bit per run). */
    private long[] landedRuns = new long[1];
    private int runs;
    /** Set while this fetch is a member of a batch's shared plan (batched decoding), else null. */
    private SharedPlan shared;
    private int sharedMember;

    public StagedReads(Store store, int alignment) {
        this.store = store;
        this.alignment = alignment;
    }

    /**
     * Fills the batch with one aligned read per read of {@code sched}'s plan ({@link
     * BucketScheduler#reads}); returns the run count.
     */
    public int fill(BucketScheduler sched) {
        runs = 0;
        int n = sched.runs();
        if (n == 0) {
            return 0;
        }
        if (sched.readAlignment() != 0 && sched.readAlignment() != alignment) {
            throw new IllegalStateException("the plan's reads are aligned to " + sched.readAlignment()
                    + " bytes, these to " + alignment);
        }
        int m = sched.reads();
        long need = 0;
        for (int i = 0; i < m; i++) {
            need += readEnd(sched, i) - readStart(sched, i);
        }
        if (staging == null || staging.byteSize() < need) {
            if (staging != null) {
                store.dram().release(staging);
                staging = null;
            }
            // Powers of two keep the DRAM pool's size classes few as plans grow.
            staging = store.dram().acquire(Long.highestOneBit(need + need / 4 - 1) << 1);
            stagingBytes = staging.segment().asByteBuffer();
        }
        if (batch == null || batch.capacity() < m) {
            batch = store.backend().newBatch(Math.max(m + m / 2, 64));
        }
        if (runStaging.length < n) {
            runStaging = new long[Math.max(n, runStaging.length * 2)];
            runReadBytes = new long[runStaging.length];
        }
        if (readRuns.length < m + 1) {
            readRuns = new int[Math.max(m + 1, readRuns.length * 2)];
        }
        if (landedRuns.length * 64 < n) {
            landedRuns = new long[(Math.max(n, landedRuns.length * 128) + 63) / 64];
        }
        java.util.Arrays.fill(landedRuns, 0, (n + 63) / 64, 0L);
        MemorySegment mem = staging.segment();
        long o = 0;
        for (int i = 0; i < m; i++) {
            long start = readStart(sched, i), len = readEnd(sched, i) - start;
            int first = sched.readFirstRun(i), to = sched.readFirstRun(i + 1);
            batch.addRead(sched.runDevice(first), start, mem, o, len, i);
            readRuns[i] = first;
            for (int r = first; r < to; r++) {
                runStaging[r] = o + (sched.runOffset(r) - start);
                runReadBytes[r] = r == first ? len : 0;
            }
            o += len;
        }
        readRuns[m] = n;
        runs = n;
        if (shared != null) {
            shared.planned(sched);
        }
        return n;
    }

    private long readStart(BucketScheduler sched, int i) {
        return sched.runOffset(sched.readFirstRun(i)) & -alignment;
    }

    /** Where read {@code i} ends: its last run's end, aligned up (runs of a read ascend by offset). */
    private long readEnd(BucketScheduler sched, int i) {
        int last = sched.readFirstRun(i + 1) - 1;
        return Checks.alignUp(sched.runOffset(last) + sched.runBytes(last), alignment);
    }

    /** Whether this fetch is a member of a batch's {@link SharedPlan}. */
    public boolean sharing() {
        return shared != null;
    }

    /** Takes part in {@code s}'s plan as its member {@code member} until {@link #clear}. */
    void share(SharedPlan s, int member) {
        shared = s;
        sharedMember = member;
    }

    /**
     * Leaves the batch's shared plan (after the fetch, or when its start failed); if its start failed
     * after its reads went out, waits for them first, so the staging slot is never reused under the
     * kernel.
     */
    public void leaveShared() {
        if (shared != null) {
            SharedPlan s = shared;
            shared = null;
            if (runs > 0 && batch.pending() != 0) {
                try {
                    await();
                } catch (RuntimeException e) {
                    // The start that failed is what the caller reports; these reads are abandoned.
                }
            }
            s.leave(sharedMember);
        }
    }

    public int runs() {
        return runs;
    }

    public void submit() {
        if (runs > 0) {
            store.backend().submit(batch);
        }
    }

    /** Waits for the reads and counts them in the device statistics. */
    public void await() {
        if (runs > 0) {
            store.backend().await(batch);
            store.stats().count(batch);
        }
    }

    /** Takes each run of a fetch as it lands. */
    @FunctionalInterface
    public interface RunSink {
        /** Run {@code r}'s bytes are in staging at {@link #at(int)}; verify and copy them. */
        void landed(int r);

        /**
         * Run {@code r}'s read failed ({@code e}); every read of the fetch has finished. A sink that
         * can serve the run's entries elsewhere (another copy) does so; the default rethrows.
         */
        default void failed(int r, KvIoException e) {
            throw e;
        }
    }

    /**
     * Waits for the reads, handing each run to {@code sink} as soon as it lands while later runs
     * are still in flight (each wait also refills the backend's queue), so verifying and copying a
     * fetch overlaps its own I/O. Then reports a failed read and counts the device statistics. If
     * the sink or a read fails, the reads still in flight are waited for before the exception
     * leaves, so the staging slot is never reused under the kernel.
     *
     * @return {@link System#nanoTime()} when the last read was seen complete
     */
    public long gatherAsLanded(RunSink sink) {
        if (runs == 0) {
            return System.nanoTime();
        }
        int seen = 0;
        long doneAt;
        long sincePoll = 0;
        KvIoException failure = null;
        try {
            while (true) {
                // The backend has its say before any completion is taken, also when the batch has
                // finished already (then this returns at once): a decorator that acts on the batch
                // as a whole when it is awaited (fault injection damages it, WholeBatchBackend) sees
                // the backend below it log the completions on the batch first, so a completion
                // taken before this call could be one whose fault is never applied or reported.
                try {
                    store.backend().awaitProgress(batch, seen);
                } catch (KvIoException e) {
                    // A backend may report a failure here once the whole batch is done (the SPI's
                    // default does); the landed runs are taken below, then the failed ones after.
                    failure = e;
                }
                boolean finished = batch.pending() == 0; // read before completedCount(): then it is final
                doneAt = finished ? System.nanoTime() : 0;
                int landed = batch.completedCount();
                for (; seen < landed; seen++) {
                    int i = batch.completedRequest(seen); // one request per read, added in read order
                    for (int r = readRuns[i]; r < readRuns[i + 1]; r++) {
                        landedRuns[r >>> 6] |= 1L << r;
                        sink.landed(r);
                    }
                    if ((sincePoll += batch.length(i)) >= REFILL_BYTES) {
                        sincePoll = 0;
                        store.backend().poll();
                    }
                }
                if (finished) {
                    break;
                }
            }
            try {
                await();
                if (failure != null) {
                    throw failure;
                }
            } catch (KvIoException e) {
                // Every read has finished; the sink may serve the failed runs from other copies.
                for (int r = 0; r < runs; r++) {
                    if ((landedRuns[r >>> 6] & (1L << r)) == 0) {
                        landedRuns[r >>> 6] |= 1L << r;
                        sink.failed(r, e);
                    }
                }
            }
            return doneAt;
        } catch (RuntimeException e) {
            if (batch.pending() != 0) {
                try {
                    await();
                } catch (RuntimeException io) {
                    e.addSuppressed(io);
                }
            }
            throw e;
        }
    }

    /**
     * Counts in {@code counters} the aligned read that carries run {@code r}, once: on the read's first
     * run (its bytes and one request); nothing on its other runs.
     */
    public void countRead(int r, DecodeCounters counters) {
        long bytes = runReadBytes[r];
        if (bytes > 0) {
            counters.countRead(bytes);
        }
    }

    /** Where run {@code r}'s first entry starts in {@link #memory()}. */
    public long at(int r) {
        return runStaging[r];
    }

    public MemorySegment memory() {
        return staging.segment();
    }

    /**
     * The checksum of {@code memory()[at, at + length)} as record {@code kind} of {@code layer} at
     * token {@code position} ({@link EntryChecksum#compute}); allocates nothing.
     */
    public int checksum(EntryChecksum sum, EntryChecksum.Kind kind, int layer, int position, long at, long length) {
        ByteBuffer b = stagingBytes;
        b.limit((int) (at + length)).position((int) at);
        return sum.compute(crc, kind, layer, position, b);
    }

    /** Forgets the plan once no read is in flight (a failed await has finished all of them). */
    public void clear() {
        // Before the batch's prefetch ended this is the start of the member's own step: it stays.
        if (shared != null && shared.sealed()) {
            leaveShared();
        }
        if (batch != null && batch.pending() == 0) {
            batch.clear();
        }
        runs = 0;
    }

    @Override
    public void close() {
        if (staging != null) {
            store.dram().release(staging);
            staging = null;
        }
    }
}
