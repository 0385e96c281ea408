package io.kvoffload.internal.cache;

/**
 * Which clusters the DRAM tier keeps, under a byte budget. Each decoding step reports the activated
 * clusters; the policy answers which are hits and which to admit or evict. It only decides: moving
 * bytes is the caller's job. Implementations allocate nothing per step.
 */
public interface ClusterCache {
    /** Bytes of the cluster, as the cache accounts it. */
    interface Sizes {
        long bytes(int cluster);
    }

    /**
     * Processes one step's activated clusters (duplicates allowed). Afterwards {@link #admitted}
     * and {@link #evicted} list this step's changes.
     */
    void step(int[] activated, int n);

    boolean cached(int cluster);

    long usedBytes();

    long budgetBytes();

    /** Activated clusters found cached, since creation. */
    long hits();

    /** Activated clusters not cached when activated, since creation. */
    long misses();

    /**
     * Clusters admitted during the last step (to be loaded into DRAM). A cluster admitted and
     * evicted within one step appears in neither list.
     */
    int admittedCount();

    int admitted(int i);

    /** Clusters evicted during the last step (their DRAM may be reused). */
    int evictedCount();

    int evicted(int i);

    default double hitRate() {
        long total = hits() + misses();
        return total == 0 ? 0 : (double) hits() / total;
    }
}
