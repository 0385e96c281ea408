package io.kvoffload.internal.decode;

import io.kvoffload.KvIoException;
import io.kvoffload.internal.sched.BucketScheduler;
import io.kvoffload.internal.storage.Store;
import io.kvoffload.internal.util.SingleOwner;
import io.kvoffload.spi.IoBatch;
import java.util.Arrays;

/**
 * The one submission that the fetches of several sequences share in batched decoding: each member
 * (one sequence's {@link EntryFetch}) selects and plans as alone, with its scheduler counting the
 * entries earlier members put on each SSD ({@link BucketScheduler#carryLoad}), so the batch is
 * balanced over the devices as a whole; then all members' reads go out in one {@link IoBatch}, so
 * a batch fills the queue depth one sequence cannot.
 *
 * <p>Each member is gathered on its own ({@link #gather}): completions of the shared batch are
 * sorted to their members as they arrive, and only the awaited member's runs are verified and
 * copied, by its own fetch; a checksum or read failure therefore reaches only the member whose run
 * it was, which fails over to a replica or fails exactly as a fetch of its own would. A member
 * that fails or leaves with reads still in flight waits for the batch before its staging can be
 * reused. Everything grows only when a batch is larger than any before: steady state allocates
 * nothing. One thread at a time (the batch's owner) submits, gathers and leaves.
 */
public final class SharedSubmission {
    private final Store store;
    private final int[] deviceLoad;
    private final SingleOwner owner = new SingleOwner();
    private IoBatch batch;
    private StagedReads[] members = new StagedReads[0];
    private BucketScheduler[] schedulers = new BucketScheduler[0];
    private int[] base = new int[0];
    private int[] runs = new int[0];
    /** Per member, its landed runs in arrival order: {@code queue[m][0..queued[m])}, taken up to {@code taken[m]}. */
    private int[][] queue = new int[0][];
    private int[] queued = new int[0];
    private int[] taken = new int[0];
    /** One bit per request of the batch: it landed (successfully). */
    private long[] landed = new long[1];
    private int count;
    private int open;
    private int seen;
    /** No member joins any more: {@link #submit} began (members leave when their fetch ends). */
    private boolean sealed;
    private boolean submitted;
    private boolean counted;
    private KvIoException failure;

    public SharedSubmission(Store store) {
        this.store = store;
        this.deviceLoad = new int[store.devices().size()];
    }

    /** Whether every member of the last submission has left: the submission can be begun again. */
    public boolean idle() {
        return open == 0;
    }

    /** Whether {@link #submit} began: a member's fetch that ends now leaves (earlier it is still being planned). */
    boolean sealed() {
        return sealed;
    }

    /** Starts a new batch of members. */
    public void begin() {
        if (open != 0) {
            throw new IllegalStateException(open + " members of the last submission have not finished");
        }
        count = 0;
        seen = 0;
        sealed = false;
        submitted = false;
        counted = false;
        failure = null;
        Arrays.fill(deviceLoad, 0);
        if (batch != null && batch.pending() == 0) {
            batch.clear();
        }
    }

    /** Makes {@code slot}'s next fetch a member: its plan counts the batch's load and its reads wait for {@link #submit}. */
    public void join(EntryFetch slot) {
        if (sealed) {
            throw new IllegalStateException("the submission already went out; begin a new one");
        }
        if (count == members.length) {
            int c = Math.max(8, count * 2);
            members = Arrays.copyOf(members, c);
            schedulers = Arrays.copyOf(schedulers, c);
            base = Arrays.copyOf(base, c);
            runs = Arrays.copyOf(runs, c);
            queue = Arrays.copyOf(queue, c);
            queued = Arrays.copyOf(queued, c);
            taken = Arrays.copyOf(taken, c);
        }
        int m = count++;
        members[m] = slot.reads;
        schedulers[m] = slot.scheduler;
        runs[m] = 0;
        queued[m] = 0;
        taken[m] = 0;
        open++;
        slot.scheduler.carryLoad(deviceLoad);
        slot.reads.share(this, m);
    }

    /** Member {@code m} planned {@code n} runs with {@code sched}: the next members see its load. */
    void planned(int m, BucketScheduler sched, int n) {
        runs[m] = n;
        for (int d = 0; d < deviceLoad.length; d++) {
            deviceLoad[d] += sched.bucketSize(d);
        }
    }

