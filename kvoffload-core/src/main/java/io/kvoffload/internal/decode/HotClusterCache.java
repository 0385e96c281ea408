package io.kvoffload.internal.decode;

import io.kvoffload.internal.cache.ClusterCache;
import io.kvoffload.internal.cache.CostEffectiveness;
import io.kvoffload.internal.cache.CostEffectivenessCache;
import io.kvoffload.internal.cache.LruClusterCache;
import io.kvoffload.internal.dram.DramPool;
import io.kvoffload.internal.dram.DramSlot;
import io.kvoffload.internal.storage.ClusterLayout;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * The DRAM copy of one layer's hot clusters (Swarm §5.3 tier 1, §6.3). A {@link ClusterCache}
 * policy decides which clusters stay; this class holds their bytes: a fixed region of
 * {@code budget / entryBytes} entry slots, a free-slot stack, and for every stored entry of the
 * layout the slot holding it (or -1). A token is resident when any of its replicas is cached, so
 * the bucket scheduler leaves it out of the step's reads (Eq. 8).
 *
 * <p>All memory is taken when the cache is created; a step allocates nothing.
 */
public final class HotClusterCache implements AutoCloseable {
    /** Where the bytes of a token admitted this step come from (the step's gathered view). */
    public interface TokenSource {
        /** Copies token {@code token}'s stored entry (K then V) to {@code dst[offset]}. */
        void copyEntry(int token, MemorySegment dst, long offset);
    }

    private final DramPool dram;
    private final int entryBytes;
    private final ClusterCache policy;
    private final DramSlot region;
    private final int[] freeSlots;
    private int freeCount;
    private ClusterLayout layout;
    private int[] slotOfEntry;

    /**
     * @param entryBytes bytes of one stored entry (K and V of one token)
     * @param budgetBytes DRAM for this layer's cached clusters, rounded down to whole entries
     * @param lru LRU instead of Eq. 6's cost-effectiveness
     */
    public HotClusterCache(DramPool dram, ClusterLayout layout, int entryBytes, long budgetBytes, boolean lru,
            CostEffectiveness score) {
        this.dram = dram;
        this.entryBytes = entryBytes;
        int slots = (int) Math.min(Integer.MAX_VALUE - 8, budgetBytes / entryBytes);
        long budget = (long) slots * entryBytes;
        this.layout = layout;
        ClusterCache.Sizes sizes = c -> (long) this.layout.size(c) * entryBytes;
        this.policy = lru ? new LruClusterCache(layout.clusterCount(), budget, sizes)
                : new CostEffectivenessCache(layout.clusterCount(), budget, entryBytes, sizes, score, null);
        this.region = slots > 0 ? dram.acquire(budget) : null;
        this.freeSlots = new int[slots];
        for (int i = 0; i < slots; i++) {
            freeSlots[i] = slots - 1 - i;
        }
        this.freeCount = slots;
        this.slotOfEntry = new int[layout.storedEntries()];
        Arrays.fill(slotOfEntry, -1);
    }

    public ClusterCache policy() {
        return policy;
    }

    /** The slot holding a copy of {@code token}, or -1 if no replica of it is cached. */
    public int slotOf(int token) {
        ClusterLayout l = layout;
        int n = l.replicaCount(token);
        for (int r = 0; r < n; r++) {
            int s = slotOfEntry[l.replica(token, r)];
            if (s >= 0) {
                return s;
            }
        }
        return -1;
    }

    public MemorySegment region() {
        return region.segment();
    }

    public long slotOffset(int slot) {
        return (long) slot * entryBytes;
    }

    /**
     * One step: the policy sees the activated clusters; evicted clusters free their slots, then
     * admitted ones are copied in from {@code source} (which holds every activated cluster's tokens).
     */
    public void step(int[] activated, int n, TokenSource source) {
        policy.step(activated, n);
        ClusterLayout l = layout;
        for (int i = 0; i < policy.evictedCount(); i++) {
            int c = policy.evicted(i);
            int from = l.firstEntry(c);
            int to = from + l.size(c);
            for (int e = from; e < to; e++) {
                if (slotOfEntry[e] >= 0) {
                    freeSlots[freeCount++] = slotOfEntry[e];
                    slotOfEntry[e] = -1;
                }
            }
        }
        MemorySegment mem = region == null ? null : region.segment();
        for (int i = 0; i < policy.admittedCount(); i++) {
            int c = policy.admitted(i);
            int from = l.firstEntry(c);
            int to = from + l.size(c);
            for (int e = from; e < to && freeCount > 0; e++) {
                if (slotOfEntry[e] < 0) {
                    int s = freeSlots[--freeCount];
                    source.copyEntry(l.entryToken(e), mem, (long) s * entryBytes);
                    slotOfEntry[e] = s;
                }
            }
        }
    }

    /**
     * Switches to a layout that extends the current one (online maintenance appended entries):
     * every cluster's existing entries keep their order at the start of the cluster, so their
     * slots carry over; appended entries start uncached.
     */
    public void relayout(ClusterLayout extended) {
        ClusterLayout old = layout;
        int[] map = new int[extended.storedEntries()];
        Arrays.fill(map, -1);
        for (int c = 0; c < old.clusterCount(); c++) {
            int of = old.firstEntry(c);
            int nf = extended.firstEntry(c);
            int n = Math.min(old.size(c), extended.size(c));
            for (int i = 0; i < n; i++) {
                if (old.entryToken(of + i) != extended.entryToken(nf + i)) {
                    throw new IllegalStateException("cluster " + c + " changed its existing entries; cannot carry"
                            + " its cached slots over");
                }
                map[nf + i] = slotOfEntry[of + i];
            }
        }
        slotOfEntry = map;
        layout = extended;
    }

    /** Entry slots in use. */
    public int usedSlots() {
        return freeSlots.length - freeCount;
    }

    public int totalSlots() {
        return freeSlots.length;
    }

    @Override
    public void close() {
        if (region != null) {
            dram.release(region);
        }
    }
}
