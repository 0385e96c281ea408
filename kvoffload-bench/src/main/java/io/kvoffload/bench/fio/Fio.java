package io.kvoffload.bench.fio;

import io.kvoffload.DecodeStats;
import io.kvoffload.KvStats;
import io.kvoffload.iouring.BlockQueues;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * fio as the physical ceiling of a decode's reads: random reads with the decode's request-size mix
 * ({@link #bssplit}) and depth on the same pool files (io_uring, O_DIRECT, read-only). Shared by
 * the benchmarks that report decode bandwidth as a ratio of fio's.
 */
public final class Fio {
    private static final Pattern BW = Pattern.compile("\"bw_bytes\" : ([0-9]+)");

    /**
     * glibc's tunable that advises its heap and mmap'ed chunks {@code MADV_HUGEPAGE} (glibc 2.35+;
     * ignored by older ones and where transparent huge pages are off).
     */
    public static final String HUGE_PAGE_MALLOC = "glibc.malloc.hugetlb=1";

    /** Aligns fio's buffers to the huge-page size, without which most of a small buffer has none. */
    public static final String HUGE_PAGE_ALIGN = "--iomem_align=2m";

    private Fio() {}

    /** Whether an {@code fio} binary runs here. */
    public static boolean available() {
        try {
            Process p = new ProcessBuilder("fio", "--version").redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }

    /**
     * The bytes of each device's pool file fio reads: the least any device has stored (capacity
     * less free bytes), in whole MiB, so every read lands on data the store wrote.
     */
    public static long poolFileSize(KvStats stats) {
        return stats.devices().stream().mapToLong(d -> d.capacityBytes() - d.freeBytes()).min().orElse(0) & -(1L << 20);
    }

    /**
     * fio's iodepth for a decode that keeps {@code readsInFlight} reads in flight: that many, at
     * least 1 and at most what the engine queues, {@code queueDepth} per device on {@code devices}.
     */
    public static int depth(double readsInFlight, int queueDepth, int devices) {
        return (int) Math.max(1, Math.min((long) queueDepth * devices, Math.round(readsInFlight)));
    }

    /** fio's bssplit for the decode's reads: each size bucket's mean size (4 KiB-aligned) with its share of reads. */
    public static String bssplit(DecodeStats st) {
        long[] count = st.readSizeCount();
        long[] bytes = st.readSizeBytes();
        long total = Arrays.stream(count).sum();
        StringBuilder sb = new StringBuilder();
        int assigned = 0;
        int last = -1;
        for (int b = 0; b < count.length; b++) {
            if (count[b] > 0) {
                last = b;
            }
        }
        for (int b = 0; b < count.length; b++) {
            if (count[b] == 0) {
                continue;
            }
            long kib = Math.max(4, Math.round(bytes[b] / (double) count[b] / 4096) * 4);
            int pct = b == last ? 100 - assigned : (int) Math.round(100.0 * count[b] / total);
            if (pct <= 0) {
                continue;
            }
            assigned += pct;
            if (!sb.isEmpty()) {
                sb.append(':');
            }
            sb.append(kib).append("k/").append(pct);
        }
        return sb.isEmpty() ? "4k/100" : sb.toString();
    }

    /**
     * The fio settings tried per measurement, best taken: registered files and buffers as the
     * io_uring backend uses them, with fio's default submission and with batches of 64 submitted
     * and reaped at once (which setting wins varies between runs on a shared VM).
     */
    static final List<List<String>> TUNINGS = List.of(
            List.of("--fixedbufs", "--registerfiles"),
            List.of("--fixedbufs", "--registerfiles", "--iodepth_batch_submit=64", "--iodepth_batch_complete_max=64"));

    /**
     * Random reads over the engine's pool files ({@code kvoffload.pool} in each device directory),
     * the first {@code fileSize} bytes of each: the best MiB/s of the {@link #TUNINGS}, each run
     * for {@code seconds}, at {@code depth} and, where the block devices under the files queue fewer
     * requests, also at that many (the io_uring backend keeps its rings within it,
     * {@link BlockQueues}), so the reference is never the weaker of the two depths. A tuning fio
     * refuses here (registered buffers need RLIMIT_MEMLOCK) falls back to plain buffers.
     */
    public static double randRead(List<Path> deviceDirs, long fileSize, String bssplit, int depth, int seconds)
            throws IOException, InterruptedException {
        int slots = BlockQueues.requestSlots(deviceDirs.stream().map(d -> d.resolve("kvoffload.pool")).toList());
        int[] depths = slots > 0 && slots < depth ? new int[] {depth, slots} : new int[] {depth};
        double best = 0;
        for (int qd : depths) {
            for (List<String> tuning : TUNINGS) {
                double mibs;
                try {
                    mibs = randRead(deviceDirs, fileSize, bssplit, qd, seconds, tuning);
                } catch (IOException e) {
                    mibs = randRead(deviceDirs, fileSize, bssplit, qd, seconds,
                            tuning.stream().filter(o -> !o.equals("--fixedbufs")).toList());
                }
                best = Math.max(best, mibs);
            }
        }
        return best;
    }

    private static double randRead(List<Path> deviceDirs, long fileSize, String bssplit, int depth, int seconds,
            List<String> tuning) throws IOException, InterruptedException {
        StringBuilder files = new StringBuilder();
        for (Path d : deviceDirs) {
            if (!files.isEmpty()) {
                files.append(':');
            }
            files.append(d.resolve("kvoffload.pool").toString().replace(":", "\\:"));
        }
        List<String> cmd = new ArrayList<>(List.of("fio", "--name=decode", "--filename=" + files,
                "--ioengine=io_uring", "--direct=1", "--rw=randread", "--bssplit=" + bssplit, "--iodepth=" + depth,
                "--filesize=" + Math.max(1, fileSize >> 20) + "m", "--runtime=" + seconds, "--time_based",
                "--randrepeat=0", "--norandommap", "--readonly", "--output-format=json"));
        cmd.addAll(tuning);
        return run(cmd, seconds + 60L);
    }

    /**
     * fio replaying {@code job} (written to {@code log}): MiB/s. Not best-of several settings: the
     * job fixes depth and burst shape to the fetch's. A refused {@code --fixedbufs} (registered
     * buffers need RLIMIT_MEMLOCK) falls back to plain buffers.
     */
    public static double replay(FetchFioJob job, Path log) throws IOException, InterruptedException {
        job.writeLog(log);
        try {
            List<String> args = job.arguments(log);
            try {
                return run(args, 600);
            } catch (IOException e) {
                return run(args.stream().filter(o -> !o.equals("--fixedbufs")).toList(), 600);
            }
        } finally {
            java.nio.file.Files.deleteIfExists(log);
        }
    }

    /**
     * Runs fio with {@code args} (JSON output) and returns its read bandwidth in MiB/s. fio's I/O
     * buffers come from malloc; {@link #HUGE_PAGE_MALLOC} and {@link #HUGE_PAGE_ALIGN} make them
     * 2 MiB-aligned transparent huge pages, as the engine's DRAM slabs are by default
     * ({@code KvConfig.dramHugePages}), so both sides' reads reach the device in the same segments.
     */
    private static double run(List<String> args, long timeoutSeconds) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(args);
        cmd.add(HUGE_PAGE_ALIGN);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(false);
        pb.environment().put("GLIBC_TUNABLES", HUGE_PAGE_MALLOC);
        Process p = pb.start();
        String json = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException(String.join(" ", cmd) + " failed: " + json);
        }
        Matcher m = BW.matcher(json);
        if (!m.find()) {
            throw new IOException("fio output has no bw_bytes: " + json);
        }
        return Long.parseLong(m.group(1)) / (double) (1 << 20);
    }
}
