package io.kvoffload.iouring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import org.junit.jupiter.api.Test;

/** Lookup of the registered slab that contains a request's buffer. */
class FixedBufferTableTest {
    @Test
    void findsTheContainingRangeOrNothing() {
        FixedBufferTable t = FixedBufferTable.EMPTY.with(0x30000, 0x10000, 7).with(0x10000, 0x8000, 2)
                .with(0x50000, 0x1000, 9);
        assertEquals(3, t.size());
        assertEquals(2, t.find(0x10000, 0x8000));
        assertEquals(2, t.find(0x14000, 0x1000));
        assertEquals(-1, t.find(0x14000, 0x5000), "crosses the end of slab 2");
        assertEquals(-1, t.find(0x18000, 0x1000), "in the gap");
        assertEquals(7, t.find(0x3f000, 0x1000));
        assertEquals(-1, t.find(0x3f000, 0x2000));
        assertEquals(9, t.find(0x50000, 0x1000));
        assertEquals(-1, t.find(0xf000, 0x1000), "below every slab");
        assertEquals(-1, t.find(0x60000, 0x1000), "above every slab");
        assertEquals(-1, FixedBufferTable.EMPTY.find(0x10000, 1));
    }

    @Test
    void withoutAndReplace() {
        FixedBufferTable t = FixedBufferTable.EMPTY.with(0x10000, 0x1000, 1).with(0x20000, 0x1000, 2);
        FixedBufferTable u = t.without(1);
        assertEquals(1, u.size());
        assertEquals(-1, u.find(0x10000, 0x1000));
        assertEquals(2, u.find(0x20000, 0x1000));
        assertSame(u, u.without(5));
        FixedBufferTable moved = t.with(0x40000, 0x1000, 2);
        assertEquals(2, moved.size());
        assertEquals(-1, moved.find(0x20000, 0x1000));
        assertEquals(2, moved.find(0x40000, 0x1000));
    }
}
