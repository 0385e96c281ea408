package io.kvoffload.iouring;

import static io.kvoffload.iouring.IoUringTestSupport.ALIGN;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.KvIoException;
import io.kvoffload.internal.dram.DramPool;
import io.kvoffload.internal.dram.DramSlot;
import io.kvoffload.spi.IoBatch;
import io.kvoffload.spi.IoDevice;
import io.kvoffload.spi.IoOptions;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The io_uring backend against real O_DIRECT pool files. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@ExtendWith(IoUringRequired.class)
class IoUringBackendTest {
    private static final long DEVICE_BYTES = 8L << 20;
    private static final IoOptions OPTIONS = new IoOptions(true, 64, 1);

    @TempDir
    Path dir;

    private IoUringBackend open(List<IoDevice> devices, IoUringConfig config) throws Exception {
        return IoUringBackend.open(devices, OPTIONS, config);
    }

    private IoUringBackend open(List<IoDevice> devices) throws Exception {
        return open(devices, IoUringConfig.defaults(OPTIONS, devices.size()));
    }

    /** Writes random data to random non-overlapping extents on every device, reads it back, compares. */
    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 4})
    void randomWritesThenReadsAreBitExact(int deviceCount) throws Exception {
        List<IoDevice> devices = IoUringTestSupport.devices(dir, deviceCount, DEVICE_BYTES, deviceCount);
        Random rnd = new Random(42 + deviceCount);
        try (IoUringBackend backend = open(devices);
                DramPool pool = new DramPool(64L << 20, 4L << 20);
                Arena arena = Arena.ofConfined()) {
            pool.addListener(backend.dramSlabListener());
            assertTrue(backend.directIo(0), "the pool files in @TempDir should open with O_DIRECT");
            int n = 96;
            IoBatch writes = backend.newBatch(n);
            IoBatch reads = backend.newBatch(n);
            int slotsPerDevice = (int) (DEVICE_BYTES / (64 << 10));
            List<Integer> slots = new ArrayList<>();
            for (int i = 0; i < deviceCount * slotsPerDevice; i++) {
                slots.add(i);
            }
            java.util.Collections.shuffle(slots, rnd);
            MemorySegment[] expect = new MemorySegment[n];
            MemorySegment[] got = new MemorySegment[n];
            List<DramSlot> taken = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                int slot = slots.get(i);
                int device = slot / slotsPerDevice;
                long offset = (long) (slot % slotsPerDevice) * (64 << 10);
                int length = ALIGN * (1 + rnd.nextInt(16));
                // Half the buffers come from the DRAM tier (fixed buffers), half from an arena (plain).
                if (i % 2 == 0) {
                    DramSlot a = pool.acquire(length);
                    DramSlot b = pool.acquire(length);
                    taken.add(a);
                    taken.add(b);
                    expect[i] = a.segment().asSlice(0, length);
                    got[i] = b.segment().asSlice(0, length);
                } else {
                    expect[i] = IoUringTestSupport.buffer(arena, length);
                    got[i] = IoUringTestSupport.buffer(arena, length);
                }
                IoUringTestSupport.fill(expect[i], rnd);
                writes.addWrite(device, offset, expect[i], i);
                reads.addRead(device, offset, got[i], i);
            }
            IoUringStats before = backend.stats();
            backend.execute(writes);
            backend.execute(reads);
            for (int i = 0; i < n; i++) {
                assertEquals(-1, expect[i].mismatch(got[i]), "request " + i + " read back different bytes");
                byte[] onDisk = IoUringTestSupport.readFile(devices.get(reads.device(i)).poolFile(), reads.offset(i),
                        (int) got[i].byteSize());
                assertArrayEquals(expect[i].toArray(ValueLayout.JAVA_BYTE), onDisk, "request " + i + " on disk");
            }
            IoUringStats delta = backend.stats().minus(before);
            assertEquals(2L * n, delta.completions());
            assertEquals(n, delta.fixedIos(), "DRAM-slot buffers use READ_FIXED/WRITE_FIXED");
            assertEquals(n, delta.plainIos(), "arena buffers use READ/WRITE");
            assertTrue(delta.submitCalls() <= 2, "one submit per batch, got " + delta.submitCalls());
            for (DramSlot s : taken) {
                pool.release(s);
            }
        }
    }

    @Test
    void concurrentBatchesFromSeveralThreads() throws Exception {
        List<IoDevice> devices = IoUringTestSupport.devices(dir, 4, DEVICE_BYTES, 7);
        int threads = 4;
        try (IoUringBackend backend = open(devices, IoUringConfig.defaults(OPTIONS, 4).withMaxRings(2));
                ExecutorService pool = Executors.newFixedThreadPool(threads)) {
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                futures.add(pool.submit(() -> {
                    Random rnd = new Random(thread);
                    try (Arena arena = Arena.ofConfined()) {
                        int n = 16;
                        IoBatch w = backend.newBatch(n);
                        IoBatch r = backend.newBatch(n);
                        MemorySegment src = IoUringTestSupport.buffer(arena, (long) n * ALIGN);
                        MemorySegment dst = IoUringTestSupport.buffer(arena, (long) n * ALIGN);
                        for (int round = 0; round < 40; round++) {
                            w.clear();
                            r.clear();
                            IoUringTestSupport.fill(src, rnd);
                            for (int i = 0; i < n; i++) {
                                // Each thread owns a quarter of every device.
                                long offset = (thread * (DEVICE_BYTES / threads)) + (long) (round % 8) * n * ALIGN
                                        + (long) i * ALIGN;
                                w.addWrite(i % 4, offset, src.asSlice((long) i * ALIGN, ALIGN), i);
                                r.addRead(i % 4, offset, dst.asSlice((long) i * ALIGN, ALIGN), i);
                            }
                            backend.execute(w);
                            backend.execute(r);
                            assertEquals(-1, src.mismatch(dst), "thread " + thread + " round " + round);
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : futures) {
                f.get(60, TimeUnit.SECONDS);
            }
            assertEquals(2, backend.stats().rings(), "four threads share the two allowed rings");
        }
    }

    @Test
    void severalBatchesInFlightFromOneThreadAndAwaitFromAnother() throws Exception {
        List<IoDevice> devices = IoUringTestSupport.devices(dir, 2, DEVICE_BYTES, 11);
        try (IoUringBackend backend = open(devices);
                Arena arena = Arena.ofShared();
                ExecutorService other = Executors.newSingleThreadExecutor()) {
            IoBatch a = backend.newBatch(32);
            IoBatch b = backend.newBatch(32);
            MemorySegment bufA = IoUringTestSupport.buffer(arena, 32L * ALIGN);
            MemorySegment bufB = IoUringTestSupport.buffer(arena, 32L * ALIGN);
            for (int i = 0; i < 32; i++) {
                a.addRead(0, (long) i * ALIGN, bufA.asSlice((long) i * ALIGN, ALIGN), i);
                b.addRead(1, (long) i * ALIGN, bufB.asSlice((long) i * ALIGN, ALIGN), i);
            }
            backend.submit(a);
            backend.submit(b);
            // b is awaited first and by a thread that never submitted anything.
            other.submit(() -> backend.await(b)).get(30, TimeUnit.SECONDS);
            backend.await(a);
            assertEquals(0, a.pending());
            assertArrayEquals(IoUringTestSupport.readFile(devices.get(0).poolFile(), 0, 32 * ALIGN),
                    bufA.toArray(ValueLayout.JAVA_BYTE));
            assertArrayEquals(IoUringTestSupport.readFile(devices.get(1).poolFile(), 0, 32 * ALIGN),
                    bufB.toArray(ValueLayout.JAVA_BYTE));
        }
    }

    /** A batch far larger than the ring: the SQ fills and the in-flight limit holds, yet all complete. */
    @Test
    void batchLargerThanTheRing() throws Exception {
        List<IoDevice> devices = IoUringTestSupport.devices(dir, 3, DEVICE_BYTES, 13);
        IoUringConfig tiny = IoUringConfig.defaults(OPTIONS, 3).withSqEntries(8, 12);
        try (IoUringBackend backend = open(devices, tiny); Arena arena = Arena.ofConfined()) {
            int n = 500;
            IoBatch batch = backend.newBatch(n);
            MemorySegment buf = IoUringTestSupport.buffer(arena, (long) n * ALIGN);
            for (int i = 0; i < n; i++) {
                batch.addRead(i % 3, (long) (i / 3) * ALIGN, buf.asSlice((long) i * ALIGN, ALIGN), i);
            }
            backend.execute(batch);
            for (int i = 0; i < n; i += 37) {
                assertArrayEquals(
                        IoUringTestSupport.readFile(devices.get(i % 3).poolFile(), (long) (i / 3) * ALIGN, ALIGN),
                        buf.asSlice((long) i * ALIGN, ALIGN).toArray(ValueLayout.JAVA_BYTE), "request " + i);
            }
            IoUringStats s = backend.stats();
            assertEquals(n, s.completions());
            assertTrue(s.submitCalls() + s.waitCalls() >= n / 12, "the ring was refilled as it drained: " + s);
        }
    }

    /**
     * Two batches far larger than the ring submitted back to back: submit returns without waiting
     * (the rest waits in the backlog), awaitProgress hands out every request exactly once, oldest
     * batch first, and the data is the file's.
     */
    @Test
    void submitReturnsAtOnceAndProgressReportsEveryRequestOnce() throws Exception {
        List<IoDevice> devices = IoUringTestSupport.devices(dir, 2, DEVICE_BYTES, 23);
        IoUringConfig tiny = IoUringConfig.defaults(OPTIONS, 2).withSqEntries(4, 4);
        try (IoUringBackend backend = open(devices, tiny); Arena arena = Arena.ofConfined()) {
            int n = 200;
            IoBatch a = backend.newBatch(n);
            IoBatch b = backend.newBatch(n);
            MemorySegment bufA = IoUringTestSupport.buffer(arena, (long) n * ALIGN);
            MemorySegment bufB = IoUringTestSupport.buffer(arena, (long) n * ALIGN);
            for (int i = 0; i < n; i++) {
                a.addRead(i % 2, (long) (i / 2) * ALIGN, bufA, (long) i * ALIGN, ALIGN, i);
                b.addRead((i + 1) % 2, (long) (i / 2) * ALIGN, bufB, (long) i * ALIGN, ALIGN, i);
            }
            backend.submit(a);
            // Nothing is reaped inside submit, so at most the 4 queued requests can have been credited.
            assertEquals(n, a.pending(), "submit must not wait for the batch to drain into the ring");
            backend.submit(b);
            assertEquals(n, b.pending());
            boolean[] seen = new boolean[n];
            int done = 0;
            int calls = 0;
            while (done < n) {
                int now = backend.awaitProgress(a, done);
                assertTrue(now > done, "progress after " + done + " of " + n);
                for (; done < now; done++) {
                    int r = a.completedRequest(done);
                    assertFalse(seen[r], "request " + r + " reported twice");
                    seen[r] = true;
                    assertArrayEquals(IoUringTestSupport.readFile(devices.get(r % 2).poolFile(), (long) (r / 2) * ALIGN,
                            ALIGN), bufA.asSlice((long) r * ALIGN, ALIGN).toArray(ValueLayout.JAVA_BYTE), "request " + r);
                }
                calls++;
            }
            assertTrue(calls > 1, "a batch 50× the ring arrives in more than one piece");
            assertEquals(0, a.pending());
            backend.await(a);
            backend.await(b);
            assertEquals(n, b.completedCount());
            for (int i = 0; i < n; i += 7) {
                assertArrayEquals(IoUringTestSupport.readFile(devices.get((i + 1) % 2).poolFile(), (long) (i / 2) * ALIGN,
                        ALIGN), bufB.asSlice((long) i * ALIGN, ALIGN).toArray(ValueLayout.JAVA_BYTE), "b " + i);
            }
            assertThrows(IndexOutOfBoundsException.class, () -> a.completedRequest(n));
        }
    }

    /**
     * poll() alone drives a batch 50× the ring to completion: each call takes what has landed and
     * hands the kernel backlog requests in its place, never waiting; the data is the file's. (No
     * await runs until every request has been credited, so nothing else reaps or refills.)
     */
    @Test
    void pollReapsAndRefillsTheRingWithoutWaiting() throws Exception {
        List<IoDevice> devices = IoUringTestSupport.devices(dir, 2, DEVICE_BYTES, 31);
        IoUringConfig tiny = IoUringConfig.defaults(OPTIONS, 2).withSqEntries(4, 4);
        try (IoUringBackend backend = open(devices, tiny); Arena arena = Arena.ofConfined()) {
            backend.poll(); // this thread has no ring yet: nothing to do
            int n = 200;
            IoBatch batch = backend.newBatch(n);
            MemorySegment buf = IoUringTestSupport.buffer(arena, (long) n * ALIGN);
            for (int i = 0; i < n; i++) {
                batch.addRead(i % 2, (long) (i / 2) * ALIGN, buf, (long) i * ALIGN, ALIGN, i);
            }
            backend.submit(batch);
            long polls = 0;
            while (batch.pending() > 0) {
                backend.poll();
                polls++;
                Thread.onSpinWait();
            }
            assertEquals(n, batch.completedCount(), "every request completed through poll alone");
            assertTrue(polls > 1, "a batch 50× the ring cannot complete in one poll");
            backend.await(batch); // returns at once: nothing pending, no failure
            for (int i = 0; i < n; i++) {
                assertArrayEquals(IoUringTestSupport.readFile(devices.get(i % 2).poolFile(), (long) (i / 2) * ALIGN,
                        ALIGN), buf.asSlice((long) i * ALIGN, ALIGN).toArray(ValueLayout.JAVA_BYTE), "request " + i);
            }
        }
    }

    /** A failed request is not logged as completed; awaitProgress returns, await then reports it. */
    @Test
    void progressSkipsFailedRequestsAndAwaitReportsThem() throws Exception {
        List<IoDevice> devices = IoUringTestSupport.devices(dir, 2, DEVICE_BYTES, 29);
        IoUringConfig tiny = IoUringConfig.defaults(OPTIONS, 2).withSqEntries(2, 2);
        try (IoUringBackend backend = open(devices, tiny); Arena arena = Arena.ofConfined()) {
            try (RandomAccessFile raf = new RandomAccessFile(devices.get(1).poolFile().toFile(), "rw")) {
                raf.setLength(4 * ALIGN);
            }
            int n = 12;
            IoBatch batch = backend.newBatch(n);
            MemorySegment buf = IoUringTestSupport.buffer(arena, (long) n * ALIGN);
            for (int i = 0; i < n; i++) {
                // Requests 5 and 9 lie past the end of the truncated device 1.
                int dev = i == 5 || i == 9 ? 1 : 0;
                long off = dev == 1 ? 100 * ALIGN : (long) i * ALIGN;
                batch.addRead(dev, off, buf, (long) i * ALIGN, ALIGN, i);
            }
            backend.submit(batch);
            int done = 0;
            while (batch.pending() > 0) {
                done = backend.awaitProgress(batch, done);
            }
            assertEquals(n - 2, batch.completedCount(), "the two failed reads are not logged as completed");
            for (int k = 0; k < batch.completedCount(); k++) {
                int r = batch.completedRequest(k);
                assertTrue(r != 5 && r != 9, "failed request " + r + " logged");
            }
            KvIoException e = assertThrows(KvIoException.class, () -> backend.await(batch));
            assertEquals(1, e.device());
        }
    }

    /** The pool file shrinks behind the backend's back: a short read, its remainder hits EOF. */
    @Test
    void truncatedFileReportsDeviceOffsetAndLength() throws Exception {
        List<IoDevice> devices = IoUringTestSupport.devices(dir, 2, DEVICE_BYTES, 17);
        try (IoUringBackend backend = open(devices); Arena arena = Arena.ofConfined()) {
            try (RandomAccessFile raf = new RandomAccessFile(devices.get(1).poolFile().toFile(), "rw")) {
                raf.setLength(12 * ALIGN);
            }
            IoBatch batch = backend.newBatch(3);
            MemorySegment good = IoUringTestSupport.buffer(arena, 4 * ALIGN);
            MemorySegment crossing = IoUringTestSupport.buffer(arena, 8 * ALIGN);
            MemorySegment beyond = IoUringTestSupport.buffer(arena, ALIGN);
            batch.addRead(0, 0, good, 0);
            batch.addRead(1, 8 * ALIGN, crossing, 1);
            batch.addRead(1, 100 * ALIGN, beyond, 2);
            backend.submit(batch);
            KvIoException e = assertThrows(KvIoException.class, () -> backend.await(batch));
            assertEquals(0, batch.pending(), "await returns only after every request finished");
            assertEquals(1, e.device());
            assertTrue(e.offset() == 8 * ALIGN || e.offset() == 100 * ALIGN, e.getMessage());
            assertTrue(e.getMessage().contains("end of file"), e.getMessage());
            assertTrue(e.getMessage().contains("device 1 at offset " + e.offset() + ", length " + e.length()),
                    e.getMessage());
            assertArrayEquals(IoUringTestSupport.readFile(devices.get(0).poolFile(), 0, 4 * ALIGN),
                    good.toArray(ValueLayout.JAVA_BYTE), "the good request of the batch completed");
            // The crossing read got 4 pages, then asked for the remaining 4 and hit the end.
            assertTrue(backend.stats().shortTransfers() >= 1, backend.stats().toString());
            assertArrayEquals(IoUringTestSupport.readFile(devices.get(1).poolFile(), 8 * ALIGN, 4 * ALIGN),
                    crossing.asSlice(0, 4 * ALIGN).toArray(ValueLayout.JAVA_BYTE));
        }
    }

    /** A descriptor swapped behind the backend's back (write-only /dev/null): reads fail with EBADF. */
    @Test
    void kernelErrorIsReportedWithDeviceOffsetLengthAndErrno() throws Throwable {
        List<IoDevice> devices = IoUringTestSupport.devices(dir, 2, DEVICE_BYTES, 19);
        // Plain descriptors: a registered file would keep the original file alive.
        IoUringConfig plainFiles = IoUringConfig.defaults(OPTIONS, 2).withFixedFiles(false);
        try (IoUringBackend backend = open(devices, plainFiles); Arena arena = Arena.ofConfined()) {
            TestLibc.replaceWithWriteOnlyDevNull(backend.fd(1));
            IoBatch batch = backend.newBatch(4);
            for (int i = 0; i < 4; i++) {
                batch.addRead(i % 2, (long) i * 2 * ALIGN, IoUringTestSupport.buffer(arena, 2 * ALIGN), i);
            }
            backend.submit(batch);
            KvIoException e = assertThrows(KvIoException.class, () -> backend.await(batch));
            assertEquals(0, batch.pending());
            assertEquals(1, e.device());
            assertEquals(9, e.errno(), "EBADF");
            assertEquals(2 * ALIGN, e.length());
            assertTrue(e.offset() == 2 * ALIGN || e.offset() == 6 * ALIGN, e.getMessage());
            assertTrue(e.getMessage().contains("EBADF (Bad file descriptor)"), e.getMessage());
            assertTrue(e.getMessage().contains("I/O failed on device 1 at offset " + e.offset() + ", length 8192"),
                    e.getMessage());
            // The batch is reusable afterwards, and device 0 still works.
            batch.clear();
            MemorySegment buf = IoUringTestSupport.buffer(arena, ALIGN);
            batch.addRead(0, 0, buf, 0);
            backend.execute(batch);
            assertArrayEquals(IoUringTestSupport.readFile(devices.get(0).poolFile(), 0, ALIGN),
                    buf.toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void closeDrainsInFlightIo() throws Exception {
        List<IoDevice> devices = IoUringTestSupport.devices(dir, 2, DEVICE_BYTES, 23);
        Arena arena = Arena.ofShared();
        try {
            IoUringBackend backend = open(devices);
            int n = 256;
            IoBatch batch = backend.newBatch(n);
            MemorySegment buf = IoUringTestSupport.buffer(arena, (long) n * 16 * ALIGN);
            for (int i = 0; i < n; i++) {
                batch.addRead(i % 2, (long) (i / 2) * 16 * ALIGN,
                        buf.asSlice((long) i * 16 * ALIGN, 16 * ALIGN), i);
            }
            backend.submit(batch);
            backend.close();
            assertEquals(0, batch.pending(), "close() returned with requests still in flight");
            backend.await(batch);
            assertNull(batch.failure());
            assertArrayEquals(IoUringTestSupport.readFile(devices.get(1).poolFile(), 127L * 16 * ALIGN, 16 * ALIGN),
                    buf.asSlice(255L * 16 * ALIGN, 16 * ALIGN).toArray(ValueLayout.JAVA_BYTE));
            IoBatch late = backend.newBatch(1);
            late.addRead(0, 0, buf.asSlice(0, ALIGN), 0);
            IllegalStateException closed = assertThrows(IllegalStateException.class, () -> backend.submit(late));
            assertTrue(closed.getMessage().contains("closed"), closed.getMessage());
            backend.close();
        } finally {
            arena.close();
        }
    }

    @Test
    void misuseIsRejectedWithAClearMessage() throws Exception {
        List<IoDevice> devices = IoUringTestSupport.devices(dir, 1, DEVICE_BYTES, 29);
        try (IoUringBackend backend = open(devices); Arena arena = Arena.ofConfined()) {
            IoBatch batch = backend.newBatch(2);
            batch.addRead(0, 0, IoUringTestSupport.buffer(arena, ALIGN), 0);
            backend.submit(batch);
            IllegalStateException twice = assertThrows(IllegalStateException.class, () -> backend.submit(batch));
            assertTrue(twice.getMessage().contains("already in flight"), twice.getMessage());
            backend.await(batch);
            backend.await(batch);
            IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> backend.directIo(3));
            assertTrue(bad.getMessage().contains("device = 3") && bad.getMessage().contains("0..0"), bad.getMessage());
            assertThrows(IllegalArgumentException.class, () -> backend.sync(-1));
            backend.sync(0);
            IoBatch empty = backend.newBatch(1);
            backend.execute(empty);
        }
    }

    @Test
    void configRejectsBadValuesNamingTheArgument() {
        IoUringConfig c = IoUringConfig.defaults(OPTIONS, 4);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> c.withSqEntries(100, 10));
        assertTrue(e.getMessage().contains("sqEntries = 100"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> c.withSqEntries(64, 129));
        assertTrue(e.getMessage().contains("maxInflight = 129") && e.getMessage().contains("1..128"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> c.withMaxRings(0));
        assertTrue(e.getMessage().contains("maxRings = 0"), e.getMessage());
        assertEquals(256, IoUringConfig.defaults(new IoOptions(true, 64, 1), 4).sqEntries());
        assertEquals(8, IoUringConfig.defaults(new IoOptions(true, 1, 1), 1).sqEntries());
    }
}
