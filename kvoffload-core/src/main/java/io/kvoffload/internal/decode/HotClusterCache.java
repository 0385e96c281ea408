package io.kvoffload.internal.decode;

import io.kvoffload.internal.cache.ClusterCache;
import io.kvoffload.internal.cache.CostEffectiveness;
import io.kvoffload.internal.cache.CostEffectivenessCache;
import io.kvoffload.internal.cache.LruClusterCache;
import io.kvoffload.internal.elastic.ElasticDramPool;
import io.kvoffload.internal.elastic.UnitSlots;
import io.kvoffload.internal.storage.ClusterLayout;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * The DRAM copy of one layer's hot clusters (Swarm §5.3 tier 1, §6.3). A {@link ClusterCache}
 * policy decides which clusters stay; this class holds their bytes: entry slots in units of the
 * engine's {@link ElasticDramPool} (SwiftCache's block-major elastic units), a free-slot stack, and
 * for every stored entry of the layout the slot holding it (or -1). A token is resident when any
 * of its replicas is cached, so the bucket scheduler leaves it out of the step's reads (Eq. 8).
 *
 * <p>The budget can change between steps ({@link #resize}): growing takes units, shrinking gives
 * units back, choosing the units whose clusters the policy least wants to keep (Eq. 6's order, or
 * LRU's) and evicting those clusters; no cached entry is copied. A step allocates nothing.
 */
public final class HotClusterCache implements AutoCloseable {
    /** Where the bytes of a token admitted this step come from (the step's gathered view). */
    public interface TokenSource {
        /** Copies token {@code token}'s stored entry (K then V) to {@code dst[offset]}. */
        void copyEntry(int token, MemorySegment dst, long offset);
    }

    private final int entryBytes;
    private final ClusterCache policy;
    private final UnitSlots units;
    private int[] freeSlots = new int[0];
    private int freeCount;
    private ClusterLayout layout;
    private int[] slotOfEntry;

    /**
     * @param entryBytes bytes of one stored entry (K and V of one token)
     * @param budgetBytes DRAM for this layer's cached clusters, rounded down to whole units
     * @param lru LRU instead of Eq. 6's cost-effectiveness
     * @throws io.kvoffload.KvDramExhaustedException when the pool cannot supply the budget
     */
    public HotClusterCache(ElasticDramPool pool, ClusterLayout layout, int entryBytes, long budgetBytes, boolean lru,
            CostEffectiveness score) {
        this.entryBytes = entryBytes;
        this.layout = layout;
        this.units = new UnitSlots(pool, entryBytes);
        ClusterCache.Sizes sizes = c -> (long) this.layout.size(c) * entryBytes;
        this.policy = lru ? new LruClusterCache(layout.clusterCount(), 0, sizes)
                : new CostEffectivenessCache(layout.clusterCount(), 0, entryBytes, sizes, score, null);
        this.slotOfEntry = new int[layout.storedEntries()];
        Arrays.fill(slotOfEntry, -1);
        resize(budgetBytes);
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

    /** Whether this copy, stored entry {@code entry} of the layout, is cached (not just another copy of its token). */
    public boolean holds(int entry) {
        return slotOfEntry[entry] >= 0;
    }

    /** The memory holding {@code slot} ({@link #slotOffset} says where). */
    public MemorySegment slotSegment(int slot) {
        return units.segment(slot);
    }

    public long slotOffset(int slot) {
        return units.offset(slot);
    }

    /**
     * One step: the policy sees the activated clusters; evicted clusters free their slots, then
     * admitted ones are copied in from {@code source} (which holds every activated cluster's tokens).
     */
    public void step(int[] activated, int n, TokenSource source) {
        policy.step(activated, n);
        freeEvicted();
        ClusterLayout l = layout;
        for (int i = 0; i < policy.admittedCount(); i++) {
            int c = policy.admitted(i);
            int from = l.firstEntry(c);
            int to = from + l.size(c);
            for (int e = from; e < to && freeCount > 0; e++) {
                if (slotOfEntry[e] < 0) {
                    int s = freeSlots[--freeCount];
                    source.copyEntry(l.entryToken(e), units.segment(s), units.offset(s));
                    slotOfEntry[e] = s;
                }
            }
        }
    }

    /** Frees the slots of the clusters the policy evicted in its last step or resize. */
    private void freeEvicted() {
        for (int i = 0; i < policy.evictedCount(); i++) {
            freeCluster(policy.evicted(i));
        }
    }

    private void freeCluster(int c) {
        ClusterLayout l = layout;
        int from = l.firstEntry(c);
        int to = from + l.size(c);
        for (int e = from; e < to; e++) {
            if (slotOfEntry[e] >= 0) {
                freeSlots[freeCount++] = slotOfEntry[e];
                slotOfEntry[e] = -1;
            }
        }
    }

    /**
     * Changes the budget between steps. Growing takes units from the pool (their slots are free at
     * once; later steps admit into them). Shrinking first lets the policy evict down to the new budget
     * in its own order, then gives back the units whose most valuable cluster the policy values least
     * (empty units first), evicting every cluster with an entry in them. Cached entries never move.
     *
     * @param budgetBytes the new budget, rounded down to whole units
     * @return the budget in effect (whole units)
     * @throws io.kvoffload.KvDramExhaustedException when growing and the pool has no room (nothing changes)
     */
    public long resize(long budgetBytes) {
        if (budgetBytes < 0) {
            throw new IllegalArgumentException("budgetBytes = " + budgetBytes + "; allowed: 0 or more");
        }
        int target = (int) Math.min(Integer.MAX_VALUE / Math.max(1, units.perUnit()) - 8,
                budgetBytes / units.unitBytes());
        int held = units.heldUnits();
        long entries = (long) target * units.perUnit();
        if (target > held) {
            units.grow(target - held);
            rebuildFreeSlots();
            policy.resize(entries * entryBytes);
            freeEvicted();
        } else if (target < held) {
            policy.resize(entries * entryBytes);
            freeEvicted();
            dropColdestUnits(held - target);
        }
        return entries * entryBytes;
    }

    private void dropColdestUnits(int drop) {
        int cap = units.capacityUnits();
        double[] heat = new double[cap];
        Arrays.fill(heat, Double.NEGATIVE_INFINITY);
        ClusterLayout l = layout;
        int per = units.perUnit();
        for (int c = 0; c < l.clusterCount(); c++) {
            if (!policy.cached(c)) {
                continue;
            }
            double r = policy.retention(c);
            for (int e = l.firstEntry(c); e < l.firstEntry(c) + l.size(c); e++) {
                int s = slotOfEntry[e];
                if (s >= 0 && r > heat[s / per]) {
                    heat[s / per] = r;
                }
            }
        }
        Integer[] order = new Integer[cap];
        int n = 0;
        for (int u = 0; u < cap; u++) {
            if (units.held(u)) {
                order[n++] = u;
            }
        }
        Arrays.sort(order, 0, n, (a, b) -> Double.compare(heat[a], heat[b]));
        boolean[] dropped = new boolean[cap];
        int[] locals = new int[drop];
        for (int i = 0; i < drop; i++) {
            locals[i] = order[i];
            dropped[order[i]] = true;
        }
        // Every cluster with an entry in a dropped unit goes: its bytes are being given back.
        for (int c = 0; c < l.clusterCount(); c++) {
            if (!policy.cached(c)) {
                continue;
            }
            for (int e = l.firstEntry(c); e < l.firstEntry(c) + l.size(c); e++) {
                int s = slotOfEntry[e];
                if (s >= 0 && dropped[s / per]) {
                    policy.remove(c);
                    freeCluster(c);
                    break;
                }
            }
        }
        units.drop(locals, drop);
        rebuildFreeSlots();
    }

    /** The free-slot stack after the held units changed: every slot of a held unit that holds no entry. */
    private void rebuildFreeSlots() {
        int limit = units.slotLimit();
        boolean[] busy = new boolean[limit];
        for (int s : slotOfEntry) {
            if (s >= 0) {
                busy[s] = true;
            }
        }
        if (freeSlots.length < limit) {
            freeSlots = new int[limit];
        }
        freeCount = 0;
        int per = units.perUnit();
        for (int s = limit - 1; s >= 0; s--) {
            if (!busy[s] && units.held(s / per)) {
                freeSlots[freeCount++] = s; // low slots on top: a unit fills front to back
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
        return units.heldUnits() * units.perUnit() - freeCount;
    }

    public int totalSlots() {
        return units.heldUnits() * units.perUnit();
    }

    /** Bytes of elastic units this cache holds. */
    public long heldBytes() {
        return units.heldBytes();
    }

    /** The units behind the slots (for checks: which pool units this cache holds). */
    public UnitSlots units() {
        return units;
    }

    @Override
    public void close() {
        units.close();
    }
}
