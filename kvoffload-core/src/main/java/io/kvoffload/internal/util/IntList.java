package io.kvoffload.internal.util;

import java.util.Arrays;

/** A growable list of ints, for results whose size is known only at the end (no boxing). */
public final class IntList {
    private int[] data = new int[16];
    private int size;

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

    /** The values added, in order, as an array of their own. */
    public int[] toArray() {
        return Arrays.copyOf(data, size);
    }
}
