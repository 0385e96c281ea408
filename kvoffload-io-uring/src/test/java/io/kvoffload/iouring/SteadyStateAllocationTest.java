package io.kvoffload.iouring;

import static io.kvoffload.iouring.IoUringTestSupport.ALIGN;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.dram.DramPool;
import io.kvoffload.internal.dram.DramSlot;
import io.kvoffload.spi.IoBatch;
import io.kvoffload.spi.IoDevice;
import io.kvoffload.spi.IoOptions;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Submitting and awaiting a reused batch allocates nothing on the Java heap once warm: measured
 * with the JVM's per-thread allocation counter around many batches (fixed and plain buffers, two
 * devices).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@ExtendWith(IoUringRequired.class)
class SteadyStateAllocationTest {
    @TempDir
    Path dir;

    @Test
    void submitAndAwaitAllocateNothing() throws Exception {
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        List<IoDevice> devices = IoUringTestSupport.devices(dir, 2, 2L << 20, 1);
        IoOptions options = new IoOptions(true, 16, 1);
        try (IoUringBackend backend = IoUringBackend.open(devices, options, IoUringConfig.defaults(options, 2));
                DramPool pool = new DramPool(4L << 20, 1L << 20)) {
            pool.addListener(backend.dramSlabListener());
            int n = 32;
            IoBatch batch = backend.newBatch(n);
            DramSlot slot = pool.acquire((long) n * ALIGN);
            try (var arena = java.lang.foreign.Arena.ofConfined()) {
                var plain = IoUringTestSupport.buffer(arena, (long) n * ALIGN);
                for (int i = 0; i < n; i++) {
                    var buf = (i % 2 == 0 ? slot.segment() : plain).asSlice((long) i * ALIGN, ALIGN);
                    batch.addRead(i % 2, (long) i * ALIGN, buf, i);
                }
                for (int i = 0; i < 3000; i++) {
                    backend.execute(batch);
                }
                // Windows of 1000 batches. A JIT recompilation can rematerialise a few objects that
                // compiled code had eliminated (a one-off of a few KB), so one window may show some
                // bytes; one object per batch would show at least 16 000 bytes in every window.
                int rounds = 1000;
                List<Long> windows = new java.util.ArrayList<>();
                for (int w = 0; w < 5; w++) {
                    long before = threads.getCurrentThreadAllocatedBytes();
                    for (int i = 0; i < rounds; i++) {
                        backend.execute(batch);
                    }
                    windows.add(threads.getCurrentThreadAllocatedBytes() - before);
                }
                long zero = windows.stream().filter(b -> b == 0).count();
                assertTrue(zero >= 3, "bytes allocated per window of " + rounds + " batches of " + n + " reads: "
                        + windows);
                assertTrue(windows.stream().allMatch(b -> b < 8L * rounds), "bytes per window: " + windows);
            }
            pool.release(slot);
        }
    }

    /**
     * A batch that outgrew the others (a decode step that needed more reads than any before) allocates
     * the ring's per-request arrays for every batch slot once, not for each slot the first time it
     * takes that batch: the slots take batches in turn, so the latter spread one-off allocations over
     * hundreds of later submissions.
     */
    @Test
    void aBatchThatGrewAllocatesOnceForEverySlot() throws Exception {
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        List<IoDevice> devices = IoUringTestSupport.devices(dir, 1, 1L << 20, 1);
        IoOptions options = new IoOptions(true, 16, 1);
        try (IoUringBackend backend = IoUringBackend.open(devices, options, IoUringConfig.defaults(options, 1).withFixedBuffers(false));
                var arena = java.lang.foreign.Arena.ofConfined()) {
            IoBatch small = backend.newBatch(4);
            IoBatch big = backend.newBatch(64);
            var buf = IoUringTestSupport.buffer(arena, 64L * ALIGN);
            for (int i = 0; i < 4; i++) {
                small.addRead(0, (long) i * ALIGN, buf.asSlice((long) i * ALIGN, ALIGN), i);
            }
            for (int i = 0; i < 64; i++) {
                big.addRead(0, (long) i * ALIGN, buf.asSlice((long) i * ALIGN, ALIGN), i);
            }
            for (int i = 0; i < 3000; i++) { // every slot takes the small batch, compiled
                backend.execute(small);
            }
            backend.execute(big); // the one growth
            // One submission a window: growing a slot at a time allocated in each of the next 255.
            List<Long> windows = new java.util.ArrayList<>();
            for (int w = 0; w < 5; w++) {
                long before = threads.getCurrentThreadAllocatedBytes();
                backend.execute(big);
                backend.execute(small);
                windows.add(threads.getCurrentThreadAllocatedBytes() - before);
            }
            long zero = windows.stream().filter(b -> b == 0).count();
            assertTrue(zero >= 4, "bytes allocated per big and small batch after the big one grew: " + windows);
        }
    }
}
