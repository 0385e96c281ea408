package io.kvoffload.internal.kvswap;

import io.kvoffload.internal.util.Checks;

/**
 * What one layer's {@link ReuseBuffer} decided for one decoding step: for every requested group,
 * the slot it sits in after the step and whether it was already there (a hit: no I/O); for every
 * miss, which slot to fill from the SSDs and which group that slot held before. The storage engine
 * reads group {@code group(missIndex(j))} into slot {@code slot(missIndex(j))}.
 *
 * <p>A plan is preallocated for the buffer's slot count ({@link ReuseBuffer#newPlan()}) and
 * overwritten by every {@link ReuseBuffer#request} call; reading it allocates nothing.
 */
public final class ReusePlan {
    private final int slots;
    final int[] groups;
    final int[] slotOf;
    final boolean[] hit;
    final int[] missIndex;
    final int[] evicted;
    int layer = -1;
    int requested;
    int hits;
    int misses;

    ReusePlan(int slots) {
        this.slots = slots;
        this.groups = new int[slots];
        this.slotOf = new int[slots];
        this.hit = new boolean[slots];
        this.missIndex = new int[slots];
        this.evicted = new int[slots];
    }

    /** Slots of the buffer the plan belongs to (the most groups one step may request). */
    public int slots() { return slots; }
    /** The layer of the last request, or −1 before the first. */
    public int layer() { return layer; }
    /** Groups requested. */
    public int requested() { return requested; }
    /** Requested groups already in the buffer. */
    public int hits() { return hits; }
    /** Requested groups to load: {@code requested() − hits()}. */
    public int misses() { return misses; }

    /** The {@code i}-th requested group. */
    public int group(int i) {
        Checks.index("i", i, requested);
        return groups[i];
    }

    /** The slot the {@code i}-th requested group occupies after the step. */
    public int slot(int i) {
        Checks.index("i", i, requested);
        return slotOf[i];
    }

    /** Whether the {@code i}-th requested group was already present. */
    public boolean hit(int i) {
        Checks.index("i", i, requested);
        return hit[i];
    }

    /** The request index of the {@code j}-th miss (ascending). */
    public int missIndex(int j) {
        Checks.index("j", j, misses);
        return missIndex[j];
    }

    /** The group the {@code j}-th miss's slot held before the step, or −1 if it was empty. */
    public int evicted(int j) {
        Checks.index("j", j, misses);
        return evicted[j];
    }

    @Override
    public String toString() {
        return "ReusePlan{layer=" + layer + ", requested=" + requested + ", hits=" + hits + ", misses=" + misses + "}";
    }
}
