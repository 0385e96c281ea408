package io.kvoffload.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The fence in front of the kernel: no request can name memory or file ranges outside its bounds. */
class IoBatchTest {
    final List<IoDevice> devices = List.of(new IoDevice(0, Path.of("d0"), 1 << 20, 4096),
            new IoDevice(1, Path.of("d1"), 1 << 16, 512));

    static void rejects(Runnable r, String fragment) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, r::run);
        assertTrue(e.getMessage().contains(fragment), e.getMessage());
    }

    @Test
    void rejectsEveryOutOfBoundsRequest() {
        IoBatch b = new IoBatch(devices, 4);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment aligned = arena.allocate(8192, 4096);
            rejects(() -> b.addRead(2, 0, aligned, 0), "device = 2");
            rejects(() -> b.addRead(-1, 0, aligned, 0), "device = -1");
            rejects(() -> b.addRead(0, 0, MemorySegment.ofArray(new byte[4096]), 0), "native");
            rejects(() -> b.addRead(0, 0, aligned.asSlice(0, 4000), 0), "buffer length = 4000");
            rejects(() -> b.addRead(0, 0, aligned.asSlice(512, 4096), 0), "not aligned");
            rejects(() -> b.addRead(0, 512, aligned.asSlice(0, 4096), 0), "offset = 512");
            rejects(() -> b.addRead(0, -4096, aligned.asSlice(0, 4096), 0), "offset = -4096");
            rejects(() -> b.addRead(0, (1 << 20) - 4096, aligned, 0), "outside device 0");
            rejects(() -> b.addWrite(1, 1 << 16, aligned.asSlice(0, 512), 0), "outside device 1");
            rejects(() -> b.addRead(0, Long.MAX_VALUE - 4095, aligned.asSlice(0, 4096), 0), "outside device 0");
            assertEquals(0, b.size());
            b.addRead(1, (1 << 16) - 512, aligned.asSlice(0, 512), 7);
            assertEquals(1, b.size());
            assertEquals(7, b.tag(0));
        }
    }

    @Test
    void completionCountsDownAndKeepsTheFirstFailure() {
        IoBatch b = new IoBatch(devices, 2);
        try (Arena arena = Arena.ofConfined()) {
            b.addRead(0, 0, arena.allocate(4096, 4096), 0);
            b.addRead(0, 4096, arena.allocate(4096, 4096), 0);
            b.expectCompletions(2);
            b.failed(1, 5, "boom", null);
            b.completed(0);
            var e = assertThrows(io.kvoffload.KvIoException.class, b::awaitCompletions);
            assertEquals(0, e.device());
            assertEquals(4096, e.offset());
            assertEquals(4096, e.length());
            assertEquals(5, e.errno());
        }
    }

    /** Successful completions are logged in arrival order, failures are not, and resubmission resets the log. */
    @Test
    void completionLogKeepsArrivalOrderAndResetsPerSubmission() throws Exception {
        IoBatch b = new IoBatch(devices, 3);
        try (Arena arena = Arena.ofConfined()) {
            for (int i = 0; i < 3; i++) {
                b.addRead(0, (long) i * 4096, arena.allocate(4096, 4096), i);
            }
            b.expectCompletions(3);
            assertEquals(0, b.completedCount());
            b.completed(2);
            b.failed(1, 5, "boom", null);
            assertEquals(1, b.completedCount());
            assertEquals(2, b.completedRequest(0));
            assertThrows(IndexOutOfBoundsException.class, () -> b.completedRequest(1));
            b.completed(0);
            assertEquals(2, b.completedCount());
            assertEquals(0, b.completedRequest(1));
            assertEquals(2, b.awaitProgress(1), "nothing pending: returns at once");
            assertThrows(io.kvoffload.KvIoException.class, b::awaitCompletions);

            b.expectCompletions(3);
            assertEquals(0, b.completedCount(), "a new submission starts an empty log");
            assertThrows(IndexOutOfBoundsException.class, () -> b.completedRequest(0));
            // A completion on another thread wakes a caller parked for progress.
            Thread t = Thread.ofPlatform().start(() -> {
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    return;
                }
                b.completed(1);
            });
            assertEquals(1, b.awaitProgress(0));
            assertEquals(1, b.completedRequest(0));
            t.join();
            b.completed(0);
            b.completed(2);
            b.awaitCompletions();
            assertEquals(3, b.completedCount());
        }
    }
}
