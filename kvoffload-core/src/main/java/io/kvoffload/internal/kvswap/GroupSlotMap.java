package io.kvoffload.internal.kvswap;

import java.util.Arrays;

/**
 * The reverse of one layer's slot table: group id → reuse slot. Open addressing with linear probing
 * and backward-shift deletion, sized at twice the slots rounded up to a power of two, so lookups stay
 * short and nothing is allocated after construction (a {@code HashMap<Integer, Integer>} would box).
 */
final class GroupSlotMap {
    private static final int EMPTY = -1;

    private final int[] keys;
    private final int[] values;
    private final int mask;

    GroupSlotMap(int slots) {
        int cap = Integer.highestOneBit(Math.max(2, slots * 2 - 1)) << 1;
        keys = new int[cap];
        values = new int[cap];
        mask = cap - 1;
        Arrays.fill(keys, EMPTY);
    }

    private static int hash(int key) {
        int h = key * 0x9E3779B9; // Fibonacci hashing spreads consecutive group ids
        return h ^ (h >>> 16);
    }

    /** The slot holding {@code group}, or −1. */
    int get(int group) {
        for (int i = hash(group) & mask; ; i = (i + 1) & mask) {
            int k = keys[i];
            if (k == group) {
                return values[i];
            }
            if (k == EMPTY) {
                return -1;
            }
        }
    }

    /** Maps {@code group} (not present) to {@code slot}. */
    void put(int group, int slot) {
        int i = hash(group) & mask;
        while (keys[i] != EMPTY) {
            i = (i + 1) & mask;
        }
        keys[i] = group;
        values[i] = slot;
    }

    /** Removes {@code group} (present), shifting later entries of its probe run back. */
    void remove(int group) {
        int i = hash(group) & mask;
        while (keys[i] != group) {
            i = (i + 1) & mask;
        }
        int hole = i;
        for (int j = (hole + 1) & mask; keys[j] != EMPTY; j = (j + 1) & mask) {
            int home = hash(keys[j]) & mask;
            // Move j into the hole unless its home lies cyclically in (hole, j].
            boolean stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
            if (!stays) {
                keys[hole] = keys[j];
                values[hole] = values[j];
                hole = j;
            }
        }
        keys[hole] = EMPTY;
    }

    void clear() {
        Arrays.fill(keys, EMPTY);
    }
}
