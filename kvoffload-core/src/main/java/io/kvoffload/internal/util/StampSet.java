package io.kvoffload.internal.util;

import java.util.Arrays;

/**
 * A set of small non-negative ints that empties in O(1): each member holds the generation it was
 * added in, and {@link #clear} moves to the next generation, so a decode step starts a fresh set
 * without touching the array and allocates nothing once it has grown. The stamps start over when
 * the generation wraps (after 2^31 clears). Not thread-safe: one owner, as the per-step sets of the
 * view, the fetch plan and the selectors are.
 */
public final class StampSet {
    private int[] stamp;
    private int generation = 1;

    /** An empty set that grows on demand. */
    public StampSet() {
        this(0);
    }

    /** An empty set with room for members {@code [0, capacity)}. */
    public StampSet(int capacity) {
        stamp = new int[Checks.inRange("capacity", capacity, 0, Integer.MAX_VALUE)];
    }

    /**
     * Empties the set and makes room for members {@code [0, n)}, growing by at least half (so a
     * context that grows a token per step reallocates rarely). Returns whether it grew: an owner
     * that keeps arrays indexed like the members grows them to {@link #capacity()} then.
     */
    public boolean clear(int n) {
        boolean grew = false;
        if (stamp.length < n) {
            stamp = new int[Math.max(n, stamp.length + (stamp.length >> 1) + 1024)];
            generation = 0;
            grew = true;
        }
        if (++generation == Integer.MAX_VALUE) {
            Arrays.fill(stamp, 0);
            generation = 1;
        }
        return grew;
    }

    /** Adds {@code i}, growing to hold it; returns whether it was absent. */
    public boolean add(int i) {
        if (i >= stamp.length) {
            stamp = Arrays.copyOf(stamp, Math.max(i + 1, stamp.length * 2));
        }
        if (stamp[i] == generation) {
            return false;
        }
        stamp[i] = generation;
        return true;
    }

    /** Whether {@code i} was added since the last {@link #clear}. */
    public boolean contains(int i) {
        return i < stamp.length && stamp[i] == generation;
    }

    /** Members the set holds without growing. */
    public int capacity() {
        return stamp.length;
    }
}
