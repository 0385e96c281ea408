package io.kvoffload.cuda.bindings;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

/**
 * The checks that stand between a caller and CUDA. They run before any JCuda call, so these
 * tests exercise the real copy entry points on a machine without a GPU: a bad range throws before
 * the native library is asked anything.
 */
class BoundsTest {
    @Test
    void rangesInsideTheBufferPass() {
        assertDoesNotThrow(() -> Bounds.checkRange("x", 100, 0, 100));
        assertDoesNotThrow(() -> Bounds.checkRange("x", 100, 100, 0));
        assertDoesNotThrow(() -> Bounds.checkRange("x", 100, 40, 60));
    }

    @Test
    void rangesOutsideTheBufferFailWithTheNumbers() {
        var e = assertThrows(IndexOutOfBoundsException.class, () -> Bounds.checkRange("dst", 100, 50, 51));
        assertTrue(e.getMessage().contains("dst: range [50, 50 + 51)") && e.getMessage().contains("100 bytes"),
                e.getMessage());
        assertThrows(IndexOutOfBoundsException.class, () -> Bounds.checkRange("x", 100, -1, 1));
        assertThrows(IndexOutOfBoundsException.class, () -> Bounds.checkRange("x", 100, 1, -1));
        assertThrows(IndexOutOfBoundsException.class, () -> Bounds.checkRange("x", 100, 101, 0));
        assertThrows(IndexOutOfBoundsException.class, () -> Bounds.checkRange("x", 100, 10, Long.MAX_VALUE),
                "no overflow");
    }

    @Test
    void heapAndClosedSegmentsNeverReachTheGpu() {
        var e = assertThrows(IllegalArgumentException.class,
                () -> Bounds.checkHost("src", MemorySegment.ofArray(new byte[64]), 0, 64));
        assertTrue(e.getMessage().contains("heap segment"), e.getMessage());
        MemorySegment closed;
        try (Arena a = Arena.ofConfined()) {
            closed = a.allocate(64);
        }
        MemorySegment c = closed;
        assertThrows(IllegalStateException.class, () -> Bounds.checkHost("src", c, 0, 8));
        assertThrows(IllegalArgumentException.class, () -> Bounds.checkHost("src", null, 0, 8));
        assertThrows(IllegalArgumentException.class, () -> Bounds.checkDevice("dst", null, 0, 8));
    }

    @Test
    void copyEntryPointsCheckBeforeCallingCuda() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment src = a.allocate(64);
            // A null device allocation and a too-long host range are both refused before JCuda is touched.
            assertThrows(IllegalArgumentException.class, () -> Cuda.copyToDeviceAsync(null, 0, src, 0, 64, null));
            assertThrows(IllegalArgumentException.class, () -> Cuda.copyToHostAsync(src, 0, null, 0, 64, null));
            var e = assertThrows(IllegalArgumentException.class, () -> Cuda.hostRegister(MemorySegment.ofArray(new long[8]),
                    Cuda.HOST_REGISTER_PORTABLE));
            assertTrue(e.getMessage().contains("heap segment"), e.getMessage());
        }
    }

    @Test
    void evenlySpacedRowsHaveOneStride() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(1024, 64);
            MemorySegment[] even = {s.asSlice(0, 100), s.asSlice(256, 100), s.asSlice(512, 100), s.asSlice(768, 100)};
            assertEquals(256, Bounds.uniformStride(even, 100));
            assertEquals(256, Bounds.uniformStride(even, 256), "rows may touch");
            assertEquals(-1, Bounds.uniformStride(even, 257), "rows would overlap");
            MemorySegment[] uneven = {s.asSlice(0, 100), s.asSlice(256, 100), s.asSlice(600, 100)};
            assertEquals(-1, Bounds.uniformStride(uneven, 100));
            MemorySegment[] descending = {s.asSlice(512, 100), s.asSlice(256, 100), s.asSlice(0, 100)};
            assertEquals(-1, Bounds.uniformStride(descending, 100));
            assertEquals(-1, Bounds.uniformStride(new MemorySegment[] {s}, 100), "one row: no 2D copy");
        }
    }

    @Test
    void deviceRowSpansAreCheckedWithoutOverflow() {
        var e = assertThrows(IllegalArgumentException.class, () -> Bounds.checkDeviceRows("dst", null, 0, 10, 20, 2));
        assertTrue(e.getMessage().contains("pitch = 10, rowBytes = 20"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Bounds.checkDeviceRows("dst", null, 0, 10, 10, 0));
        assertTrue(e.getMessage().contains("rows = 0"), e.getMessage());
        assertThrows(IndexOutOfBoundsException.class,
                () -> Bounds.checkDeviceRows("dst", null, 0, Long.MAX_VALUE / 2, 10, 4), "overflow caught");
        // A sane span reaches the allocation check (null allocation here: refused before CUDA).
        assertThrows(IllegalArgumentException.class, () -> Bounds.checkDeviceRows("dst", null, 0, 10, 10, 2));
    }

    @Test
    void rowCopiesCheckEveryRowBeforeCallingCuda() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(1024, 64);
            MemorySegment[] rows = {s.asSlice(0, 100), s.asSlice(256, 50)};
            var e = assertThrows(IndexOutOfBoundsException.class,
                    () -> Cuda.copyRowsToDeviceAsync(null, 0, 100, rows, 100, null));
            assertTrue(e.getMessage().startsWith("rows[1]"), e.getMessage());
            MemorySegment[] heap = {MemorySegment.ofArray(new byte[100])};
            assertThrows(IllegalArgumentException.class, () -> Cuda.copyRowsToDeviceAsync(null, 0, 100, heap, 100, null));
            assertThrows(IllegalArgumentException.class,
                    () -> Cuda.copyRowsToDeviceAsync(null, 0, 100, new MemorySegment[0], 100, null));
            MemorySegment[] ok = {s.asSlice(0, 100), s.asSlice(256, 100)};
            assertThrows(IllegalArgumentException.class, () -> Cuda.copyRowsToDeviceAsync(null, 0, 100, ok, 100, null),
                    "null device allocation");
        }
    }

    @Test
    void errorNamesArePureJava() {
        assertTrue(Cuda.errorName(35).contains("InsufficientDriver"));
        assertTrue(Cuda.errorName(123456).contains("123456"));
    }
}
