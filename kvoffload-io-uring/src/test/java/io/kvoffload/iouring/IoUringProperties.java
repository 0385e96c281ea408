package io.kvoffload.iouring;

import static io.kvoffload.iouring.IoUringTestSupport.ALIGN;

import io.kvoffload.spi.IoBatch;
import io.kvoffload.spi.IoDevice;
import io.kvoffload.spi.IoOptions;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AddLifecycleHook;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import net.jqwik.api.lifecycle.LifecycleContext;
import net.jqwik.api.lifecycle.SkipExecutionHook;

/**
 * Random batches (sizes, devices, offsets, lengths, mixed with random ring sizes) written and read
 * back bit-exact through the io_uring backend.
 */
@AddLifecycleHook(IoUringProperties.SkipWithoutIoUring.class)
class IoUringProperties {
    private static final int DEVICES = 4;
    private static final long DEVICE_BYTES = 4L << 20;
    /** Each device is cut into slots; a request uses one slot, so requests of a batch never overlap. */
    private static final int SLOT_BYTES = 64 << 10;
    private static final int SLOTS = (int) (DEVICE_BYTES / SLOT_BYTES);

    private static Path dir;
    private static List<IoDevice> devices;

    /** One request: a device slot, an offset inside it and a length, all in pages. */
    record Req(int device, int slot, int pageOffset, int pages) {}

    /**
     * jqwik reports an aborted container as an error, so the skip happens here; with
     * KVO_REQUIRE_IO_URING=1 nothing is skipped and {@link #setUp} fails instead.
     */
    static final class SkipWithoutIoUring implements SkipExecutionHook {
        @Override
        public SkipResult shouldBeSkipped(LifecycleContext context) {
            var a = new IoUringBackendProvider().probe();
            if (a.available() || IoUringTestSupport.required()) {
                return SkipResult.doNotSkip();
            }
            return SkipResult.skip("io_uring is unavailable (" + a.reason() + "); install liburing2"
                    + " (apt-get install liburing2) on Linux 5.6+ to run the io_uring properties");
        }
    }

    @BeforeContainer
    static void setUp() throws Exception {
        IoUringTestSupport.requireIoUring();
        dir = Files.createTempDirectory("kvo-iouring-props");
        devices = IoUringTestSupport.devices(dir, DEVICES, DEVICE_BYTES, 99);
    }

