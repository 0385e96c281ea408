package io.kvoffload.internal.decode;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import net.jqwik.api.constraints.UniqueElements;

/**
 * {@link PageCompletion}: every landed key is found where it landed, in any landing order and over
 * steps; a key that did not land this step is never found, and copying it fails instead of copying
 * something else.
 */
class PageCompletionProperties {
    @Property(tries = 200)
    void aLandedKeyIsFoundWhereItLandedAndNoOtherIs(
            @ForAll @Size(max = 600) @UniqueElements List<@IntRange(min = 0, max = 1 << 30) Integer> keys,
            @ForAll @IntRange(min = 0, max = 50) int absent, @ForAll @IntRange(min = 1, max = 3) int steps) {
        PageCompletion c = new PageCompletion();
        for (int step = 0; step < steps; step++) {
            c.clear();
            Map<Integer, Long> at = new HashMap<>();
            for (int i = 0; i < keys.size(); i++) {
                int key = keys.get((i + step) % keys.size()); // another landing order each step
                long offset = 64L * (i + step);
                c.want(key);
                c.landed(key, offset);
                at.put(key, offset);
            }
            assertEquals(keys.size(), c.wantedCount());
            for (int key : keys) {
                assertEquals(at.get(key), c.offsetOf(key), "key " + key);
            }
            for (int k = 0; k < absent; k++) {
                int key = (1 << 30) + 1 + k; // above every landed key
                assertEquals(-1, c.offsetOf(key));
            }
        }
        c.clear();
        for (int key : keys) {
            assertEquals(-1, c.offsetOf(key), "a cleared step holds nothing");
        }
    }

    @Property(tries = 50)
    void copyTakesTheLandedBytesAndRefusesAKeyThatDidNotLand(@ForAll @IntRange(min = 1, max = 64) int entries) {
        int unit = 16;
        byte[] staged = new byte[entries * unit];
        for (int i = 0; i < staged.length; i++) {
            staged[i] = (byte) (i * 31 + 7);
        }
        PageCompletion c = new PageCompletion();
        for (int e = entries - 1; e >= 0; e--) {
            c.want(100 + e);
            c.landed(100 + e, (long) e * unit);
        }
        MemorySegment src = MemorySegment.ofArray(staged);
        for (int e = 0; e < entries; e++) {
            byte[] dst = new byte[unit];
            c.copy(100 + e, src, unit, MemorySegment.ofArray(dst), 0);
            byte[] want = java.util.Arrays.copyOfRange(staged, e * unit, (e + 1) * unit);
            assertArrayEquals(want, dst, "entry " + e);
        }
        IllegalStateException ex = assertThrows(IllegalStateException.class,
                () -> c.copy(99, src, unit, MemorySegment.ofArray(new byte[unit]), 0));
        assertTrue(ex.getMessage().contains("key 99"), ex.getMessage());
    }
}
