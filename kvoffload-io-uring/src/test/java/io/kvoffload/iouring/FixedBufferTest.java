package io.kvoffload.iouring;

import static io.kvoffload.iouring.IoUringTestSupport.ALIGN;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.dram.DramPool;
import io.kvoffload.internal.dram.DramSlot;
import io.kvoffload.spi.DramSlabListener;
import io.kvoffload.spi.IoBatch;
import io.kvoffload.spi.IoDevice;
import io.kvoffload.spi.IoOptions;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** DRAM slabs as io_uring fixed buffers: lazy registration, release, and the two limits that refuse it. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@ExtendWith(IoUringRequired.class)
class FixedBufferTest {
    private static final IoOptions OPTIONS = new IoOptions(true, 32, 1);

    @TempDir
    Path dir;

    private static void readInto(IoUringBackend backend, MemorySegment buffer, long offset) {
        IoBatch batch = backend.newBatch(1);
        batch.addRead(0, offset, buffer, 0);
        backend.execute(batch);
    }

    @Test
    void slabsRegisterAsTheyAppearInEveryRingAndUnregisterBeforeRelease() throws Exception {
        List<IoDevice> devices = IoUringTestSupport.devices(dir, 1, 4L << 20, 3);
        try (IoUringBackend backend = IoUringBackend.open(devices, OPTIONS, IoUringConfig.defaults(OPTIONS, 1));
                ExecutorService other = Executors.newSingleThreadExecutor()) {
            DramPool pool = new DramPool(8L << 20, 1L << 20);
            pool.addListener(backend.dramSlabListener());
            assertEquals(0, backend.stats().registeredBuffers(), "slabs are created lazily");
            DramSlot a = pool.acquire(64 << 10);
            readInto(backend, a.segment(), 0);
            assertEquals(1, backend.stats().registeredBuffers());
            assertEquals(1, backend.stats().fixedIos());
            // Slots of a new size class come from a new slab, registered while I/O is running.
            DramSlot b = pool.acquire(128 << 10);
            assertEquals(2, backend.stats().registeredBuffers());
            // A second thread gets a ring of its own, which registers the existing slabs at creation.
            other.submit(() -> readInto(backend, b.segment(), 64 << 10)).get(30, TimeUnit.SECONDS);
            assertEquals(2, backend.stats().rings());
            assertEquals(2, backend.stats().fixedIos());
            assertArrayEquals(IoUringTestSupport.readFile(devices.get(0).poolFile(), 64 << 10, 128 << 10),
                    b.segment().toArray(ValueLayout.JAVA_BYTE));
            pool.release(a);
            pool.release(b);
            pool.close();
            assertEquals(0, backend.stats().registeredBuffers(), "slabFreed unregistered the slabs");
            try (Arena arena = Arena.ofConfined()) {
                readInto(backend, IoUringTestSupport.buffer(arena, ALIGN), 0);
            }
            assertEquals(1, backend.stats().plainIos());
        }
    }

    @Test
    void slabOverOneGibIsNotRegisteredAndStillWorks() throws Throwable {
        List<IoDevice> devices = IoUringTestSupport.devices(dir, 1, 1L << 20, 5);
        long bytes = (1L << 30) + ALIGN;
        // Address space only: registration is refused before anything is pinned.
        MemorySegment huge = TestLibc.mapUntouched(bytes);
        String log;
        try (IoUringBackend backend = IoUringBackend.open(devices, OPTIONS, IoUringConfig.defaults(OPTIONS, 1))) {
            DramSlabListener listener = backend.dramSlabListener();
            log = captureStderr(() -> listener.slabAllocated(0, huge));
            assertEquals(0, backend.stats().registeredBuffers());
            MemorySegment page = huge.asSlice(bytes - 2 * ALIGN, 2 * ALIGN);
            readInto(backend, page, 8 * ALIGN);
            assertEquals(1, backend.stats().plainIos());
            assertEquals(0, backend.stats().fixedIos());
            assertArrayEquals(IoUringTestSupport.readFile(devices.get(0).poolFile(), 8 * ALIGN, 2 * ALIGN),
                    page.toArray(ValueLayout.JAVA_BYTE));
            listener.slabFreed(0, huge);
        } finally {
            TestLibc.unmap(huge);
        }
        assertTrue(log.contains("1 GiB") && log.contains("limit per registered buffer"), log);
    }

    /**
     * A ring made by a thread without CAP_IPC_LOCK counts registered buffers against RLIMIT_MEMLOCK;
     * a slab above the limit is refused with ENOMEM, logged once naming the limit, and used with
     * plain reads.
     */
    @Test
    void memlockLimitFallsBackToPlainIoAndSaysWhichLimit() throws Throwable {
        List<IoDevice> devices = IoUringTestSupport.devices(dir, 1, 1L << 20, 9);
        long[] limit = TestLibc.getrlimit(TestLibc.RLIMIT_MEMLOCK);
        long lowered = 1L << 20;
        boolean lower = Long.compareUnsigned(limit[0], lowered) > 0;
        ExecutorService thread = Executors.newSingleThreadExecutor();
        try (Arena arena = Arena.ofShared()) {
            if (lower) {
                TestLibc.setrlimit(TestLibc.RLIMIT_MEMLOCK, lowered, limit[1]);
            }
            IoUringBackend backend = thread.submit(() -> {
                try {
                    TestLibc.dropIpcLockForThisThread();
                } catch (Throwable t) {
                    throw new IllegalStateException("could not drop CAP_IPC_LOCK", t);
                }
                // One ring, created here, so every request shares the accounted ring.
                return IoUringBackend.open(devices, OPTIONS, IoUringConfig.defaults(OPTIONS, 1).withMaxRings(1));
            }).get(30, TimeUnit.SECONDS);
            try (backend) {
                MemorySegment slab = arena.allocate(4L << 20, ALIGN);
                String log = captureStderr(() -> {
                    backend.dramSlabListener().slabAllocated(0, slab);
                    backend.dramSlabListener().slabAllocated(1, arena.allocate(4L << 20, ALIGN));
                });
                assertEquals(0, backend.stats().registeredBuffers());
                assertTrue(log.contains("RLIMIT_MEMLOCK") && log.contains("ENOMEM"), log);
                assertEquals(log.indexOf("RLIMIT_MEMLOCK"), log.lastIndexOf("RLIMIT_MEMLOCK"), "logged once: " + log);
                MemorySegment buf = slab.asSlice(ALIGN, 4 * ALIGN);
                readInto(backend, buf, 0);
                assertEquals(1, backend.stats().plainIos());
                assertArrayEquals(IoUringTestSupport.readFile(devices.get(0).poolFile(), 0, 4 * ALIGN),
                        buf.toArray(ValueLayout.JAVA_BYTE));
            }
        } finally {
            if (lower) {
                TestLibc.setrlimit(TestLibc.RLIMIT_MEMLOCK, limit[0], limit[1]);
            }
            thread.shutdownNow();
        }
    }

    private interface ThrowingRunnable {
        void run() throws Throwable;
    }

    /** Runs {@code r} with System.err captured (slf4j-simple writes there) and returns what was written. */
    private static String captureStderr(ThrowingRunnable r) throws Throwable {
        PrintStream saved = System.err;
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        System.setErr(new PrintStream(bytes, true, StandardCharsets.UTF_8));
        try {
            r.run();
        } finally {
            System.setErr(saved);
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }
}
