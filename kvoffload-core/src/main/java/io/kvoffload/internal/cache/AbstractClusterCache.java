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

    AbstractClusterCache(long budgetBytes, Sizes sizes) {
        this.budget = Checks.inRange("budgetBytes", budgetBytes, 0, Long.MAX_VALUE);
        this.sizes = Checks.notNull("sizes", sizes);
    }

    /** Grows the per-step lists to hold {@code clusters} ids (called when the id range grows). */
    protected void growLists(int clusters) {
        if (clusters > admitted.length) {
            admitted = Arrays.copyOf(admitted, clusters);
            evicted = Arrays.copyOf(evicted, clusters);
        }
    }

    protected void beginStep() {
        admittedCount = 0;
        evictedCount = 0;
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
