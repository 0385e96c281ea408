package io.kvoffload.internal.util;

import java.util.Arrays;

/** A growable list of ints, for results whose size is known only at the end (no boxing). */
public final class IntList {
    private int[] data;
    private int size;

    public IntList() {
        this(16);
    }

    /** An empty list with room for {@code capacity} values before it first grows. */
    public IntList(int capacity) {
        data = new int[Math.max(1, capacity)];
    }

    public void add(int v) {
        if (size == data.length) {
            data = Arrays.copyOf(data, size * 2);
        }
        data[size++] = v;
    }

    public int size() {
        return size;
    }

    /** The {@code i}-th value added, {@code i < size()}. */
    public int get(int i) {
        Checks.index("i", i, size);
        return data[i];
    }

    /** Forgets the values; the capacity stays, so refilling to the same size allocates nothing. */
    public void clear() {
        size = 0;
    }

    /** The backing array, {@code [0, size())} valid, for readers that must not copy; changes with the next growth. */
    public int[] array() {
        return data;
    }

    /** The values added, in order, as an array of their own. */
    public int[] toArray() {
        return Arrays.copyOf(data, size);
    }
}
