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

    /**
     * Changes the byte budget at run time. Shrinking evicts clusters in the policy's own order (the
     * least worth keeping first) until the cached ones fit; they are listed by {@link #evicted}
     * exactly as after a step, and {@link #admitted} is empty. Growing evicts nothing.
     */
    void resize(long budgetBytes);

    /**
     * Drops a cached cluster outside a step, because its holder cannot keep it (its memory is being
     * given back). Not listed by {@link #evicted}.
     *
     * @return false when the cluster was not cached
     */
    boolean remove(int cluster);

    /**
     * How much the policy wants to keep a cached cluster: higher stays longer, so the holder gives
     * back memory of the lowest first (Eq. 6's score; for LRU, the step it was last activated).
     * Negative infinity when not cached.
     */
    double retention(int cluster);

    default double hitRate() {
        long total = hits() + misses();
        return total == 0 ? 0 : (double) hits() / total;
    }
}
