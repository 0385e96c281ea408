package io.kvoffload.internal.cache;

/**
 * Swarm's cost-effectiveness score of caching a cluster [Swarm §5.2, Eq. 6], one pluggable function
 * because the equation's grouping is ambiguous: the paper's text lost its formulas, and the
 * reconstruction admits both readings below (docs/architecture.md, References).
 */
@FunctionalInterface
public interface CostEffectiveness {
    /**
     * @param frequency the cluster's activation frequency f_C
     * @param entries the cluster's size |C| in entries
     */
    double score(int frequency, int entries);

    /**
     * The default reading, {@code S(C) = (f_C · T_addr + |C| · T_entry) / |C|}: the I/O time saved
     * per cached entry.
     */
    static CostEffectiveness savedIoPerEntry(double addressNanos, double entryNanos) {
        return (f, n) -> (f * addressNanos + n * entryNanos) / Math.max(1, n);
    }

    /** The other reading, {@code S(C) = f_C · (T_addr + |C| · T_entry) / |C|}. */
    static CostEffectiveness frequencyWeighted(double addressNanos, double entryNanos) {
        return (f, n) -> f * (addressNanos + n * entryNanos) / Math.max(1, n);
    }
}
