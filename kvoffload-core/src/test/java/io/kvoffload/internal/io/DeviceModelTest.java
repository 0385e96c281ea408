package io.kvoffload.internal.io;

import static io.kvoffload.testing.Allocations.allocated;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DeviceModelSpec;
import io.kvoffload.KvIoException;
import io.kvoffload.spi.IoBackend;
import io.kvoffload.spi.IoBatch;
import io.kvoffload.spi.IoDevice;
import io.kvoffload.spi.IoOptions;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The device model on real I/O (portable backend, temporary files): it holds each simulated
 * device to its bandwidth, IOPS, latency floor and queue depth, devices are independent, data
 * passes bit-exact, failures and close behave as the {@link IoBackend} contract says, and the
 * model's own steady state allocates nothing. The queue arithmetic is checked exactly in virtual
 * time; against the wall clock only the bounds a loaded machine cannot break are checked (the
 * model can only slow requests down).
 */
class DeviceModelTest {
    private static final int ALIGN = 4096;
    private static final long POOL = 8L << 20;

    @TempDir
    Path dir;

    private List<IoDevice> devices(int n, long size) throws IOException {
        List<IoDevice> list = new ArrayList<>();
        Random rnd = new Random(42);
        byte[] chunk = new byte[1 << 16];
        for (int d = 0; d < n; d++) {
            Path f = dir.resolve("pool-" + d);
            try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
                for (long off = 0; off < size; off += chunk.length) {
                    rnd.nextBytes(chunk);
                    raf.write(chunk);
                }
            }
            list.add(new IoDevice(d, f, size, ALIGN));
        }
        return list;
    }

    private static IoBackend portable(List<IoDevice> devices) throws IOException {
        return new PortableIoBackend(devices, new IoOptions(true, 64, 4));
    }

    private static DeviceModelSpec custom(long bandwidth, long iops, long latencyNanos, int queueDepth) {
        return DeviceModelSpec.custom(bandwidth, iops, latencyNanos).withQueueDepth(queueDepth).withScale(1.0);
    }

    /** Reads {@code requests} of {@code len} bytes spread round-robin over the devices; returns seconds. */
    private static double readSeconds(IoBackend b, int requests, int len, int batchSize) {
        int n = b.devices().size();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate((long) batchSize * len, ALIGN);
            IoBatch batch = b.newBatch(batchSize);
            Random rnd = new Random(1);
            long slots = POOL / len;
            long t0 = System.nanoTime();
            for (int done = 0; done < requests; ) {
                batch.clear();
                int k = Math.min(batchSize, requests - done);
                for (int i = 0; i < k; i++) {
                    batch.addRead((done + i) % n, rnd.nextLong(slots) * len, buf, (long) i * len, len, i);
                }
                b.execute(batch);
                done += k;
            }
            return (System.nanoTime() - t0) / 1e9;
        }
    }

    /**
     * When the model, fed {@code requests} reads of {@code len} bytes round-robin over its devices in
     * one batch at virtual time {@code now}, says the last one completes (nanoseconds after {@code now}).
     */
    private static long virtualNanos(DeviceModel m, int requests, int len, long now) {
        int n = m.devices().size();
        IoBatch batch = m.newBatch(requests);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(len, ALIGN);
            for (int i = 0; i < requests; i++) {
                batch.addRead(i % n, 0, buf, 0, len, i); // never submitted: only the model's arithmetic runs
            }
            return m.model(batch, now) - now;
        }
    }

    /** A virtual time later than anything the model has scheduled since it was built. */
    private static long later() {
        return System.nanoTime() + 3_600_000_000_000L;
    }

    @Test
    void holdsEachDeviceToItsBandwidthAndDevicesAddUp() throws IOException {
        long bw = 40_000_000L; // 40 MB/s per device
        int len = 64 << 10;
        int requests = 240; // 15.7 MB: 0.39 s on one device, half that on two
        long perRequest = (long) (len * (1e9 / bw));
        try (DeviceModel one = DeviceModel.wrap(portable(devices(1, POOL)), custom(bw, 1_000_000, 0, 64));
                DeviceModel two = DeviceModel.wrap(portable(devices(2, POOL)), custom(bw, 1_000_000, 0, 64))) {
            // In real time the model can only slow reads down, so only the upper bound holds on a loaded machine.
            double rate = (double) requests * len / readSeconds(one, requests, len, 32);
            assertTrue(rate <= bw * 1.05, "one device read " + rate / 1e6 + " MB/s; limit " + bw / 1e6);
            double rateTwo = (double) requests * len / readSeconds(two, requests, len, 32);
            assertTrue(rateTwo <= 2 * bw * 1.05, "two devices read " + rateTwo / 1e6 + " MB/s; limit " + 2 * bw / 1e6);
            // In virtual time (after the real reads: it moves the queues an hour ahead) the figures are exact:
            // each device is a pipe of its bandwidth, and devices add up.
            assertEquals(requests * perRequest, virtualNanos(one, requests, len, later()), requests);
            assertEquals(requests / 2 * perRequest, virtualNanos(two, requests, len, later()), requests);
        }
    }

    @Test
    void holdsEachDeviceToItsIops() throws IOException {
        long iops = 2_000;
        int requests = 800; // 0.4 s at 2000 IOPS
        try (DeviceModel b = DeviceModel.wrap(portable(devices(1, POOL)), custom(1_000_000_000_000L, iops, 0, 64))) {
            double rate = requests / readSeconds(b, requests, ALIGN, 32);
            assertTrue(rate <= iops * 1.05, rate + " IOPS; limit " + iops);
            assertEquals(requests * (1_000_000_000L / iops), virtualNanos(b, requests, ALIGN, later()), requests);
        }
    }

    @Test
    void latencyFloorAndQueueDepthBoundEveryRequest() throws IOException {
        long latency = 20_000_000L; // 20 ms
        try (DeviceModel b = DeviceModel.wrap(portable(devices(1, POOL)),
                custom(1_000_000_000_000L, 100_000_000L, latency, 2))) {
            // The real wait honours the floors: lower bounds on time, which load cannot break.
            double single = readSeconds(b, 1, ALIGN, 1);
            assertTrue(single >= 0.0199, "one request took " + single + " s; floor 0.02 s");
            double eight = readSeconds(b, 8, ALIGN, 8);
            assertTrue(eight >= 0.0795, "8 requests at queue depth 2 took " + eight + " s; model 0.08 s");
            // Exactly, in virtual time: one request takes the floor; 8 requests, 2 at a time, take 4 rounds.
            assertEquals(latency, virtualNanos(b, 1, ALIGN, later()));
            assertEquals(4 * latency, virtualNanos(b, 8, ALIGN, later() + 3_600_000_000_000L));
        }
    }

    @Test
    void dataThroughTheModelIsBitExact() throws IOException {
        int len = 16 << 10;
        try (IoBackend b = DeviceModel.wrap(portable(devices(3, POOL)), DeviceModelSpec.highEnd().withScaleDevices(8));
                Arena arena = Arena.ofShared()) {
            MemorySegment out = arena.allocate(48L * len, ALIGN);
            MemorySegment in = arena.allocate(48L * len, ALIGN);
            Random rnd = new Random(9);
            for (long i = 0; i < out.byteSize(); i += 8) {
                out.set(ValueLayout.JAVA_LONG, i, rnd.nextLong());
            }
            IoBatch batch = b.newBatch(48);
            for (int i = 0; i < 48; i++) {
                batch.addWrite(i % 3, (long) (i / 3) * len * 2, out.asSlice((long) i * len, len), i);
            }
            b.execute(batch);
            batch.clear();
            for (int i = 47; i >= 0; i--) {
                batch.addRead(i % 3, (long) (i / 3) * len * 2, in, (long) i * len, len, i);
            }
            b.execute(batch);
            assertEquals(-1, out.mismatch(in), "data read through the model differs from what was written");
            DeviceModel.Stats st = ((DeviceModel) b).stats();
            assertEquals(2, st.awaits());
            assertEquals(32, st.requests()[0]);
            assertEquals(32L * len, st.bytes()[1]);
        }
    }

    @Test
    void failuresPropagateAndTheModelKeepsWorking() throws IOException {
        List<IoDevice> real = devices(1, POOL);
        // Declared twice as large as the file: a read past its end fails in the real backend.
        List<IoDevice> declared = List.of(new IoDevice(0, real.get(0).poolFile(), 2 * POOL, ALIGN));
        try (IoBackend b = DeviceModel.wrap(portable(declared), DeviceModelSpec.lowEnd());
                Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(2 * ALIGN, ALIGN);
            IoBatch batch = b.newBatch(2);
            batch.addRead(0, 0, buf, 0, ALIGN, 0);
            batch.addRead(0, POOL + ALIGN, buf, ALIGN, ALIGN, 1);
            KvIoException e = assertThrows(KvIoException.class, () -> b.execute(batch));
            assertTrue(e.getMessage().contains(String.valueOf(POOL + ALIGN)), e.getMessage());
            assertEquals(0, batch.pending());
            batch.clear();
            batch.addRead(0, 0, buf, 0, ALIGN, 0);
            b.execute(batch); // the failed batch left nothing behind in the model
            assertEquals(1, ((DeviceModel) b).stats().awaits());
        }
    }

    @Test
    void closeDrainsAndRefusesNewWork() throws IOException {
        IoBackend b = DeviceModel.wrap(portable(devices(2, POOL)), DeviceModelSpec.highEnd());
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(32L * ALIGN, ALIGN);
            IoBatch batch = b.newBatch(32);
            for (int i = 0; i < 32; i++) {
                batch.addRead(i % 2, (long) i * ALIGN, buf, (long) i * ALIGN, ALIGN, i);
            }
            b.submit(batch);
            b.close(); // without await: close drains the real I/O before the arena goes away
            assertEquals(0, batch.pending());
            IoBatch next = b.newBatch(1);
            next.addRead(0, 0, buf, 0, ALIGN, 0);
            assertThrows(IllegalStateException.class, () -> b.submit(next));
        }
    }

    @Test
    void nameSaysSimulatedAndWrappingTwiceIsRefused() throws IOException {
        try (DeviceModel b = DeviceModel.wrap(portable(devices(1, POOL)), DeviceModelSpec.highEnd())) {
            assertEquals("portable+simulated:high-end", b.name());
            assertTrue(DeviceModel.isSimulated(b));
            assertTrue(DeviceModel.isSimulated(b.name()));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> DeviceModel.wrap(b, DeviceModelSpec.lowEnd()));
            assertTrue(e.getMessage().contains("already simulated"), e.getMessage());
        }
    }

    @Test
    void scaledProfilesNeverExceedTheHostAndKeepTheirRatio() {
        for (int n = 1; n <= 8; n++) {
            for (DeviceModelSpec s : List.of(DeviceModelSpec.highEnd(), DeviceModelSpec.lowEnd(),
                    DeviceModelSpec.custom(3_000_000_000L, 700_000, 50_000), DeviceModelSpec.custom(10_000_000, 1000, 0))) {
                DeviceModelSpec eight = s.withScaleDevices(8);
                assertTrue(n * eight.deviceBandwidth(n) <= s.hostBandwidthBytesPerSecond() * 1.000001, s + " at " + n);
                assertTrue(n * eight.deviceIops(n) <= s.hostIops() * 1.000001, s + " at " + n);
                assertTrue(n * s.deviceBandwidth(n) <= s.hostBandwidthBytesPerSecond() * 1.000001, s + " at " + n);
            }
        }
        DeviceModelSpec hi = DeviceModelSpec.highEnd().withScaleDevices(8);
        DeviceModelSpec lo = DeviceModelSpec.lowEnd().withScaleDevices(8);
        assertEquals(hi.effectiveScale(4), lo.effectiveScale(4), "one factor for both named profiles");
        assertEquals(6.9 / 2.5, hi.deviceBandwidth(4) / lo.deviceBandwidth(4), 1e-9);
        // A slow custom device fits the host as it is: never scaled up.
        assertEquals(1.0, DeviceModelSpec.custom(10_000_000, 1000, 0).effectiveScale(8));
    }

    @Test
    void badValuesAreRejectedNamingKeyValueAndRange() {
        assertMessage(() -> DeviceModelSpec.custom(10, 1000, 0), "deviceModel.bandwidth = 10", "1000000..");
        assertMessage(() -> DeviceModelSpec.custom(10_000_000, 5, 0), "deviceModel.iops = 5", "100..100000000");
        assertMessage(() -> DeviceModelSpec.custom(10_000_000, 500, -1), "deviceModel.latencyNanos = -1", "0..");
        assertMessage(() -> DeviceModelSpec.highEnd().withScale(1.5), "deviceModel.scale = 1.5", "(0, 1]");
        assertMessage(() -> DeviceModelSpec.highEnd().withScale(Double.NaN), "deviceModel.scale = NaN", "(0, 1]");
        assertMessage(() -> DeviceModelSpec.highEnd().withQueueDepth(0), "deviceModel.queueDepth = 0", "1..1024");
        assertMessage(() -> DeviceModelSpec.profile("mid-range"), "deviceModel.profile = 'mid-range'", "high-end");
        assertMessage(() -> DeviceModelSpec.highEnd().withScaleDevices(2).effectiveScale(4),
                "deviceModel.scaleDevices = 2", "4..256");
    }

    private static void assertMessage(Runnable r, String... parts) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, r::run);
        for (String p : parts) {
            assertTrue(e.getMessage().contains(p), "message '" + e.getMessage() + "' lacks '" + p + "'");
        }
    }

    // ---- steady state allocates nothing (the model alone: the inner backend completes in submit) ----




    /** Completes every request at once without touching a file: isolates the model's own cost. */
    private record InstantBackend(List<IoDevice> devices) implements IoBackend {
        @Override
        public String name() {
            return "instant";
        }

        @Override
        public boolean directIo(int device) {
            return false;
        }

        @Override
        public void submit(IoBatch batch) {
            batch.expectCompletions(batch.size());
            for (int i = 0; i < batch.size(); i++) {
                batch.completed(i);
            }
        }

        @Override
        public void await(IoBatch batch) {
            batch.awaitCompletions();
        }

        @Override
        public void sync(int device) {}

        @Override
        public void close() {}
    }

    @Test
    void steadyStateAllocatesNothing() {
        List<IoDevice> devs = List.of(new IoDevice(0, dir.resolve("x"), POOL, ALIGN),
                new IoDevice(1, dir.resolve("y"), POOL, ALIGN));
        try (DeviceModel b = DeviceModel.wrap(new InstantBackend(devs),
                custom(1_000_000_000_000L, 100_000_000L, 0, 32)); Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(64L * ALIGN, ALIGN);
            IoBatch[] batches = {b.newBatch(64), b.newBatch(64), b.newBatch(64)};
            for (IoBatch batch : batches) {
                for (int i = 0; i < 64; i++) {
                    batch.addRead(i % 2, (long) i * ALIGN, buf, (long) i * ALIGN, ALIGN, i);
                }
            }
            for (int i = 0; i < 1000; i++) {
                allocated();
            }
            long overhead = -allocated() + allocated();
            for (int round = 0; round < 2000; round++) { // warm-up: compiles submit and await
                for (IoBatch batch : batches) {
                    b.submit(batch);
                }
                for (IoBatch batch : batches) {
                    b.await(batch);
                }
            }
            long before = allocated();
            for (int round = 0; round < 200; round++) {
                for (IoBatch batch : batches) {
                    b.submit(batch);
                }
                for (IoBatch batch : batches) {
                    b.await(batch);
                }
            }
            long bytes = allocated() - before - overhead;
            assertEquals(0, bytes, "600 batches through the model allocated " + bytes + " bytes");
        }
    }
}
