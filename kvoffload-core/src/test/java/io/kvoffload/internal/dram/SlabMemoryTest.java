package io.kvoffload.internal.dram;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvoffload.internal.ffi.AnonymousMemory;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class SlabMemoryTest {
    private static final long MIB = 1L << 20;

    @Test
    void aHugePageSlabIsAlignedZeroedThpEligibleAndUnmappedWhenItsArenaCloses() throws IOException {
        assumeTrue(AnonymousMemory.available(), "native access unavailable");
        Arena arena = Arena.ofShared();
        MemorySegment slab = SlabMemory.allocate(arena, 4 * MIB, true);
        long address = slab.address();
        assertEquals(4 * MIB, slab.byteSize());
        assertEquals(0, address % AnonymousMemory.HUGE_PAGE, "2 MiB-aligned, so THP can back every page of it");
        for (long off = 0; off < slab.byteSize(); off += 8) {
            if (slab.get(ValueLayout.JAVA_LONG, off) != 0) {
                throw new AssertionError("byte " + off + " of a fresh mapping is not zero");
            }
        }
        slab.set(ValueLayout.JAVA_LONG, slab.byteSize() - 8, 0x0123456789abcdefL);
        assertEquals(0x0123456789abcdefL, slab.get(ValueLayout.JAVA_LONG, slab.byteSize() - 8));
        List<String> vma = mapping(address);
        assertFalse(vma.isEmpty(), "the slab is a mapping of its own");
        if (!Files.readString(Path.of("/sys/kernel/mm/transparent_hugepage/enabled")).contains("[never]")) {
            assertTrue(vma.stream().anyMatch(l -> l.matches("THPeligible:\\s+1")),
                    "MADV_HUGEPAGE took effect: " + vma);
        }
        arena.close();
        assertFalse(slab.scope().isAlive());
        assertTrue(mapping(address).isEmpty(), "closing the arena unmaps the slab");
    }

    @Test
    void smallSlabsAndSlabsWithoutHugePagesArePageAligned() {
        try (Arena arena = Arena.ofShared()) {
            for (boolean huge : new boolean[] {true, false}) {
                for (long bytes : new long[] {4096, 64 << 10, 3 * MIB + 4096}) {
                    MemorySegment s = SlabMemory.allocate(arena, bytes, huge);
                    assertEquals(bytes, s.byteSize());
                    assertEquals(0, s.address() % DramPool.ALIGNMENT, bytes + " bytes, huge pages " + huge);
                    s.fill((byte) 7);
                    assertEquals(7, s.get(ValueLayout.JAVA_BYTE, bytes - 1));
                }
            }
        }
    }

    @Test
    void badSizesAreRefusedNamingTheArgument() {
        try (Arena arena = Arena.ofConfined()) {
            for (long bytes : new long[] {0, -4096, 4095, 4097}) {
                var e = assertThrows(IllegalArgumentException.class, () -> AnonymousMemory.map(arena, bytes));
                assertTrue(e.getMessage().contains("bytes = " + bytes) && e.getMessage().contains("multiple of 4096"),
                        e.getMessage());
            }
        }
    }

    @Test
    void mappingIntoAClosedArenaLeavesNothingMapped() {
        assumeTrue(AnonymousMemory.available(), "native access unavailable");
        Arena arena = Arena.ofShared();
        arena.close();
        assertThrows(IllegalStateException.class, () -> AnonymousMemory.map(arena, 4 * MIB));
    }

    @Test
    void theDramPoolsSlabsAreHugePageAlignedUnlessTurnedOff() {
        assumeTrue(AnonymousMemory.available(), "native access unavailable");
        try (DramPool huge = new DramPool(16 * MIB, 4 * MIB, true); DramPool plain = new DramPool(16 * MIB, 4 * MIB, false)) {
            assertTrue(huge.hugePages());
            assertFalse(plain.hugePages());
            DramSlot a = huge.acquire(64 << 10);
            DramSlot b = plain.acquire(64 << 10);
            assertNotNull(a);
            assertNotNull(b);
            assertEquals(0, a.segment().address() % AnonymousMemory.HUGE_PAGE, "first slot of a huge-page slab");
            assertEquals(0, b.segment().address() % DramPool.ALIGNMENT);
            huge.release(a);
            plain.release(b);
        }
    }

    /** The lines of /proc/self/smaps for the mapping that starts at {@code address}; empty if none. */
    private static List<String> mapping(long address) {
        try {
            List<String> lines = Files.readAllLines(Path.of("/proc/self/smaps"));
            String start = Long.toHexString(address) + "-";
            for (int i = 0; i < lines.size(); i++) {
                if (lines.get(i).startsWith(start)) {
                    int j = i + 1;
                    while (j < lines.size() && !lines.get(j).matches("^[0-9a-f]+-[0-9a-f]+ .*")) {
                        j++;
                    }
                    return lines.subList(i, j);
                }
            }
            return List.of();
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }
}
