package io.kvoffload.internal.kvswap;

import io.kvoffload.internal.util.Checks;
import java.util.Arrays;

/**
 * KVSwap's reuse buffer (§3.4.3, Fig. 7b): per layer a fixed number of DRAM slots, each holding one
 * group of G tokens' K and V, and a slot table recording which group each slot holds. Adjacent
 * decoding steps select largely the same groups (Fig. 8: 75–80% overlap), so a requested group found
 * in the table is a hit and costs no I/O; only misses are read from the SSDs, into slots chosen by
 * the replacement {@link Policy}.
 *
 * <p>This class decides; the storage engine moves the bytes. {@link #request} returns a
 * {@link ReusePlan} naming, for each miss, the slot to fill. A step never evicts a group the same
 * step requested, so every requested group is in its slot when attention runs. One step may request
 * at most {@link #slots()} groups (the artifact asserts reuse budget ≥ fetch budget).
 *
 * <p>Allocation-free per step ({@code O(slots + requested)}); one thread at a time. Counters cover
 * all layers since construction or {@link #resetCounters()}.
 */
public final class ReuseBuffer {
    /** How misses pick the slot they overwrite. */
    public enum Policy {
        /**
         * The paper's FIFO: the slot filled longest ago goes first; a hit does not refresh it.
         * Slots requested by the current step are skipped (and keep their place in the queue), so a
         * group the step needs is never overwritten by a miss of the same step. Empty slots go first.
         */
        FIFO,
        /**
         * The public artifact's policy ({@code CacheManager.get_load_buffer}): misses overwrite the
         * slots whose group this step did not request, in slot order. With as many slots as
         * requested groups (the artifact's setting) the buffer then holds exactly the step's groups.
         */
        REPLACE_UNREQUESTED
    }

    private final int layers;
    private final Policy policy;
    // Not final: resize() swaps them for arrays of the new slot count.
    private int slots;
    private int[][] table; // [layer][slot] → group id or −1
    private GroupSlotMap[] index; // [layer] group → slot
    private int[][] fifo; // [layer] slots, oldest fill first
    private long[][] stamp; // [layer][slot] → step that requested it
    private GroupSlotMap pending;
    private int[] victims;
    private int[] fifoScratch;
    private long step;
    private long requestedTotal;
    private long hitTotal;
    private long evictionTotal;

    /**
     * An empty buffer.
     *
     * @param layers 1..4096
     * @param slots groups per layer, 1..2^20
     */
    public ReuseBuffer(int layers, int slots, Policy policy) {
        this.layers = Checks.inRange("layers", layers, 1, 4096);
        this.policy = Checks.notNull("policy", policy);
        allocate(Checks.inRange("slots", slots, 1, 1 << 20));
        clear();
    }

    private void allocate(int slots) {
        this.slots = slots;
        this.table = new int[layers][slots];
        this.index = new GroupSlotMap[layers];
        this.fifo = new int[layers][slots];
        this.stamp = new long[layers][slots];
        for (int l = 0; l < layers; l++) {
            index[l] = new GroupSlotMap(slots);
        }
        this.pending = new GroupSlotMap(slots);
        this.victims = new int[slots];
        this.fifoScratch = new int[slots];
    }

    /**
     * Changes the slot count between steps (the elastic pool moved this buffer's budget). Slots below
     * the new count keep their groups and their place in the replacement queue; groups in slots at or
     * above it are dropped (their memory is given back, SwiftCache's contraction by the last blocks);
     * new slots are empty and are filled first. Plans from {@link #newPlan()} must be taken again.
     *
     * @param newSlots 1..2^20
     */
    public void resize(int newSlots) {
        Checks.inRange("newSlots", newSlots, 1, 1 << 20);
        if (newSlots == slots) {
            return;
        }
        int old = slots;
        int[][] oldTable = table;
        int[][] oldFifo = fifo;
        long[][] oldStamp = stamp;
        allocate(newSlots);
        int keep = Math.min(old, newSlots);
        for (int l = 0; l < layers; l++) {
            Arrays.fill(table[l], -1);
            for (int s = 0; s < keep; s++) {
                table[l][s] = oldTable[l][s];
                stamp[l][s] = oldStamp[l][s];
                if (oldTable[l][s] >= 0) {
                    index[l].put(oldTable[l][s], s);
                }
            }
            // Queue: new (empty) slots first, then the kept slots in their old order.
            int q = 0;
            for (int s = old; s < newSlots; s++) {
                fifo[l][q++] = s;
            }
            for (int i = 0; i < old; i++) {
                if (oldFifo[l][i] < newSlots) {
                    fifo[l][q++] = oldFifo[l][i];
                }
            }
        }
    }

    public int layers() { return layers; }
    /** Slots per layer (C, in groups). */
    public int slots() { return slots; }
    public Policy policy() { return policy; }

    /** A plan to pass to {@link #request}: preallocate one per thread, reuse it every step. */
    public ReusePlan newPlan() {
        return new ReusePlan(slots);
    }

