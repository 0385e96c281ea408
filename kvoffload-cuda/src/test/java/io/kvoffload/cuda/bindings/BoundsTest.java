package io.kvoffload.cuda.bindings;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
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
    void errorNamesArePureJava() {
        assertTrue(Cuda.errorName(35).contains("InsufficientDriver"));
        assertTrue(Cuda.errorName(123456).contains("123456"));
    }
}
