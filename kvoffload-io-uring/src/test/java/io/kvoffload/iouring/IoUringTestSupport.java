package io.kvoffload.iouring;

import static org.junit.jupiter.api.Assertions.fail;

import io.kvoffload.spi.Availability;
import io.kvoffload.spi.IoDevice;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Assumptions;

/**
 * Shared by the io_uring tests: the availability gate (skip with what to install, or fail when
 * {@code KVO_REQUIRE_IO_URING=1}), pool files and aligned buffers.
 */
public final class IoUringTestSupport {
    private IoUringTestSupport() {}

    public static final String REQUIRE_ENV = "KVO_REQUIRE_IO_URING";
    public static final int ALIGN = 4096;

    /** Whether the environment demands that io_uring tests run (CI sets it). */
    public static boolean required() {
        return "1".equals(System.getenv(REQUIRE_ENV));
    }

    /**
     * Skips the calling test (or container) when io_uring is unavailable, saying what to install;
     * fails instead when {@code KVO_REQUIRE_IO_URING=1}.
     */
    public static void requireIoUring() {
        Availability a = new IoUringBackendProvider().probe();
        if (!a.available()) {
            skipOrFail("io_uring is unavailable (" + a.reason() + "); install liburing2 (apt-get install liburing2)"
                    + " on Linux 5.6+ to run the io_uring tests");
        }
    }

    /** Skips with {@code message}, or fails with it when {@code KVO_REQUIRE_IO_URING=1}. */
    public static void skipOrFail(String message) {
        if (required()) {
            fail(REQUIRE_ENV + "=1 but " + message);
        }
        Assumptions.abort(message);
    }

    /** Creates {@code n} pool files of {@code size} bytes filled with random bytes (seeded). */
    public static List<IoDevice> devices(Path dir, int n, long size, long seed) throws IOException {
        List<IoDevice> list = new ArrayList<>();
        Random rnd = new Random(seed);
        byte[] chunk = new byte[1 << 16];
        for (int d = 0; d < n; d++) {
            Path f = dir.resolve("pool-" + d + ".kvo");
            try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
                for (long off = 0; off < size; off += chunk.length) {
                    rnd.nextBytes(chunk);
                    raf.write(chunk, 0, (int) Math.min(chunk.length, size - off));
                }
            }
            list.add(new IoDevice(d, f, size, ALIGN));
        }
        return list;
    }

    /** A 4096-aligned native buffer of {@code size} bytes. */
    public static MemorySegment buffer(Arena arena, long size) {
        return arena.allocate(size, ALIGN);
    }

    /** Fills {@code seg} with bytes from {@code rnd}. */
    public static void fill(MemorySegment seg, Random rnd) {
        for (long i = 0; i < seg.byteSize(); i += 8) {
            seg.set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, i, rnd.nextLong());
        }
    }

    /** Reads {@code length} bytes at {@code offset} of {@code file} through the JDK, for checking. */
    public static byte[] readFile(Path file, long offset, int length) throws IOException {
        byte[] out = new byte[length];
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "r")) {
            raf.seek(offset);
            raf.readFully(out);
        }
        return out;
    }
}
