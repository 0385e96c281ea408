package io.kvoffload.bench.cli;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Synthetic KV bytes for the demo: a fast, deterministic function of (layer, token, word), so the
 * demo can verify any read bit-exact without keeping a copy of what it wrote.
 */
final class DemoData {
    private DemoData() {}

    static long word(long seed, int layer, int token, long w) {
        long z = seed + layer * 0x9E3779B97F4A7C15L + token * 0xC2B2AE3D27D4EB4FL + w * 0x165667B19E3779F9L;
        z = (z ^ (z >>> 33)) * 0xff51afd7ed558ccdL;
        z = (z ^ (z >>> 33)) * 0xc4ceb9fe1a85ec53L;
        return z ^ (z >>> 33);
    }

    /** Fills {@code n} tokens from {@code from}: K words then V words, {@code half} bytes each. */
    static void fill(MemorySegment k, MemorySegment v, long seed, int layer, int from, int n, int half) {
        int words = half / 8;
        for (int i = 0; i < n; i++) {
            long base = (long) i * half;
            for (int w = 0; w < words; w++) {
                k.set(ValueLayout.JAVA_LONG_UNALIGNED, base + w * 8L, word(seed, layer, from + i, w));
                v.set(ValueLayout.JAVA_LONG_UNALIGNED, base + w * 8L, word(seed, layer, from + i, w + words));
            }
            for (int b = words * 8; b < half; b++) {
                k.set(ValueLayout.JAVA_BYTE, base + b, (byte) word(seed, layer, from + i, -b));
                v.set(ValueLayout.JAVA_BYTE, base + b, (byte) word(seed, layer, from + i, -b - half));
            }
        }
    }

    /** Whether token {@code token}'s K and V at {@code index} in the gathered buffers are exact. */
    static boolean matches(MemorySegment k, MemorySegment v, int index, long seed, int layer, int token, int half) {
        int words = half / 8;
        long base = (long) index * half;
        for (int w = 0; w < words; w++) {
            if (k.get(ValueLayout.JAVA_LONG_UNALIGNED, base + w * 8L) != word(seed, layer, token, w)
                    || v.get(ValueLayout.JAVA_LONG_UNALIGNED, base + w * 8L) != word(seed, layer, token, w + words)) {
                return false;
            }
        }
        for (int b = words * 8; b < half; b++) {
            if (k.get(ValueLayout.JAVA_BYTE, base + b) != (byte) word(seed, layer, token, -b)
                    || v.get(ValueLayout.JAVA_BYTE, base + b) != (byte) word(seed, layer, token, -b - half)) {
                return false;
            }
        }
        return true;
    }

    static int tokenId(long seed, int t) {
        return (int) (word(seed, -1, t, 0) & 0x1FFFF);
    }
}
