package io.kvoffload.internal.cache;

import io.kvoffload.internal.util.Checks;
import java.util.Arrays;

/**
 * What every cluster-cache policy keeps alike: the budget, hit and miss counters, and the lists of
 * clusters admitted and evicted during the last step (netted: a cluster admitted and evicted within
 * one step appears in neither).
 */
abstract class AbstractClusterCache implements ClusterCache {
    /** Not final: a policy may let its budget change at run time (the HBM tier resizes). */
    protected long budget;
    protected final Sizes sizes;
    protected long used;
    protected long hits;
    protected long misses;
    private int[] admitted = new int[16];
    private int admittedCount;
    private int[] evicted = new int[16];
    private int evictedCount;
    /** Per cluster id: the step stamp that last saw it activated (a cluster counts once per step). */
    private int[] seenStamp = new int[16];
    private int stamp;

    AbstractClusterCache(long budgetBytes, Sizes sizes) {
        this.budget = Checks.inRange("budgetBytes", budgetBytes, 0, Long.MAX_VALUE);
        this.sizes = Checks.notNull("sizes", sizes);
    }

    /** Number of cluster ids the policy's per-cluster arrays hold now. */
    protected abstract int capacity();

    /** Grows the policy's per-cluster arrays to {@code clusters} ids; calls {@link #growLists}. */
    protected abstract void grow(int clusters);

    /** Grows the per-step lists to hold {@code clusters} ids (called when the id range grows). */
    protected void growLists(int clusters) {
        if (clusters > admitted.length) {
            admitted = Arrays.copyOf(admitted, clusters);
            evicted = Arrays.copyOf(evicted, clusters);
        }
        if (clusters > seenStamp.length) {
            seenStamp = Arrays.copyOf(seenStamp, clusters);
        }
    }

    /** Starts a step (or a resize): empties the per-step lists and forgets which clusters were seen. */
    protected void beginStep() {
        admittedCount = 0;
        evictedCount = 0;
        if (++stamp == 0) {
            Arrays.fill(seenStamp, 0);
            stamp = 1;
        }
    }

    /**
     * {@code activated[i]} checked (a cluster id, at least 0; the per-cluster arrays grow to hold
     * it) and marked seen, or -1 when this step has seen it already: a cluster counts once per step.
     */
    protected final int firstActivation(int[] activated, int i) {
        int c = activated[i];
        if (c < 0) {
            throw new IllegalArgumentException("activated[" + i + "] = " + c + "; allowed: cluster ids >= 0");
        }
        if (c >= capacity()) {
            grow(Math.max(c + 1, capacity() * 2));
        }
        if (seenStamp[c] == stamp) {
            return -1;
        }
        seenStamp[c] = stamp;
        return c;
    }

    /** Whether this step has activated {@code cluster} (its id is within {@link #capacity}). */
    protected final boolean seenThisStep(int cluster) {
        return seenStamp[cluster] == stamp;
    }

    /** Marks {@code cluster} handled: a later {@link #seenThisStep} says false for the rest of the step. */
    protected final void markHandled(int cluster) {
        seenStamp[cluster] = stamp - 1;
    }

    /**
     * Takes the cached cluster the policy least wants to keep out of its structure (its bytes still
     * counted in {@link #used}); returns it, or -1 when none is cached.
     */
    protected abstract int detachLeastWorth();

    /** Takes a cached cluster out of the policy's structure (its bytes still counted in {@link #used}). */
    protected abstract void detach(int cluster);

    @Override
    public void resize(long budgetBytes) {
        Checks.inRange("budgetBytes", budgetBytes, 0, Long.MAX_VALUE);
        beginStep();
        budget = budgetBytes;
        while (used > budget) {
            int victim = detachLeastWorth();
            if (victim < 0) {
                break;
            }
            used -= sizes.bytes(victim);
            recordEviction(victim);
        }
    }

    @Override
    public boolean remove(int cluster) {
        if (!cached(cluster)) {
            return false;
        }
        detach(cluster);
        used -= sizes.bytes(cluster);
        return true;
    }

    protected void recordAdmission(int cluster) {
        admitted[admittedCount++] = cluster;
    }

    /** Reports an eviction; a cluster admitted earlier in this step is simply un-admitted (never loaded). */
    protected void recordEviction(int victim) {
        for (int i = 0; i < admittedCount; i++) {
            if (admitted[i] == victim) {
                admitted[i] = admitted[--admittedCount];
                return;
            }
        }
        evicted[evictedCount++] = victim;
    }

    @Override
    public long usedBytes() {
        return used;
    }

    @Override
    public long budgetBytes() {
        return budget;
    }

    @Override
    public long hits() {
        return hits;
    }

    @Override
    public long misses() {
        return misses;
    }

    @Override
    public int admittedCount() {
        return admittedCount;
    }

    @Override
    public int admitted(int i) {
        return admitted[Checks.index("i", i, admittedCount)];
    }

    @Override
    public int evictedCount() {
        return evictedCount;
    }

    @Override
    public int evicted(int i) {
        return evicted[Checks.index("i", i, evictedCount)];
    }
}
