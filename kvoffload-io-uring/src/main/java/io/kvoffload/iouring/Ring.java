package io.kvoffload.iouring;

import io.kvoffload.iouring.bindings.CompletionQueue;
import io.kvoffload.iouring.bindings.IoUringException;
import io.kvoffload.iouring.bindings.IoUringRing;
import io.kvoffload.iouring.bindings.Posix;
import io.kvoffload.iouring.bindings.SubmissionQueue;
import io.kvoffload.iouring.bindings.libc_h;
import io.kvoffload.iouring.bindings.liburing_h;
import io.kvoffload.spi.IoBatch;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One ring of the backend with everything that must change together with it: the lock that
 * serialises its users, the batches in flight on it, the in-flight count that keeps the CQ from
 * overflowing, and its registered files and buffers.
 *
 * <p>All methods except construction require {@link #lock} to be held. Whoever holds it reaps
 * every CQE that is ready, whichever batch it belongs to, and credits it to that batch through
 * {@link IoBatch#completed}/{@link IoBatch#failed}; a thread awaiting its own batch therefore
 * also completes its neighbours' requests, and a batch never waits for a reaper that is not
 * running.
 *
 * <p>A batch larger than the room left under {@code maxInflight} is not waited for in
 * {@link #submit}: its remaining requests wait in a FIFO backlog, and every reap refills the SQ
 * from it, so a caller can submit the next layer's batch behind the current one and return at once.
 *
 * <p>Every SQE carries its batch slot, the slot's generation and the request index as
 * {@code user_data}, packed by {@link UserData}.
 */
final class Ring {
    private static final Logger LOG = LoggerFactory.getLogger(Ring.class);

    final int id;
    final ReentrantLock lock = new ReentrantLock();

    private final IoUringBackend backend;
    private final IoUringRing uring;
    private final SubmissionQueue sq;
    private final CompletionQueue cq;
    private final int maxInflight;
    private final InflightBatch[] slots;
    private final boolean fixedFiles;
    private final boolean fixedBuffersSupported;
    private FixedBufferTable buffers = FixedBufferTable.EMPTY;
    private int inflight;
    private int slotsInUse;
    private int slotHint;
    /** Slots with requests not yet queued, oldest submission first (a circular FIFO). */
    private final int[] backlog;
    private int backlogHead;
    private int backlogSize;
    /** Set while {@link #pump} runs: a reap inside it (the SQ was full) must not pump again. */
    private boolean pumping;
    private boolean closed;

    // Statistics, read under the lock by IoUringBackend#stats.
    long submitCalls;
    long waitCalls;
    long fixedIos;
    long plainIos;
    long shortTransfers;
    long retries;
    long completions;

    /**
     * Creates the io_uring instance and registers the files and buffers the backend knows.
     *
     * @throws IoUringException when the kernel refuses the ring
     */
    Ring(int id, IoUringBackend backend, IoUringConfig config, int maxInflight, int[] fds,
            Iterable<IoUringBackend.Slab> slabs) throws IoUringException {
        this.id = id;
        this.backend = backend;
        this.maxInflight = maxInflight;
        this.slots = new InflightBatch[config.batchSlots()];
        this.backlog = new int[config.batchSlots()];
        for (int i = 0; i < slots.length; i++) {
            slots[i] = new InflightBatch();
        }
        this.uring = createRing(config);
        this.sq = uring.sq();
        this.cq = uring.cq();
        if (maxInflight > cq.entries()) {
            uring.close();
            throw new IllegalStateException("maxInflight = " + maxInflight + " exceeds the " + cq.entries()
                    + " CQ entries the kernel gave");
        }
        boolean files = false;
        if (config.fixedFiles()) {
            int ret = uring.registerFiles(fds);
            if (ret == 0) {
                files = true;
            } else {
                backend.warnOnce("files", "io_uring_register_files failed ({}); submitting with plain file"
                        + " descriptors", Posix.describe(-ret));
            }
        }
        this.fixedFiles = files;
        boolean bufs = false;
        if (config.fixedBuffers() && config.bufferSlots() > 0) {
            int ret = uring.registerBuffersSparse();
            if (ret == 0) {
                bufs = true;
            } else {
                backend.warnOnce("sparse", "io_uring_register_buffers_sparse failed ({}; sparse registration"
                        + " needs Linux 5.19); DRAM slabs are not registered and I/O uses plain READ/WRITE",
                        Posix.describe(-ret));
            }
        }
        this.fixedBuffersSupported = bufs;
        if (bufs) {
            for (IoUringBackend.Slab s : slabs) {
                registerSlab(s);
            }
        }
    }

    private static IoUringRing createRing(IoUringConfig config) throws IoUringException {
        // SUBMIT_ALL (5.18): an SQE that fails early does not hold back the rest of the batch.
        // Not COOP_TASKRUN/SINGLE_ISSUER: rings are shared between threads when there are more
        // threads than rings, and a thread may await on a ring another thread submitted to; with
        // COOP_TASKRUN the completion work of a parked submitter would not run (see docs/io-uring.md).
        try {
            return IoUringRing.create(config.sqEntries(), liburing_h.IORING_SETUP_SUBMIT_ALL, config.bufferSlots());
        } catch (IoUringException e) {
            if (e.errno() != libc_h.EINVAL) {
                throw e;
            }
            return IoUringRing.create(config.sqEntries(), 0, config.bufferSlots());
        }
    }

    boolean isClosed() {
        return closed;
    }

    boolean fixedFiles() {
        return fixedFiles;
    }

    boolean fixedBuffersSupported() {
        return fixedBuffersSupported;
    }

    int registeredBuffers() {
        return buffers.size();
    }

    // ---------------------------------------------------------------- submission

    /**
     * Starts {@code batch}: as many of its requests as fit under {@code maxInflight} are queued and
     * flushed at once, the rest join the backlog that later reaps drain. Blocks (reaping) only when
     * all batch slots are taken.
     */
    void submit(IoBatch batch) {
        // Checked for every request before any is queued: a backlog request cannot fail this way later.
        for (int i = 0; i < batch.size(); i++) {
            if (batch.device(i) >= backend.deviceCount()) {
                throw new IllegalArgumentException("request " + i + ": device = " + batch.device(i)
                        + " is out of range for this backend; allowed: 0.." + (backend.deviceCount() - 1));
            }
        }
        batch.checkBuffersAlive();
        // Claimed first (atomically): a batch another thread has in flight is refused before it
        // takes a slot. Its completions cannot arrive before its requests are queued below.
        batch.expectCompletions(batch.size());
        int slot;
        try {
            slot = acquireSlot();
        } catch (RuntimeException e) {
            for (int i = 0; i < batch.size(); i++) {
                batch.failed(i, 0, "not submitted: " + e.getMessage(), e);
            }
            throw e;
        }
        InflightBatch s = slots[slot];
        if (s.capacity() < batch.capacity()) {
            // Every slot at once: the slots take batches in turn, so growing only this one left each of
            // the others to allocate later, one submission at a time, long after warm-up (a decode step
            // whose batch had grown to 64 requests allocated 544 bytes in three of five windows of 100
            // steps in DecoderAllocationTest; SteadyStateAllocationTest).
            for (InflightBatch other : slots) {
                other.ensureCapacity(batch.capacity());
            }
        }
        s.start(batch);
        slotsInUse++;
        backlog[(backlogHead + backlogSize++) % backlog.length] = slot;
        pump();
        flush();
    }

    /**
     * Queues backlog requests, oldest batch first, while the ring has room. A request the SQ cannot
     * take fails, with the rest of its batch, rather than the caller (who may be reaping for another
     * batch).
     */
    private void pump() {
        if (pumping) {
            return;
        }
        pumping = true;
        try {
            pumpBacklog();
        } finally {
            pumping = false;
        }
    }

    private void pumpBacklog() {
        while (backlogSize > 0 && inflight < maxInflight) {
            int slot = backlog[backlogHead];
            InflightBatch s = slots[slot];
            IoBatch b = s.batch;
            int i = s.queued++;
            if (s.queued == s.size) {
                backlogHead = (backlogHead + 1) % backlog.length;
                backlogSize--;
            }
            try {
                enqueue(slot, s, i);
            } catch (RuntimeException e) {
                LOG.debug("ring {}: queueing request {} failed", id, i, e);
                finish(s, i, 0, "not submitted: " + e.getMessage());
                abandonBacklog(b, "not submitted: " + e.getMessage());
            }
        }
    }

    /** Fails the unqueued requests of {@code batch} and drops it from the backlog. */
    private void abandonBacklog(IoBatch batch, String why) {
        for (int k = 0; k < backlogSize; k++) {
            int at = (backlogHead + k) % backlog.length;
            InflightBatch s = slots[backlog[at]];
            if (s.batch != batch) {
                continue;
            }
            // Close the gap in the FIFO before the batch can be released by its last failure.
            for (int j = k; j < backlogSize - 1; j++) {
                backlog[(backlogHead + j) % backlog.length] = backlog[(backlogHead + j + 1) % backlog.length];
            }
            backlogSize--;
            int from = s.queued;
            s.queued = s.size;
            for (int j = from; j < s.size && s.batch == batch; j++) {
                finish(s, j, 0, why);
            }
            return;
        }
    }

    private int acquireSlot() {
        while (slotsInUse == slots.length) {
            waitForCompletions(1);
        }
        for (int k = 0; k < slots.length; k++) {
            int i = (slotHint + k) % slots.length;
            if (slots[i].batch == null) {
                slotHint = i + 1;
                return i;
            }
        }
        throw new IllegalStateException("no free batch slot although " + slotsInUse + " of " + slots.length
                + " are in use");
    }

    private int findSlot(IoBatch batch) {
        if (slotsInUse == 0) {
            return -1;
        }
        for (int i = 0; i < slots.length; i++) {
            if (slots[i].batch == batch) {
                return i;
            }
        }
        return -1;
    }

    /** Queues request {@code i} (its untransferred remainder) of the batch in {@code slot}. */
    private void enqueue(int slot, InflightBatch s, int i) {
        while (inflight >= maxInflight) {
            waitForCompletions(1);
        }
        IoBatch b = s.batch;
        int device = b.device(i); // checked against the backend's devices in submit
        MemorySegment buffer = b.segment(i);
        long base = b.bufferOffset(i);
        int done = s.done[i];
        int length = (int) b.length(i) - done;
        boolean write = b.op(i) == IoBatch.WRITE;
        // The last check before the kernel gets the address: a backlog request or a resubmitted
        // remainder may be queued long after submit checked the batch.
        if (!buffer.scope().isAlive()) {
            throw new IllegalStateException("request " + i + ": its buffer was freed while the request waited to be"
                    + " queued (the segment's arena is closed)");
        }
        if (base < 0 || done < 0 || length <= 0 || base + done > buffer.byteSize() - length) {
            throw new IllegalStateException("request " + i + ": range [" + (base + done) + ", +" + length
                    + ") lies outside its buffer of " + buffer.byteSize() + " bytes");
        }
        int bufIndex = fixedBuffersSupported ? buffers.find(buffer.address() + base, b.length(i)) : -1;
        int fd = fixedFiles ? device : backend.fd(device);
        int flags = fixedFiles ? liburing_h.IOSQE_FIXED_FILE : 0;
        long userData = UserData.encode(slot, s.generation, i);
        while (!sq.enqueueRw(write, fd, flags, buffer, base + done, length, b.offset(i) + done, bufIndex, userData)) {
            submitOnce();
        }
        inflight++;
        if (bufIndex >= 0) {
            fixedIos++;
        } else {
            plainIos++;
        }
    }

    /** Submits everything queued. */
    private void flush() {
        while (sq.ready() > 0) {
            submitOnce();
        }
    }

    private void submitOnce() {
        int ret = uring.submit();
        submitCalls++;
        if (ret >= 0) {
            return;
        }
        if (ret == -libc_h.EINTR) {
            return;
        }
        if (ret == -libc_h.EAGAIN || ret == -libc_h.EBUSY) {
            // The kernel is short of request memory or has completions to flush: make room.
            if (inflight - sq.ready() > 0) {
                waitForCompletions(1);
            } else {
                Thread.onSpinWait();
            }
            return;
        }
        throw new IllegalStateException("io_uring_submit failed on ring " + id + ": " + Posix.describe(-ret));
    }

    // ---------------------------------------------------------------- completion

    /**
     * Flushes queued SQEs, waits until at least {@code waitNr} completions are ready (never more
     * than are in flight, so it cannot wait forever), then reaps them all.
     */
    private void waitForCompletions(int waitNr) {
        int n = Math.min(waitNr, inflight);
        if (n <= 0) {
            reap();
            return;
        }
        int ret = uring.submitAndWait(n);
        waitCalls++;
        if (ret < 0 && ret != -libc_h.EINTR && ret != -libc_h.EAGAIN && ret != -libc_h.EBUSY) {
            throw new IllegalStateException("io_uring_submit_and_wait failed on ring " + id + ": "
                    + Posix.describe(-ret));
        }
        reap();
    }

    /** Handles every CQE that is ready; returns how many. */
    int reap() {
        int n = cq.ready();
        int head = cq.head();
        for (int k = 0; k < n; k++) {
            int pos = head + k;
            long userData = cq.userData(pos);
            int res = cq.res(pos);
            // Consume the entry before handling it: handling may queue a resubmission, and the
            // CQE must not be seen twice whatever happens there.
            cq.seen();
            complete(userData, res);
        }
        if (n > 0 && backlogSize > 0) {
            // Queued only: the next submit_and_wait carries them, and every caller that leaves
            // the ring flushes (submit, awaitProgress), so no SQE is left behind unsubmitted.
            pump();
        }
        return n;
    }

    private void complete(long userData, int res) {
        inflight--;
        completions++;
        int slot = UserData.slot(userData);
        int generation = UserData.generation(userData);
        int i = UserData.index(userData);
        InflightBatch s = slot < slots.length ? slots[slot] : null;
        if (s == null || s.batch == null || s.generation != generation || i < 0 || i >= s.size) {
            LOG.error("ring {}: completion for an unknown request (user_data 0x{}, res {}); ignored", id,
                    Long.toHexString(userData), res);
            return;
        }
        try {
            credit(slot, s, i, res);
        } catch (RuntimeException e) {
            // Never leave a request uncredited (its batch would wait forever): the batch was
            // changed under the ring, e.g. by a second thread.
            LOG.error("ring {}: crediting request {} failed; failing it", id, i, e);
            if (s.batch != null && s.remaining > 0) {
                finish(s, i, 0, "completion could not be handled: " + e);
            }
        }
    }

    private void credit(int slot, InflightBatch s, int i, int res) {
        IoBatch b = s.batch;
        long length = b.length(i);
        int done = s.done[i];
        boolean write = b.op(i) == IoBatch.WRITE;
        switch (Completion.decide(res, done, length, write, s.retries[i])) {
            case Completion.DONE -> finish(s, i, 0, null);
            case Completion.CONTINUE -> {
                s.done[i] = done + res;
                shortTransfers++;
                requeue(slot, s, i);
            }
            case Completion.RETRY -> {
                s.retries[i]++;
                retries++;
                requeue(slot, s, i);
            }
            case Completion.END_OF_FILE -> finish(s, i, 0, "unexpected end of file after " + done + " of " + length
                    + " bytes (the pool file is shorter than the device size)");
            case Completion.NO_PROGRESS -> finish(s, i, 0, "write made no progress after " + done + " of "
                    + length + " bytes");
            default -> {
                if (res >= 0) {
                    finish(s, i, 0, "kernel reported " + res + " bytes for a transfer of " + (length - done));
                } else {
                    finish(s, i, -res, (write ? "write" : "read") + " failed after " + done + " of " + length
                            + " bytes" + (s.retries[i] > 0 ? " and " + s.retries[i] + " retries" : "") + ": "
                            + Posix.describe(-res));
                }
            }
        }
    }

    private void requeue(int slot, InflightBatch s, int i) {
        try {
            enqueue(slot, s, i);
        } catch (RuntimeException e) {
            finish(s, i, 0, "could not resubmit the remainder: " + e);
        }
    }

    /**
     * Request {@code i} is over. The slot is released before the batch hears of it: once its last
     * request is credited the owner may reuse the batch at once.
     */
    private void finish(InflightBatch s, int i, int errno, String failure) {
        IoBatch b = s.batch;
        if (--s.remaining == 0) {
            s.release();
            slotsInUse--;
        }
        if (failure == null) {
            b.completed(i);
        } else {
            b.failed(i, errno, failure, null);
        }
    }

    /**
     * Reaps (waiting when nothing is ready) until more than {@code seen} requests of {@code batch}
     * completed successfully or the batch has finished ({@code Integer.MAX_VALUE}: until it has
     * finished).
     *
     * @return false if {@code batch} is not in flight on this ring
     */
    boolean awaitProgress(IoBatch batch, int seen) {
        int slot = findSlot(batch);
        if (slot < 0) {
            return false;
        }
        InflightBatch s = slots[slot];
        int generation = s.generation;
        while (s.batch == batch && s.generation == generation && batch.completedCount() <= seen) {
            if (reap() != 0) {
                continue;
            }
            if (inflight == 0) {
                // Nothing can complete: queue the backlog, or, when there is none, the slot's
                // remaining requests are lost. Waiting here would spin holding the lock forever.
                if (backlogSize > 0) {
                    pump();
                    flush();
                    continue;
                }
                abandon(s, "lost: nothing of the batch is in flight on ring " + id + " (was the batch used by two"
                        + " threads at once?)");
                break;
            }
            // With a backlog, wake on the first completions so the SQ is refilled (as fio does
            // with iodepth_batch_complete_min=1); otherwise wait for what this caller needs.
            waitForCompletions(seen == Integer.MAX_VALUE && backlogSize == 0 ? s.remaining : 1);
        }
        flush(); // the refills the last reap queued
        return true;
    }

    /**
     * Takes the completions that are ready, queues backlog requests into the room they freed and
     * submits what is queued; never waits. Costs a system call only when there is something to submit.
     */
    void poll() {
        if (reap() == 0 && backlogSize > 0 && inflight < maxInflight) {
            pump();
        }
        flush();
    }

    /** Fails every request of {@code s} not yet credited and frees the slot. */
    private void abandon(InflightBatch s, String why) {
        LOG.error("ring {}: {} ({} requests)", id, why, s.remaining);
        IoBatch b = s.batch;
        int n = s.remaining;
        s.release();
        slotsInUse--;
        for (int k = 0; k < n; k++) {
            b.failed(0, 0, why, null);
        }
    }

    /** Requests queued or in flight. */
    int inflight() {
        return inflight;
    }

    // ---------------------------------------------------------------- registration

    /** Registers {@code slab} in its fixed-buffer slot; failures are logged once and leave it unregistered. */
    void registerSlab(IoUringBackend.Slab slab) {
        if (closed || !fixedBuffersSupported) {
            return;
        }
        int ret = uring.updateBuffer(slab.index(), slab.segment());
        if (ret == 0) {
            buffers = buffers.with(slab.segment().address(), slab.segment().byteSize(), slab.index());
        } else {
            backend.registrationFailed(slab, -ret);
        }
    }

    /** Drops {@code slab} from this ring: nothing is queued against it afterwards. */
    void unregisterSlab(IoUringBackend.Slab slab) {
        if (closed || !fixedBuffersSupported) {
            return;
        }
        FixedBufferTable before = buffers;
        buffers = buffers.without(slab.index());
        if (before != buffers) {
            int ret = uring.clearBuffer(slab.index());
            if (ret != 0) {
                LOG.warn("ring {}: clearing fixed buffer {} failed: {}", id, slab.index(), Posix.describe(-ret));
            }
        }
    }

    // ---------------------------------------------------------------- close

    /** Waits for everything in flight, unregisters buffers and files, and exits the ring. */
    void drainAndClose() {
        if (closed) {
            return;
        }
        try {
            while (inflight > 0) {
                waitForCompletions(inflight);
            }
        } catch (RuntimeException e) {
            LOG.error("ring {}: draining {} in-flight requests failed; closing the ring anyway", id, inflight, e);
        }
        closed = true;
        if (fixedBuffersSupported) {
            int ret = uring.unregisterBuffers();
            if (ret != 0) {
                LOG.warn("ring {}: io_uring_unregister_buffers failed: {}", id, Posix.describe(-ret));
            }
            buffers = FixedBufferTable.EMPTY;
        }
        if (fixedFiles) {
            int ret = uring.unregisterFiles();
            if (ret != 0) {
                LOG.warn("ring {}: io_uring_unregister_files failed: {}", id, Posix.describe(-ret));
            }
        }
        uring.close();
    }
}
