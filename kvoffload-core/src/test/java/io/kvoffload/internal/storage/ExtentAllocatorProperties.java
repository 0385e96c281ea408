package io.kvoffload.internal.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;

/** Allocated extents never overlap, stay aligned and inside the pool, and freeing restores all space. */
class ExtentAllocatorProperties {
    @Property(tries = 200)
    void extentsAreDisjointAlignedAndInBounds(@ForAll long seed) {
        Random rnd = new Random(seed);
        long align = 1L << (9 + rnd.nextInt(4));
        long cap = align * (16 + rnd.nextInt(500));
        ExtentAllocator a = new ExtentAllocator(cap, align);
        List<long[]> live = new ArrayList<>();
        for (int step = 0; step < 400; step++) {
            if (!live.isEmpty() && rnd.nextInt(3) == 0) {
                long[] x = live.remove(rnd.nextInt(live.size()));
                a.free(x[0], x[1]);
            } else {
                long len = align * (1 + rnd.nextInt(8));
                long off = a.allocate(len);
                if (off < 0) {
                    assertTrue(a.freeBytes() < cap, "refused only when space is short or fragmented");
                    continue;
                }
                assertEquals(0, off % align);
                assertTrue(off >= 0 && off + len <= cap);
                for (long[] y : live) {
                    assertTrue(off + len <= y[0] || y[0] + y[1] <= off, "overlap");
                }
                live.add(new long[] {off, len});
            }
            long used = live.stream().mapToLong(x -> x[1]).sum();
            assertEquals(cap - used, a.freeBytes());
        }
        for (long[] x : live) {
            a.free(x[0], x[1]);
        }
        assertEquals(cap, a.freeBytes());
        assertEquals(0, a.allocate(cap), "all space coalesces back into one range");
    }

    @Test
    void doubleFreeAndDoubleClaimAreRefused() {
        ExtentAllocator a = new ExtentAllocator(1 << 16, 4096);
        long off = a.allocate(8192);
        assertThrows(IllegalStateException.class, () -> a.markUsed(off, 4096));
        a.free(off, 8192);
        assertThrows(IllegalStateException.class, () -> a.free(off, 4096));
        assertThrows(IllegalArgumentException.class, () -> a.allocate(100));
    }
}