    /** Sends every member's reads in one batch. */
    public void submit() {
        if (sealed) {
            throw new IllegalStateException("the submission already went out");
        }
        sealed = true;
        int total = 0;
        for (int m = 0; m < count; m++) {
            total += members[m] == null ? 0 : runs[m];
        }
        if (total > 0 && (batch == null || batch.capacity() < total)) {
            batch = store.backend().newBatch(Math.max(total + total / 2, 64));
        }
        if (landed.length * 64 < total) {
            landed = new long[(Math.max(total, landed.length * 128) + 63) / 64];
        }
        Arrays.fill(landed, 0L);
        for (int m = 0; m < count; m++) {
            if (members[m] == null || runs[m] == 0) {
                continue;
            }
            if (queue[m] == null || queue[m].length < runs[m]) {
                queue[m] = new int[Math.max(runs[m] + runs[m] / 2, 64)];
            }
            base[m] = batch.size();
            members[m].enqueue(batch, (long) m << 32);
        }
        if (total > 0) {
            store.backend().submit(batch);
        } else {
            counted = true;
        }
        submitted = true;
    }

    /** Bytes run {@code r} of member {@code m} transferred. */
    long length(int m, int r) {
        return batch.length(base[m] + r);
    }

    /**
     * Hands member {@code m}'s runs to {@code sink} as they land, sorting other members' completions
     * to them meanwhile; then its failed runs ({@link StagedReads.RunSink#failed}).
     *
     * @return when the member's last read was seen complete
     */
    long gather(int m, StagedReads.RunSink sink) {
        boolean owned = owner.enter(this);
        try {
            if (!submitted) {
                throw new IllegalStateException("the batch's reads were never submitted (its submission failed)");
            }
            int n = runs[m];
            if (n == 0) {
                return System.nanoTime();
            }
            try {
                long sincePoll = 0;
                while (true) {
                    boolean finished = batch.pending() == 0; // read before the log: then the log is final
                    sort();
                    while (taken[m] < queued[m]) {
                        int r = queue[m][taken[m]++];
                        sink.landed(r);
                        if ((sincePoll += batch.length(base[m] + r)) >= StagedReads.REFILL_BYTES) {
                            sincePoll = 0;
                            store.backend().poll(); // also refills for fetches queued behind this one (see StagedReads)
                        }
                    }
                    if (queued[m] == n || finished) {
                        break;
                    }
                    try {
                        store.backend().awaitProgress(batch, seen);
                    } catch (KvIoException e) {
                        failure = e; // reported for the failed runs below, once all reads finished
                    }
                }
                long doneAt = System.nanoTime();
                if (queued[m] < n) {
                    finish();
                    for (int r = 0; r < n; r++) {
                        int i = base[m] + r;
                        if ((landed[i >>> 6] & (1L << i)) == 0) {
                            landed[i >>> 6] |= 1L << i;
                            taken[m]++;
                            sink.failed(r, failure != null ? failure : new KvIoException(batch.device(i),
                                    batch.offset(i), batch.length(i), 0, "read did not complete", null));
                        }
                    }
                }
                return doneAt;
            } catch (RuntimeException e) {
                // The member's staging must not be reused while any of its reads is in flight.
                waitForBatch(e);
                throw e;
            }
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    /** Sorts the completions logged since the last look to their members' queues. */
    private void sort() {
        int n = batch.completedCount();
        for (; seen < n; seen++) {
            int i = batch.completedRequest(seen);
            long tag = batch.tag(i);
            int m = (int) (tag >>> 32);
            landed[i >>> 6] |= 1L << i;
            queue[m][queued[m]++] = (int) tag;
        }
    }

    /** Waits for the whole batch and counts it in the device statistics (once). */
    private void finish() {
        if (counted) {
            return;
        }
        try {
            store.backend().await(batch);
            store.stats().count(batch);
        } catch (KvIoException e) {
            if (failure == null) {
                failure = e;
            }
        }
        counted = true;
    }

    private void waitForBatch(RuntimeException cause) {
        if (batch != null && batch.pending() != 0) {
            try {
                store.backend().await(batch);
            } catch (RuntimeException io) {
                cause.addSuppressed(io);
            }
        }
    }

    /** Member {@code m}'s fetch ended (or never started): waits for its reads still in flight, then frees its place. */
    void leave(int m) {
        boolean owned = owner.enter(this);
        try {
            if (members[m] == null) {
                return;
            }
            schedulers[m].carryLoad(null);
            if (submitted && runs[m] > 0 && queued[m] < runs[m] && batch.pending() != 0) {
                try {
                    store.backend().await(batch);
                } catch (KvIoException e) {
                    failure = failure == null ? e : failure; // the member's fetch already failed or was closed
                }
            }
            members[m] = null;
            schedulers[m] = null;
            if (--open == 0 && submitted) {
                finish();
            }
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    @Override
    public String toString() {
        return "SharedSubmission{" + count + " members, " + open + " fetching}";
    }
}