    @AfterContainer
    static void tearDown() throws Exception {
        if (dir != null) {
            try (Stream<Path> files = Files.walk(dir)) {
                for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }

    @Provide
    Arbitrary<List<Req>> batches() {
        Arbitrary<Req> req = Combinators.combine(Arbitraries.integers().between(0, DEVICES - 1),
                        Arbitraries.integers().between(0, SLOTS - 1), Arbitraries.integers().between(0, 15),
                        Arbitraries.integers().between(1, 16))
                .as((d, s, off, pages) -> new Req(d, s, Math.min(off, 16 - pages), pages));
        return req.list().ofMinSize(1).ofMaxSize(200).uniqueElements(r -> r.device() * SLOTS + r.slot());
    }

    @Property(tries = 40)
    void writtenBatchesReadBackBitExact(@ForAll("batches") List<Req> reqs,
            @ForAll("sqSizes") int sqEntries, @ForAll long seed) throws Exception {
        IoOptions options = new IoOptions(true, 32, 1);
        IoUringConfig config = IoUringConfig.defaults(options, DEVICES).withSqEntries(sqEntries, 2 * sqEntries);
        Random rnd = new Random(seed);
        try (IoUringBackend backend = IoUringBackend.open(devices, options, config);
                Arena arena = Arena.ofConfined()) {
            int n = reqs.size();
            IoBatch writes = backend.newBatch(n);
            IoBatch reads = backend.newBatch(n);
            List<MemorySegment> src = new ArrayList<>();
            List<MemorySegment> dst = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                Req r = reqs.get(i);
                long offset = (long) r.slot() * SLOT_BYTES + (long) r.pageOffset() * ALIGN;
                MemorySegment s = IoUringTestSupport.buffer(arena, (long) r.pages() * ALIGN);
                MemorySegment d = IoUringTestSupport.buffer(arena, (long) r.pages() * ALIGN);
                IoUringTestSupport.fill(s, rnd);
                src.add(s);
                dst.add(d);
                writes.addWrite(r.device(), offset, s, i);
                reads.addRead(r.device(), offset, d, i);
            }
            backend.execute(writes);
            backend.execute(reads);
            for (int i = 0; i < n; i++) {
                long mismatch = src.get(i).mismatch(dst.get(i));
                if (mismatch != -1) {
                    throw new AssertionError("request " + i + " " + reqs.get(i) + " differs at byte " + mismatch);
                }
            }
        }
    }

    /**
     * The same requests written, then read in two batches submitted back to back (the second waits
     * in the backlog behind the first) and consumed through awaitProgress: every request is
     * reported exactly once, only after its data landed, and both batches end bit-exact.
     */
    @Property(tries = 30)
    void progressReportsEachRequestOnceWithItsData(@ForAll("batches") List<Req> reqs,
            @ForAll("sqSizes") int sqEntries, @ForAll long seed) throws Exception {
        IoOptions options = new IoOptions(true, 32, 1);
        IoUringConfig config = IoUringConfig.defaults(options, DEVICES).withSqEntries(sqEntries, sqEntries);
        Random rnd = new Random(seed);
        try (IoUringBackend backend = IoUringBackend.open(devices, options, config);
                Arena arena = Arena.ofConfined()) {
            int n = reqs.size();
            IoBatch writes = backend.newBatch(n);
            IoBatch first = backend.newBatch(n);
            IoBatch second = backend.newBatch(n);
            List<MemorySegment> src = new ArrayList<>();
            List<MemorySegment> dst = new ArrayList<>();
            List<MemorySegment> dst2 = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                Req r = reqs.get(i);
                long offset = (long) r.slot() * SLOT_BYTES + (long) r.pageOffset() * ALIGN;
                MemorySegment s = IoUringTestSupport.buffer(arena, (long) r.pages() * ALIGN);
                IoUringTestSupport.fill(s, rnd);
                src.add(s);
                dst.add(IoUringTestSupport.buffer(arena, s.byteSize()));
                dst2.add(IoUringTestSupport.buffer(arena, s.byteSize()));
                writes.addWrite(r.device(), offset, s, i);
                first.addRead(r.device(), offset, dst.get(i), i);
                second.addRead(r.device(), offset, dst2.get(i), i);
            }
            backend.execute(writes);
            backend.submit(first);
            backend.submit(second);
            boolean[] reported = new boolean[n];
            int done = 0;
            while (true) {
                boolean finished = first.pending() == 0;
                int now = first.completedCount();
                for (; done < now; done++) {
                    int i = first.completedRequest(done);
                    if (reported[i]) {
                        throw new AssertionError("request " + i + " reported twice");
                    }
                    reported[i] = true;
                    long mismatch = src.get(i).mismatch(dst.get(i));
                    if (mismatch != -1) {
                        throw new AssertionError("request " + i + " reported before its data landed: byte " + mismatch);
                    }
                }
                if (finished) {
                    break;
                }
                backend.awaitProgress(first, done);
            }
            if (done != n) {
                throw new AssertionError(done + " of " + n + " requests reported");
            }
            backend.await(first);
            backend.await(second);
            for (int i = 0; i < n; i++) {
                if (src.get(i).mismatch(dst2.get(i)) != -1) {
                    throw new AssertionError("second batch, request " + i + " differs");
                }
            }
        }
    }

    @Provide
    Arbitrary<Integer> sqSizes() {
        return Arbitraries.of(8, 16, 64, 256);
    }
}
