package io.kvoffload.bench.fio;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The fio job of {@code compare} is built from the fetch it is compared with, and says when it is not. */
class FetchFioJobTest {
    @TempDir
    Path dir;

    /** Reads of 4 KiB (30%), 8/12 KiB (50%, mean 10 KiB) and 64 KiB (20%), 96 per fetch. */
    private FetchShape shape(int queueDepth, List<long[]> extents) {
        long[] count = new long[20];
        long[] bytes = new long[20];
        count[12] = 300;
        bytes[12] = 300L * 4096;
        count[13] = 500;
        bytes[13] = 500L * 10 * 1024;
        count[16] = 200;
        bytes[16] = 200L * 65536;
        return new FetchShape(List.of(dir.resolve("a/kvoffload.pool"), dir.resolve("b/kvoffload.pool")), extents,
                count, bytes, 1000 / 10.4, 2 * queueDepth);
    }

    private static List<long[]> extents() {
        return List.of(new long[] {0, 1 << 20, 4 << 20}, new long[] {1, 0, 2 << 20}, new long[] {1, 8 << 20, 64 << 10});
    }

    @Test
    void theJobHasTheFetchsSizeMixDepthBurstAndData() {
        FetchShape fetch = shape(128, extents());
        FetchFioJob job = FetchFioJob.of(fetch, 64L << 20, 7);
        assertEquals(List.of(), job.unlike(fetch));
        assertEquals(96, job.depth(), "one fetch's reads in flight");
        assertEquals(0, job.reads() % job.depth(), "whole bursts");
        double mean = 0;
        long[] perBucket = new long[20];
        for (int i = 0; i < job.reads(); i++) {
            mean += job.length()[i];
            perBucket[63 - Long.numberOfLeadingZeros(job.length()[i])]++;
        }
        assertEquals(fetch.meanReadBytes(), mean / job.reads(), fetch.meanReadBytes() * 0.005, "mean read size");
        assertEquals(0.3, perBucket[12] / (double) job.reads(), 0.005);
        assertEquals(0.5, perBucket[13] / (double) job.reads(), 0.005);
        assertEquals(0.2, perBucket[16] / (double) job.reads(), 0.005);
        List<String> args = job.arguments(dir.resolve("log"));
        assertTrue(args.contains("--iodepth=96"), args.toString());
        assertTrue(args.contains("--iodepth_batch_submit=96"), "a burst is submitted at once: " + args);
        assertTrue(args.contains("--iodepth_batch_complete_min=96"), "and reaped whole: " + args);
        assertTrue(args.contains("--read_iolog=" + dir.resolve("log")), args.toString());
    }

    @Test
    void aFetchLargerThanTheQueuesHasTheQueuesInFlight() {
        FetchShape fetch = shape(16, extents());
        assertEquals(32, fetch.inFlight());
        assertEquals(32, FetchFioJob.of(fetch, 1 << 20, 1).depth());
    }

    @Test
    void aJobBuiltForAnotherFetchIsReportedUnlike() {
        FetchShape fetch = shape(128, extents());
        FetchFioJob shallower = FetchFioJob.of(shape(16, extents()), 8 << 20, 3);
        assertTrue(shallower.unlike(fetch).stream().anyMatch(r -> r.startsWith("depth 32")), shallower.unlike(fetch)
                .toString());
        FetchFioJob elsewhere = FetchFioJob.of(shape(128, List.<long[]>of(new long[] {0, 64 << 20, 8 << 20})), 8 << 20,
                3);
        assertTrue(elsewhere.unlike(fetch).stream().anyMatch(r -> r.contains("inside the sequence's extents")),
                elsewhere.unlike(fetch).toString());
        long[] count = new long[20];
        long[] bytes = new long[20];
        count[16] = 10;
        bytes[16] = 10L * 65536;
        FetchShape large = new FetchShape(fetch.poolFiles(), extents(), count, bytes, fetch.readsPerFetch(),
                fetch.inFlightLimit());
        List<String> mix = FetchFioJob.of(large, 8 << 20, 3).unlike(fetch);
        assertTrue(mix.stream().anyMatch(r -> r.startsWith("size bucket [4096, 8192)")), mix.toString());
        assertTrue(mix.stream().anyMatch(r -> r.startsWith("mean read")), mix.toString());
    }

    /** A run may span two extents the allocator put back to back: they count as one region. */
    @Test
    void adjacentExtentsMergeSoARunSpanningThemFits() {
        List<long[]> pieces = List.of(new long[] {0, 8192, 8192}, new long[] {0, 0, 8192}, new long[] {1, 0, 65536});
        long[] count = new long[20];
        long[] bytes = new long[20];
        count[13] = 1;
        bytes[13] = 12288; // 12 KiB: more than either 8 KiB piece of device 0
        FetchShape fetch = new FetchShape(shape(1, extents()).poolFiles(), pieces, count, bytes, 4, 8);
        assertEquals(2, fetch.extents().size());
        assertEquals(16384, fetch.extents().get(0)[2]);
        FetchFioJob job = FetchFioJob.of(fetch, 1 << 20, 9);
        assertEquals(List.of(), job.unlike(fetch));
        count[13] = 0;
        count[17] = 1;
        bytes[17] = 131072; // larger than every extent: refused by name
        FetchShape tooLarge = new FetchShape(fetch.poolFiles(), pieces, count, bytes, 4, 8);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> FetchFioJob.of(tooLarge, 1 << 20, 9));
        assertTrue(e.getMessage().startsWith("size = 131072 bytes is out of range"), e.getMessage());
    }

    @Test
    void badShapesAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> shape(128, List.of()));
        assertThrows(IllegalArgumentException.class, () -> shape(128, List.<long[]>of(new long[] {2, 0, 4096})));
        assertThrows(IllegalArgumentException.class, () -> new FetchShape(List.of(dir), extents(), new long[4],
                new long[4], 1, 1));
    }

    /** fio replays the job on real files: reads land, the log is removed (needs fio). */
    @Test
    void fioReplaysTheJob() throws Exception {
        Assumptions.assumeTrue(Fio.available(), "fio is not installed");
        byte[] data = new byte[12 << 20];
        new Random(1).nextBytes(data);
        for (String d : List.of("a", "b")) {
            Files.createDirectories(dir.resolve(d));
            Files.write(dir.resolve(d).resolve("kvoffload.pool"), data);
        }
        FetchShape fetch = shape(128, extents());
        FetchFioJob job = FetchFioJob.of(fetch, 4 << 20, 5);
        Path log = dir.resolve("job.iolog");
        double mibs = Fio.replay(job, log);
        assertTrue(mibs > 0, "fio read at " + mibs + " MiB/s");
        assertFalse(Files.exists(log), "the iolog is removed");
    }
}
