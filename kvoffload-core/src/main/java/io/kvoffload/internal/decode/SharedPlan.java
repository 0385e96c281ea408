package io.kvoffload.internal.decode;

import io.kvoffload.internal.sched.BucketScheduler;
import io.kvoffload.internal.storage.Store;
import java.util.Arrays;

/**
 * What the fetches of several sequences share in batched decoding ({@code KvBatch}): one load over
 * the SSDs. Each member (one sequence's {@link EntryFetch}) selects and plans as alone, with its
 * scheduler counting the entries earlier members put on each SSD ({@link BucketScheduler#carryLoad}),
 * so the batch is balanced over the devices as a whole.
 *
 * <p>Each member's reads go out as soon as it is planned, not once the whole batch is: measured at
 * batch 8 (docs/benchmarks.md, "Batched decoding"), one submission after every member's selection
 * left the SSDs idle for the selections, 7 ms of every 30 ms layer step, while the reads of the
 * members already planned could have been running. The members' copies of DRAM-resident rows
 * (sinks, window, cache) wait for their view's gather ({@link EntryFetch#copyResident}), so the
 * last member's reads are not held back by the earlier members' copies either. Gathering,
 * verification and failover are each member's own, exactly as for one decoder.
 *
 * <p>One thread at a time (the batch's owner) begins, joins and seals; steady state allocates nothing.
 */
public final class SharedPlan {
    private final int[] deviceLoad;
    private BucketScheduler[] schedulers = new BucketScheduler[0];
    private int count;
    private int open;
    /** No member joins any more: the batch's prefetch ended (members leave when their fetch ends). */
    private boolean sealed;

    public SharedPlan(Store store) {
        this.deviceLoad = new int[store.devices().size()];
    }

    /** Whether every member of the last batch has left: the plan can be begun again. */
    public boolean idle() {
        return open == 0;
    }

    /** Whether {@link #seal} was called: a member's fetch that ends now leaves (earlier it is still being planned). */
    boolean sealed() {
        return sealed;
    }

    /** Starts a new batch of members. */
    public void begin() {
        if (open != 0) {
            throw new IllegalStateException(open + " members of the last batch have not finished");
        }
        count = 0;
        sealed = false;
        Arrays.fill(deviceLoad, 0);
    }

    /** Makes {@code slot}'s next fetch a member: its plan counts the batch's load so far. */
    public void join(EntryFetch slot) {
        if (sealed) {
            throw new IllegalStateException("the batch's prefetch already ended; begin a new one");
        }
        if (count == schedulers.length) {
            schedulers = Arrays.copyOf(schedulers, Math.max(8, count * 2));
        }
        int m = count++;
        schedulers[m] = slot.scheduler;
        open++;
        slot.scheduler.carryLoad(deviceLoad);
        slot.reads.share(this, m);
    }

    /** A member planned its reads with {@code sched}: the next members see its load. */
    void planned(BucketScheduler sched) {
        for (int d = 0; d < deviceLoad.length; d++) {
            deviceLoad[d] += sched.bucketSize(d);
        }
    }

    /** Every member has started: no more join this batch. */
    public void seal() {
        sealed = true;
    }

    /** Member {@code m}'s fetch ended (or never started): frees its place. */
    void leave(int m) {
        if (schedulers[m] == null) {
            return;
        }
        schedulers[m].carryLoad(null);
        schedulers[m] = null;
        open--;
    }

    @Override
    public String toString() {
        return "SharedPlan{" + count + " members, " + open + " fetching}";
    }
}
