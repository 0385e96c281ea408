package io.kvoffload.internal.decode;

import io.kvoffload.internal.dram.DramSlot;
import io.kvoffload.internal.sched.BucketScheduler;
import io.kvoffload.internal.storage.Store;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.spi.IoBatch;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * One fetch's reads: the runs a {@link BucketScheduler} planned, each one aligned read into a
 * single DRAM staging slot, all in one {@link IoBatch}. Shared by the Swarm and KVSwap fetch paths.
 * The slot, the batch and the bookkeeping grow only when a plan is larger than any before (with
 * headroom, since growing costs a DRAM slot inside {@code prefetch}); a fetch allocates nothing.
 */
public final class StagedReads implements AutoCloseable {
    private final Store store;
    private final long alignment;
    private final CRC32C crc = new CRC32C();
    private IoBatch batch;
    private DramSlot staging;
    private ByteBuffer stagingBytes; // a view of the slot made once, so checksums create no buffers
    private long[] runStaging = new long[64];
    private int runs;

    public StagedReads(Store store, int alignment) {
        this.store = store;
        this.alignment = alignment;
    }

    /** Fills the batch with one aligned read per run of {@code sched}'s plan; returns the run count. */
    public int fill(BucketScheduler sched) {
        runs = 0;
        int n = sched.runs();
        if (n == 0) {
            return 0;
        }
        long need = 0;
        for (int r = 0; r < n; r++) {
            need += alignedLength(sched, r);
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
        if (batch == null || batch.capacity() < n) {
            batch = store.backend().newBatch(Math.max(n + n / 2, 64));
        }
        if (runStaging.length < n) {
            runStaging = new long[Math.max(n, runStaging.length * 2)];
        }
        MemorySegment mem = staging.segment();
        long o = 0;
        for (int r = 0; r < n; r++) {
            long start = sched.runOffset(r) & -alignment;
            long len = alignedLength(sched, r);
            batch.addRead(sched.runDevice(r), start, mem, o, len, r);
            runStaging[r] = o + (sched.runOffset(r) - start);
            o += len;
        }
        runs = n;
        return n;
    }

    private long alignedLength(BucketScheduler sched, int r) {
        long start = sched.runOffset(r) & -alignment;
        return Checks.alignUp(sched.runOffset(r) + sched.runBytes(r), alignment) - start;
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

    /**
     * Waits until more than {@code seen} runs have landed in staging or none is in flight, and
     * returns how many have landed (see {@link #landedRun}). Failures are left to {@link #await}.
     */
    public int awaitLanded(int seen) {
        return runs == 0 ? 0 : store.backend().awaitProgress(batch, seen);
    }

    /** Runs landed so far. */
    public int landed() {
        return runs == 0 ? 0 : batch.completedCount();
    }

    /** The run that landed {@code k}-th ({@code k < landed()}): its bytes are in staging. */
    public int landedRun(int k) {
        return batch.completedRequest(k); // one request per run, added in run order
    }

    /** Whether some run is still in flight. */
    public boolean inFlight() {
        return runs > 0 && batch.pending() != 0;
    }

    /**
     * Waits for whatever is still in flight after {@code cause} interrupted the gathering, so the
     * staging slot is not reused under the kernel; a read failure is added to {@code cause}.
     */
    public void drainAfter(RuntimeException cause) {
        if (inFlight()) {
            try {
                await();
            } catch (RuntimeException e) {
                cause.addSuppressed(e);
            }
        }
    }

    /** Bytes run {@code r} transferred (its aligned read). */
    public long length(int r) {
        return batch.length(r);
    }

    /** Where run {@code r}'s first entry starts in {@link #memory()}. */
    public long at(int r) {
        return runStaging[r];
    }

    public MemorySegment memory() {
        return staging.segment();
    }

    /** CRC32C of {@code memory()[at, at + length)}. */
    public int crc(long at, long length) {
        ByteBuffer b = stagingBytes;
        b.limit((int) (at + length)).position((int) at);
        crc.reset();
        crc.update(b);
        return (int) crc.getValue();
    }

    /** Forgets the plan once no read is in flight (a failed await has finished all of them). */
    public void clear() {
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
