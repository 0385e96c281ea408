package io.kvoffload.bench.fio;

import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * fio replaying reads shaped like a measured fetch ({@link FetchShape}), so that "fetch / fio"
 * compares like with like: the same request sizes in the same proportions (each size bucket's
 * share and mean, to the 4 KiB granularity the reads have), the same data (random aligned reads
 * inside the fetched sequence's own extents on the same pool files), the same number of reads in
 * flight, and the same burst shape — all of a burst submitted at once and all of it reaped before
 * the next (fio's {@code iodepth_batch_submit} = {@code iodepth_batch_complete_min} = depth), as a
 * fetch submits its reads in one batch and ends when the last lands. The reads go to fio as an
 * iolog ({@code read_iolog}, replayed without stalls).
 *
 * @param files the pool files, by device
 * @param depth reads in flight, and the size of every burst
 * @param device per read its device
 * @param offset per read its byte offset
 * @param length per read its byte length
 */
public record FetchFioJob(List<Path> files, int depth, int[] device, long[] offset, int[] length) {
    /** Reads are whole 4 KiB pages at 4 KiB offsets (O_DIRECT), as the fetch's are. */
    static final int PAGE = 4096;
    /** Largest difference of a size bucket's share between job and fetch that still counts as the same mix. */
    static final double SHARE_TOLERANCE = 0.02;
    /** Largest relative difference of the mean read size that still counts as the same mix. */
    static final double MEAN_TOLERANCE = 0.02;

    public FetchFioJob {
        files = List.copyOf(files);
        if (device.length != offset.length || device.length != length.length || device.length == 0) {
            throw new IllegalArgumentException("device, offset and length hold " + device.length + ", "
                    + offset.length + " and " + length.length + " reads; allowed: the same number, at least one");
        }
        if (depth < 1) {
            throw new IllegalArgumentException("depth = " + depth + "; allowed: 1 or more");
        }
    }

    /**
     * About {@code bytes} of reads (at least 8 bursts) shaped like {@code fetch}: the per-bucket read
     * counts are the fetch's shares of the total (rounded), each bucket's sizes the two 4 KiB
     * multiples around its mean in the proportion that keeps the mean, the order shuffled, the
     * offsets uniform over the sequence's extent bytes. {@code seed} makes it repeatable.
     */
    public static FetchFioJob of(FetchShape fetch, long bytes, long seed) {
        int depth = fetch.inFlight();
        long[] count = fetch.sizeCount();
        long[] sum = fetch.sizeBytes();
        int bursts = (int) Math.max(8, Math.min(1 << 20, Math.ceil(bytes / (fetch.meanReadBytes() * depth))));
        int reads = Math.multiplyExact(bursts, depth);
        // Sizes: per bucket its share of the reads, split between the 4 KiB multiples around its mean.
        int[] sizes = new int[reads];
        int filled = 0;
        long total = 0;
        for (long c : count) {
            total += c;
        }
        long seen = 0;
        for (int b = 0; b < count.length; b++) {
            if (count[b] == 0) {
                continue;
            }
            seen += count[b];
            int n = (int) (Math.round(reads * (double) seen / total) - filled); // cumulative rounding: sums to reads
            double mean = sum[b] / (double) count[b];
            int lo = (int) Math.max(PAGE, Math.floor(mean / PAGE) * PAGE);
            int hi = lo + PAGE;
            // Both sizes stay in the bucket (a fetch's reads are 4 KiB multiples, so its mean allows that).
            int nHi = hi >= 2L << b ? 0 : (int) Math.round(n * Math.max(0, Math.min(1, (mean - lo) / PAGE)));
            for (int i = 0; i < n; i++) {
                sizes[filled + i] = i < nHi ? hi : lo;
            }
            filled += n;
        }
        SplittableRandom rnd = new SplittableRandom(seed);
        for (int i = reads - 1; i > 0; i--) {
            int j = rnd.nextInt(i + 1);
            int t = sizes[i];
            sizes[i] = sizes[j];
            sizes[j] = t;
        }
        // Offsets: an extent picked in proportion to its bytes, then an aligned start that fits.
        List<long[]> extents = fetch.extents();
        long[] cumulative = new long[extents.size()];
        long acc = 0;
        for (int e = 0; e < cumulative.length; e++) {
            acc += extents.get(e)[2];
            cumulative[e] = acc;
        }
        int[] dev = new int[reads];
        long[] off = new long[reads];
        for (int i = 0; i < reads; i++) {
            long[] e = pick(extents, cumulative, sizes[i], rnd);
            long slots = (e[2] - sizes[i]) / PAGE + 1;
            dev[i] = (int) e[0];
            off[i] = e[1] + rnd.nextLong(slots) * PAGE;
        }
        return new FetchFioJob(fetch.poolFiles(), depth, dev, off, sizes);
    }

    /**
     * An extent at least {@code size} long (the largest that is, when none is picked after 64 tries).
     *
     * @throws IllegalArgumentException when no extent holds {@code size} bytes
     */
    private static long[] pick(List<long[]> extents, long[] cumulative, int size, SplittableRandom rnd) {
        for (int tries = 0; tries < 64; tries++) {
            long at = rnd.nextLong(cumulative[cumulative.length - 1]);
            int e = java.util.Arrays.binarySearch(cumulative, at + 1);
            e = e >= 0 ? e : -e - 1;
            if (extents.get(e)[2] >= size) {
                return extents.get(e);
            }
        }
        long[] largest = extents.stream().max(java.util.Comparator.comparingLong(x -> x[2])).orElseThrow();
        if (largest[2] < size) {
            throw new IllegalArgumentException("size = " + size + " bytes is out of range; allowed: up to the largest"
                    + " extent of the sequence, " + largest[2] + " bytes");
        }
        return largest;
    }

    /** Reads in the job. */
    public int reads() {
        return device.length;
    }

    /**
     * How this job differs from {@code fetch}: an empty list when it is like-with-like (same files,
     * reads in flight and burst, every read aligned inside the sequence's extents, the size mix's
     * bucket shares and mean within {@value #SHARE_TOLERANCE} and {@value #MEAN_TOLERANCE}).
     * A comparison with fio is reported only then.
     */
    public List<String> unlike(FetchShape fetch) {
        List<String> out = new ArrayList<>();
        if (!files.equals(fetch.poolFiles())) {
            out.add("files " + files + " are not the fetch's " + fetch.poolFiles());
        }
        if (depth != fetch.inFlight()) {
            out.add("depth " + depth + " is not the fetch's " + fetch.inFlight() + " reads in flight");
        }
        if (reads() % depth != 0) {
            out.add(reads() + " reads are not whole bursts of " + depth);
        }
        List<long[]> extents = fetch.extents();
        long[] count = new long[fetch.sizeCount().length];
        long bytes = 0;
        for (int i = 0; i < reads(); i++) {
            boolean inside = false;
            for (long[] e : extents) {
                if (e[0] == device[i] && offset[i] >= e[1] && offset[i] + length[i] <= e[1] + e[2]) {
                    inside = true;
                    break;
                }
            }
            if (!inside || offset[i] % PAGE != 0 || length[i] % PAGE != 0) {
                out.add("read " + i + " (" + length[i] + " bytes at device " + device[i] + " offset " + offset[i]
                        + ") is not an aligned read inside the sequence's extents");
                break;
            }
            int b = 63 - Long.numberOfLeadingZeros(length[i]);
            if (b < count.length) {
                count[b]++;
            }
            bytes += length[i];
        }
        for (int b = 0; b < count.length; b++) {
            double diff = Math.abs(count[b] / (double) reads() - fetch.share(b));
            if (diff > SHARE_TOLERANCE) {
                out.add(String.format("size bucket [%d, %d) holds %.3f of the reads, the fetch's %.3f", 1L << b,
                        2L << b, count[b] / (double) reads(), fetch.share(b)));
            }
        }
        double mean = bytes / (double) reads();
        if (Math.abs(mean / fetch.meanReadBytes() - 1) > MEAN_TOLERANCE) {
            out.add(String.format("mean read %.0f bytes, the fetch's %.0f", mean, fetch.meanReadBytes()));
        }
        return out;
    }

    /** Writes the reads as a fio iolog (version 2). */
    public void writeLog(Path log) throws IOException {
        for (Path f : files) {
            if (f.toString().chars().anyMatch(Character::isWhitespace)) {
                throw new IllegalArgumentException("pool file " + f + " has white space in its path; allowed: none"
                        + " (fio's iolog separates fields by white space)");
            }
        }
        try (Writer w = Files.newBufferedWriter(log, StandardCharsets.UTF_8)) {
            w.write("fio version 2 iolog\n");
            for (Path f : files) {
                w.write(f + " add\n");
            }
            for (Path f : files) {
                w.write(f + " open\n");
            }
            for (int i = 0; i < reads(); i++) {
                w.write(files.get(device[i]) + " read " + offset[i] + " " + length[i] + "\n");
            }
            for (Path f : files) {
                w.write(f + " close\n");
            }
        }
    }

    /**
     * fio's arguments replaying {@code log} (what {@link #writeLog} wrote): io_uring, O_DIRECT,
     * registered buffers as the backend uses them, read-only, bursts of {@link #depth}.
     */
    public List<String> arguments(Path log) {
        return List.of("fio", "--name=fetch", "--ioengine=io_uring", "--direct=1", "--readonly",
                "--read_iolog=" + log, "--replay_no_stall=1", "--iodepth=" + depth,
                "--iodepth_batch_submit=" + depth, "--iodepth_batch_complete_min=" + depth, "--fixedbufs",
                "--output-format=json");
    }
}
