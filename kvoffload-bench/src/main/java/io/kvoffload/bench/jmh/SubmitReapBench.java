package io.kvoffload.bench.jmh;

import io.kvoffload.iouring.IoUringBackend;
import io.kvoffload.iouring.IoUringConfig;

import io.kvoffload.spi.IoBatch;
import io.kvoffload.spi.IoDevice;
import io.kvoffload.spi.IoOptions;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Submit and reap one batch of 256 random 4 KiB O_DIRECT reads through the io_uring backend, into a
 * DRAM slab registered as a fixed buffer. Run with {@code -prof gc}: {@code gc.alloc.rate.norm}
 * must be 0 B/op (the backend's hot path allocates nothing).
 * Needs liburing ({@code ./kvo jmh SubmitReapBench -prof gc}).
 */
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 5)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-Xmx1g"})
public class SubmitReapBench extends MicroBenchmark {
    @Param({"256"})
    int batchSize;

    @Param({"4096"})
    int blockBytes;

    private Path dir;
    private Arena arena;
    private MemorySegment slab;
    private IoUringBackend backend;
    private IoBatch batch;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        dir = Files.createTempDirectory("kvo-jmh");
        Path file = dir.resolve("pool.kvo");
        long size = 64L << 20;
        byte[] chunk = new byte[1 << 20];
        new Random(1).nextBytes(chunk);
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            for (long off = 0; off < size; off += chunk.length) {
                raf.write(chunk);
            }
        }
        List<IoDevice> devices = List.of(new IoDevice(0, file, size, 4096));
        IoOptions options = new IoOptions(true, batchSize, 1);
        backend = IoUringBackend.open(devices, options, IoUringConfig.defaults(options, 1));
        arena = Arena.ofShared();
        slab = arena.allocate((long) batchSize * blockBytes, 4096);
        backend.dramSlabListener().slabAllocated(0, slab);
        batch = backend.newBatch(batchSize);
        Random rnd = new Random(2);
        long blocks = size / blockBytes;
        for (int i = 0; i < batchSize; i++) {
            long offset = (rnd.nextLong() & Long.MAX_VALUE) % blocks * blockBytes;
            batch.addRead(0, offset, slab.asSlice((long) i * blockBytes, blockBytes), i);
        }
    }

    @Benchmark
    public int submitAndReap() {
        backend.submit(batch);
        backend.await(batch);
        return batch.size();
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        backend.dramSlabListener().slabFreed(0, slab);
        backend.close();
        arena.close();
        try (var files = Files.list(dir)) {
            for (Path p : files.toList()) {
                Files.delete(p);
            }
        }
        Files.delete(dir);
    }
}
