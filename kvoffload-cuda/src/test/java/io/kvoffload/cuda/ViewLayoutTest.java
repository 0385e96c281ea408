package io.kvoffload.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ViewLayoutTest {
    @Test
    void headsAreContiguousKeysThenValues() {
        ViewLayout l = new ViewLayout(2, 4, 2, 16, 3); // rows of 8 bytes
        assertEquals(8, l.rowBytes());
        assertEquals(24, l.headStride(), "heads dense: 3 tokens × 8 bytes");
        assertEquals(0, l.keysOffset(0));
        assertEquals(24, l.keysOffset(1));
        assertEquals(48, l.valuesOffset(0));
        assertEquals(72, l.valuesOffset(1));
        assertEquals(96, l.kvBytes());
        assertEquals(96, l.positionsOffset());
        assertEquals(112, l.blockTableOffset()); // 96 + 12 rounded to 16
        assertEquals(1, l.blockCount());
        assertEquals(128, l.headMasksOffset()); // 112 + 4, rounded to 16
        assertEquals(24, l.headMasksBytes()); // 3 rows × int64
        assertEquals(160, l.totalBytes()); // 128 + 24 rounded to 16
    }

    @Test
    void headMasksFollowTheBlockTableInsideTheCapacity() {
        for (int tokens : new int[] {0, 1, 15, 16, 17, 100, 4096}) {
            ViewLayout l = new ViewLayout(8, 128, 2, 16, tokens);
            long tableEnd = l.blockTableOffset() + 4L * l.blockCount();
            assertTrue(l.headMasksOffset() >= tableEnd, "no overlap with the block table at " + tokens);
            assertEquals(0, l.headMasksOffset() % 8, "int64-aligned at " + tokens);
            assertEquals(8L * tokens, l.headMasksBytes());
            assertTrue(l.headMasksOffset() + l.headMasksBytes() <= l.totalBytes(), "inside the view at " + tokens);
            assertTrue(l.totalBytes() <= ViewLayout.capacityBytes(8, 128, 2, 16, 4096),
                    "a buffer for 4096 tokens holds the masks of " + tokens);
        }
        ViewLayout empty = new ViewLayout(1, 1, 4, 16, 0);
        assertEquals(0, empty.headMasksBytes());
        assertEquals(0, empty.totalBytes());
    }

    @Test
    void blockCountRoundsUp() {
        assertEquals(3, new ViewLayout(1, 1, 4, 16, 33).blockCount());
        assertEquals(0, new ViewLayout(1, 1, 4, 16, 0).blockCount());
        assertTrue(ViewLayout.capacityBytes(8, 128, 2, 16, 4096) >= 2L * 8 * 128 * 2 * 4096);
    }

    @Test
    void badValuesNameTheArgument() {
        var e = assertThrows(IllegalArgumentException.class, () -> new ViewLayout(0, 4, 2, 16, 3));
        assertTrue(e.getMessage().startsWith("kvHeads = 0"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new ViewLayout(2, 4, 2, 16, 3).keysOffset(2));
        assertTrue(e.getMessage().contains("allowed: 0..1"), e.getMessage());
    }
}
