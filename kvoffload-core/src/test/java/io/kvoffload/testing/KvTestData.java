package io.kvoffload.testing;

import io.kvoffload.KvShape;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Deterministic KV bytes: the content of token {@code t} of layer {@code l} in a sequence with
 * seed {@code s} is a pure function of (s, l, t, byte), so tests can verify any read bit-exact
 * without keeping what they wrote.
 */
public final class KvTestData {
    private KvTestData() {}

    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    /** Fills {@code n} tokens starting at {@code from}; K when {@code value} is false, else V. */
    public static void fill(MemorySegment out, KvShape shape, long seed, int layer, int from, int n, boolean value) {
        int half = shape.halfEntryBytes();
        for (int i = 0; i < n; i++) {
            long base = mix(seed * 0x9E3779B97F4A7C15L + layer * 0x632BE59BD9B4E019L + (from + i) * 0x85157AF5L
                    + (value ? 1 : 0));
            for (int b = 0; b < half; b++) {
                out.set(ValueLayout.JAVA_BYTE, (long) i * half + b, (byte) mix(base + b));
            }
        }
    }

    public static MemorySegment tokens(Arena arena, KvShape shape, long seed, int layer, int from, int n,
            boolean value) {
        MemorySegment seg = arena.allocate((long) Math.max(1, n) * shape.halfEntryBytes(), 8)
                .asSlice(0, (long) n * shape.halfEntryBytes());
        fill(seg, shape, seed, layer, from, n, value);
        return seg;
    }

    /** Token id of position {@code t} in a sequence with seed {@code s}. */
    public static int tokenId(long seed, int t) {
        return (int) (mix(seed * 31 + t) & 0x7fff);
    }

    public static int[] tokenIds(long seed, int from, int n) {
        int[] ids = new int[n];
        for (int i = 0; i < n; i++) {
            ids[i] = tokenId(seed, from + i);
        }
        return ids;
    }

    /**
     * Returns the index of the first position whose read-back K or V differs from the expected
     * bytes, or -1 if all match.
     */
    public static int firstMismatch(MemorySegment keys, MemorySegment values, KvShape shape, long seed, int layer,
            int[] positions) {
        int half = shape.halfEntryBytes();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment expK = arena.allocate(half);
            MemorySegment expV = arena.allocate(half);
            for (int i = 0; i < positions.length; i++) {
                fill(expK, shape, seed, layer, positions[i], 1, false);
                fill(expV, shape, seed, layer, positions[i], 1, true);
                if (keys.asSlice((long) i * half, half).mismatch(expK) != -1
                        || values.asSlice((long) i * half, half).mismatch(expV) != -1) {
                    return i;
                }
            }
        }
        return -1;
    }
}
