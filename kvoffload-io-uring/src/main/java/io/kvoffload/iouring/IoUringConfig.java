package io.kvoffload.iouring;

import io.kvoffload.internal.util.Checks;
import io.kvoffload.iouring.bindings.liburing_h;
import io.kvoffload.spi.IoOptions;

/**
 * How the io_uring backend sets up its rings. {@link #defaults} derives it from the engine's
 * {@link IoOptions}; benchmarks and tests adjust single fields with the {@code with...} methods.
 *
 * @param sqEntries SQ entries per ring (a power of two; the kernel makes the CQ twice as large)
 * @param maxInflight most requests one ring has queued or in flight; at most the CQ size
 *     ({@code 2 * sqEntries}), so the CQ can never overflow
 * @param maxRings most rings: each submitting thread gets its own until this many exist, later
 *     threads share them (under the ring's lock)
 * @param fixedFiles register the pool files with each ring and submit with IOSQE_FIXED_FILE
 * @param fixedBuffers register DRAM slabs as fixed buffers and use READ_FIXED/WRITE_FIXED for
 *     requests whose buffer lies inside one
 * @param bufferSlots fixed-buffer slots per ring (sparse registration), i.e. most slabs registered
 * @param batchSlots most batches one ring tracks in flight at once
 * @param deviceQueueLimit also keep a ring's requests in flight within what the block devices under
 *     the pool files queue (their {@code nr_requests}, summed): beyond it {@code io_uring_enter}
 *     puts the submitting thread to sleep until a request completes ({@code BlockQueues})
 */
public record IoUringConfig(
        int sqEntries, int maxInflight, int maxRings, boolean fixedFiles, boolean fixedBuffers, int bufferSlots,
        int batchSlots, boolean deviceQueueLimit) {

    /** Upper bound of {@link #batchSlots}: the slot number has 16 bits of user_data ({@code UserData}). */
    public static final int MAX_BATCH_SLOTS = UserData.MAX_SLOT + 1;

    public IoUringConfig {
        Checks.powerOfTwo("sqEntries", sqEntries);
        Checks.inRange("sqEntries", sqEntries, 1, liburing_h.IORING_MAX_ENTRIES);
        Checks.inRange("maxInflight", maxInflight, 1, 2 * sqEntries);
        Checks.inRange("maxRings", maxRings, 1, 1024);
        Checks.inRange("bufferSlots", bufferSlots, 0, liburing_h.IORING_MAX_REG_BUFFERS);
        Checks.inRange("batchSlots", batchSlots, 1, MAX_BATCH_SLOTS);
    }

    /**
     * Rings sized for {@code options.queueDepth()} requests per device across {@code devices}
     * devices (at most 4096 in flight per ring, and at most what the block devices queue), one ring
     * per submitting thread up to the number of processors, fixed files and fixed buffers on.
     */
    public static IoUringConfig defaults(IoOptions options, int devices) {
        Checks.positive("devices", devices);
        long want = (long) Math.max(1, options.queueDepth()) * devices;
        int inflight = (int) Math.min(4096, want);
        int sq = Math.max(8, Integer.highestOneBit(inflight - 1) << 1);
        int rings = Math.clamp(Runtime.getRuntime().availableProcessors(), 1, 64);
        return new IoUringConfig(sq, inflight, rings, true, true, 4096, 256, true);
    }

    public IoUringConfig withSqEntries(int entries, int inflight) {
        return new IoUringConfig(entries, inflight, maxRings, fixedFiles, fixedBuffers, bufferSlots, batchSlots, deviceQueueLimit);
    }

    public IoUringConfig withMaxRings(int rings) {
        return new IoUringConfig(sqEntries, maxInflight, rings, fixedFiles, fixedBuffers, bufferSlots, batchSlots, deviceQueueLimit);
    }

    public IoUringConfig withFixedFiles(boolean on) {
        return new IoUringConfig(sqEntries, maxInflight, maxRings, on, fixedBuffers, bufferSlots, batchSlots, deviceQueueLimit);
    }

    public IoUringConfig withFixedBuffers(boolean on) {
        return new IoUringConfig(sqEntries, maxInflight, maxRings, fixedFiles, on, bufferSlots, batchSlots, deviceQueueLimit);
    }

    public IoUringConfig withDeviceQueueLimit(boolean on) {
        return new IoUringConfig(sqEntries, maxInflight, maxRings, fixedFiles, fixedBuffers, bufferSlots, batchSlots, on);
    }

    public IoUringConfig withBatchSlots(int slots) {
        return new IoUringConfig(sqEntries, maxInflight, maxRings, fixedFiles, fixedBuffers, bufferSlots, slots,
                deviceQueueLimit);
    }
}