    /**
     * Looks up one layer's requested groups for a step: marks hits, assigns each miss a slot (the
     * slot table is updated as if the misses were already loaded) and updates the counters. Checks
     * every argument before changing anything.
     *
     * @param groups distinct group ids ≥ 0 in {@code groups[0 .. count)}
     * @param count 0..slots()
     * @param plan receives the decision (from {@link #newPlan()} of this buffer)
     * @throws IllegalArgumentException on a bad layer, count, negative or repeated group
     */
    public ReusePlan request(int layer, int[] groups, int count, ReusePlan plan) {
        Checks.index("layer", layer, layers);
        Checks.notNull("groups", groups);
        Checks.notNull("plan", plan);
        if (plan.slots() != slots) {
            throw new IllegalArgumentException("plan.slots() = " + plan.slots() + " must equal slots = " + slots
                    + " (use newPlan() of this buffer)");
        }
        Checks.inRange("count", count, 0, Math.min(slots, groups.length));
        long now = ++step;
        long[] stamps = stamp[layer];
        GroupSlotMap map = index[layer];
        pending.clear();
        int misses = 0;
        for (int i = 0; i < count; i++) {
            int g = groups[i];
            if (g < 0) {
                throw new IllegalArgumentException("groups[" + i + "] = " + g + " is out of range; allowed: ≥ 0");
            }
            int s = map.get(g);
            boolean repeated;
            if (s >= 0) {
                repeated = stamps[s] == now;
                stamps[s] = now; // pinned: no miss of this step may take it
            } else {
                repeated = pending.get(g) >= 0;
                pending.put(g, i);
            }
            if (repeated) {
                throw new IllegalArgumentException("groups[" + i + "] = " + g
                        + " was already requested in this step; allowed: distinct group ids");
            }
            plan.groups[i] = g;
            plan.slotOf[i] = s;
            plan.hit[i] = s >= 0;
            if (s < 0) {
                plan.missIndex[misses++] = i;
            }
        }
        // Everything is valid: from here on the table changes.
        chooseVictims(layer, misses, now);
        int[] slotTable = table[layer];
        for (int j = 0; j < misses; j++) {
            int i = plan.missIndex[j];
            int s = victims[j];
            int old = slotTable[s];
            if (old >= 0) {
                map.remove(old);
                evictionTotal++;
            }
            plan.evicted[j] = old;
            slotTable[s] = plan.groups[i];
            map.put(plan.groups[i], s);
            stamps[s] = now;
            plan.slotOf[i] = s;
        }
        plan.layer = layer;
        plan.requested = count;
        plan.hits = count - misses;
        plan.misses = misses;
        requestedTotal += count;
        hitTotal += count - misses;
        return plan;
    }

    /** Fills {@code victims[0 .. k)} with slots not stamped {@code now}, per the policy. */
    private void chooseVictims(int layer, int k, long now) {
        if (k == 0) {
            return;
        }
        long[] stamps = stamp[layer];
        if (policy == Policy.REPLACE_UNREQUESTED) {
            int v = 0;
            for (int s = 0; s < slots && v < k; s++) {
                if (stamps[s] != now) {
                    victims[v++] = s;
                }
            }
            return;
        }
        // FIFO: take the first k unpinned slots of the queue; they move to its tail in fill order,
        // the others keep their relative order.
        int[] queue = fifo[layer];
        int v = 0, kept = 0;
        for (int i = 0; i < slots; i++) {
            int s = queue[i];
            if (v < k && stamps[s] != now) {
                victims[v++] = s;
            } else {
                fifoScratch[kept++] = s;
            }
        }
        System.arraycopy(fifoScratch, 0, queue, 0, kept);
        System.arraycopy(victims, 0, queue, kept, k);
    }

    // ---------------------------------------------------------------- slot table

    /** The group in {@code slot} of {@code layer}, or −1 if empty. */
    public int groupAt(int layer, int slot) {
        Checks.index("layer", layer, layers);
        Checks.index("slot", slot, slots);
        return table[layer][slot];
    }

    /** The slot holding {@code group} in {@code layer}, or −1. */
    public int slotOf(int layer, int group) {
        Checks.index("layer", layer, layers);
        return group < 0 ? -1 : index[layer].get(group);
    }

    /** Non-empty slots of {@code layer}. */
    public int occupied(int layer) {
        Checks.index("layer", layer, layers);
        int n = 0;
        for (int g : table[layer]) {
            if (g >= 0) {
                n++;
            }
        }
        return n;
    }

    /**
     * For FIFO, the {@code i}-th slot of {@code layer}'s replacement queue (0 = replaced first); for
     * REPLACE_UNREQUESTED, slot {@code i}.
     */
    public int queueSlot(int layer, int i) {
        Checks.index("layer", layer, layers);
        Checks.index("i", i, slots);
        return policy == Policy.FIFO ? fifo[layer][i] : i;
    }

    /** Empties one layer (a new sequence, or the layer's groups changed). */
    public void clear(int layer) {
        Checks.index("layer", layer, layers);
        Arrays.fill(table[layer], -1);
        index[layer].clear();
        for (int s = 0; s < slots; s++) {
            fifo[layer][s] = s;
        }
        Arrays.fill(stamp[layer], 0);
    }

    /** Empties every layer; the counters stay. */
    public void clear() {
        for (int l = 0; l < layers; l++) {
            clear(l);
        }
    }

    // ---------------------------------------------------------------- counters

    /** Groups requested over all layers and steps. */
    public long requestedGroups() { return requestedTotal; }
    /** Requests served from the buffer. */
    public long hitGroups() { return hitTotal; }
    /** Requests read from the SSDs. */
    public long missGroups() { return requestedTotal - hitTotal; }
    /** Misses that overwrote a valid group. */
    public long evictions() { return evictionTotal; }

    /** The reuse rate: hits / requested (NaN before any request). */
    public double reuseRate() {
        return requestedTotal == 0 ? Double.NaN : hitTotal / (double) requestedTotal;
    }

    public void resetCounters() {
        requestedTotal = 0;
        hitTotal = 0;
        evictionTotal = 0;
    }

    @Override
    public String toString() {
        return "ReuseBuffer{layers=" + layers + ", slots=" + slots + ", policy=" + policy + ", reuse="
                + reuseRate() + "}";
    }
}
