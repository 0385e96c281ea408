package io.kvoffload.iouring;

import io.kvoffload.internal.dram.SlabMemory;
import io.kvoffload.spi.IoBackend;
import io.kvoffload.spi.IoBackendProvider;
import io.kvoffload.spi.IoBatch;
import io.kvoffload.spi.IoDevice;
import io.kvoffload.spi.IoOptions;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.ServiceLoader;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Random-read throughput of the portable backend, the io_uring backend and fio on the same files.
 * Not part of the test suite (the name does not end in Test); run it with
 * {@code kvoffload-io-uring/bench.sh}, which prints the tables recorded in docs/io-uring.md.
 *
 * <p>Modes:
 * <ul>
 *   <li>{@code throughput}: block sizes × queue depths, one device. A queue depth QD is kept with
 *       {@code K = min(QD, 8)} batches of {@code QD/K} reads in rotation on one thread (await the
 *       oldest, refill it, submit it again): at most QD reads in flight, refilled QD/K at a time,
 *       the way the decoder submits and reaps batches. fio runs at the same depth with registered
 *       files and buffers, as the backend does, twice: its default (one read refilled per
 *       completion) and the backend's burst shape ({@code iodepth_batch_submit} and
 *       {@code iodepth_batch_complete_min} = QD/K); the better run is the reference.</li>
 *   <li>{@code fixed}: the io_uring backend with and without fixed buffers, 4 and 256 KiB, QD 64.</li>
 *   <li>{@code topology}: batches of 4 KiB reads spread over 4 devices, through one ring for all
 *       devices versus one ring (one backend) per device.</li>
 *   <li>{@code sharing}: two threads submitting batches, on one shared ring (with its lock) versus a
 *       ring per thread.</li>
 * </ul>
 *
 * <p>Arguments: {@code mode target [seconds] [sizeMiB] [rounds]}; {@code target} is a directory for
 * the test files, or a block device (e.g. a loop device over a tmpfs file) used as it is.
 */
public final class IoUringThroughputBench {
    private static final int ALIGN = 4096;
    /**
     * The read buffers are allocated as the DRAM tier allocates its slabs (huge pages by default,
     * {@code KvConfig.dramHugePages}); {@code -Dkvo.bench.hugePages=false} takes them from malloc.
     */
    private static final boolean HUGE_PAGES = Boolean.parseBoolean(System.getProperty("kvo.bench.hugePages", "true"));
    private static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    private IoUringThroughputBench() {}

    /** One measured point. */
    record Result(long ios, long bytes, double seconds, double cpuSeconds, long syscalls) {
        double iops() {
            return ios / seconds;
        }

        double mibps() {
            return bytes / seconds / (1 << 20);
        }

        double cpuUsPerIo() {
            return cpuSeconds * 1e6 / ios;
        }
    }

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "throughput";
        Path dir = Path.of(args.length > 1 ? args[1] : "/tmp/kvo-bench");
        double seconds = args.length > 2 ? Double.parseDouble(args[2]) : 3;
        long sizeMiB = args.length > 3 ? Long.parseLong(args[3]) : 1024;
        int rounds = args.length > 4 ? Integer.parseInt(args[4]) : 3;
        if (!isBlockDevice(dir)) {
            Files.createDirectories(dir);
        }
        switch (mode) {
            case "throughput" -> throughput(dir, seconds, sizeMiB, rounds);
            case "topology" -> topology(dir, seconds, sizeMiB, rounds);
            case "sharing" -> sharing(dir, seconds, sizeMiB, rounds);
            case "fixed" -> fixed(dir, seconds, sizeMiB, rounds);
            default -> throw new IllegalArgumentException("mode = " + mode + "; allowed: throughput, topology, sharing, fixed");
        }
    }

    // ------------------------------------------------------------------ modes

    private static void throughput(Path dir, double seconds, long sizeMiB, int rounds) throws Exception {
        List<IoDevice> devices = prepare(dir, 1, sizeMiB);
        Path target = devices.get(0).poolFile();
        int[] blockKiB = java.util.Arrays.stream(System.getProperty("kvo.bench.blocks", "4,16,64,256").split(","))
                .mapToInt(Integer::parseInt).toArray();
        int[] depths = java.util.Arrays.stream(System.getProperty("kvo.bench.depths", "1,4,16,32,64,128,256")
                .split(",")).mapToInt(Integer::parseInt).toArray();
        boolean withPortable = Boolean.parseBoolean(System.getProperty("kvo.bench.portable", "true"));
        System.out.println("Target " + target + ", " + sizeMiB + " MiB, " + rounds + " rounds of " + seconds
                + " s per engine and point (engine order rotated per round); fio and the io_uring backend both with"
                + " registered files and buffers, buffers " + (HUGE_PAGES ? "on transparent huge pages (fio: glibc.malloc.hugetlb=1)"
                : "from malloc") + "; fio: the better of its default and the backend's burst shape (QD/min(QD,8) reads submitted and at least as many reaped at a time). MiB/s and CPU: medians; x/fio: median of the per-round ratios.");
        System.out.println();
        System.out.println("| block | QD | fio IOPS | fio MiB/s (min-max) | io_uring MiB/s | io_uring/fio |"
                + " portable MiB/s | portable/fio | CPU µs/IO fio / io_uring / portable |");
        System.out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        // Warm the JIT before the first recorded point.
        for (int kib : new int[] {4, 256}) {
            runJava("io_uring", devices, kib << 10, 64, Math.min(2, seconds), true);
            runJava("portable", devices, kib << 10, 64, Math.min(2, seconds), true);
        }
        for (int kib : blockKiB) {
            for (int qd : depths) {
                List<Result> fio = new ArrayList<>();
                List<Result> uring = new ArrayList<>();
                List<Result> portable = new ArrayList<>();
                for (int r = 0; r < rounds; r++) {
                    for (int e = 0; e < 3; e++) {
                        switch ((e + r) % 3) {
                            case 0 -> fio.add(runFio(target, kib, qd, seconds, sizeMiB));
                            case 1 -> uring.add(runJava("io_uring", devices, kib << 10, qd, seconds, true));
                            default -> {
                                if (withPortable) {
                                    portable.add(runJava("portable", devices, kib << 10, qd, seconds, true));
                                }
                            }
                        }
                    }
                }
                Result f = median(fio);
                Result u = median(uring);
                Result p = withPortable ? median(portable) : new Result(0, 0, 1, 0, 0);
                double fMin = fio.stream().mapToDouble(Result::mibps).min().orElseThrow();
                double fMax = fio.stream().mapToDouble(Result::mibps).max().orElseThrow();
                System.out.printf(Locale.ROOT, "| %d KiB | %d | %.0f | %.0f (%.0f-%.0f) | %.0f | %.0f%% | %.0f | %.0f%% |"
                        + " %.1f / %.1f / %.1f |%n", kib, qd, f.iops(), f.mibps(), fMin, fMax, u.mibps(),
                        100 * pairedRatio(uring, fio), p.mibps(), withPortable ? 100 * pairedRatio(portable, fio) : 0,
                        f.cpuUsPerIo(), medianBy(uring, Result::cpuUsPerIo).cpuUsPerIo(),
                        withPortable ? medianBy(portable, Result::cpuUsPerIo).cpuUsPerIo() : 0);
            }
        }
    }

    private static void fixed(Path dir, double seconds, long sizeMiB, int rounds) throws Exception {
        List<IoDevice> devices = prepare(dir, 1, sizeMiB);
        runJava("io_uring", devices, 4 << 10, 64, Math.min(2, seconds), true);
        System.out.println("io_uring backend with and without fixed buffers (READ_FIXED vs READ), QD 64, " + rounds
                + " alternating rounds of " + seconds + " s, medians:");
        for (int kib : new int[] {4, 256}) {
            List<Result> fixed = new ArrayList<>();
            List<Result> plain = new ArrayList<>();
            for (int r = 0; r < rounds; r++) {
                if (r % 2 == 0) {
                    fixed.add(runJava("io_uring", devices, kib << 10, 64, seconds, true));
                    plain.add(runJava("io_uring", devices, kib << 10, 64, seconds, false));
                } else {
                    plain.add(runJava("io_uring", devices, kib << 10, 64, seconds, false));
                    fixed.add(runJava("io_uring", devices, kib << 10, 64, seconds, true));
                }
            }
            Result x = median(fixed);
            Result y = median(plain);
            System.out.printf(Locale.ROOT, "  %d KiB: fixed %.0f IOPS, %.1f µs CPU/IO; plain %.0f IOPS, %.1f µs CPU/IO%n",
                    kib, x.iops(), medianBy(fixed, Result::cpuUsPerIo).cpuUsPerIo(), y.iops(),
                    medianBy(plain, Result::cpuUsPerIo).cpuUsPerIo());
        }
    }

    /**
     * Median over rounds of {@code a[r] / b[r]}: runs of one round are adjacent in time, so the ratio
     * cancels slow changes of the shared machine's disk and CPU that a ratio of medians would not.
     */
    private static double pairedRatio(List<Result> a, List<Result> b) {
        double[] r = new double[a.size()];
        for (int i = 0; i < r.length; i++) {
            r[i] = a.get(i).mibps() / b.get(i).mibps();
        }
        java.util.Arrays.sort(r);
        return r[r.length / 2];
    }

    /** The result with the median bandwidth (CPU figures come from that same run). */
    private static Result median(List<Result> rs) {
        List<Result> sorted = new ArrayList<>(rs);
        sorted.sort(java.util.Comparator.comparingDouble(Result::mibps));
        return sorted.get(sorted.size() / 2);
    }

    private static void topology(Path dir, double seconds, long sizeMiB, int rounds) throws Exception {
        List<IoDevice> devices = prepare(dir, 4, sizeMiB / 4);
        IoOptions options = new IoOptions(true, 64, 1);
        // Warm the JIT on both shapes before recording.
        topologyRun(true, devices, options, 64, Math.min(2, seconds));
        topologyRun(false, devices, options, 64, Math.min(2, seconds));
        System.out.println(rounds + " alternating rounds of " + seconds + " s, medians:");
        System.out.println();
        System.out.println("| batch (4 KiB reads over 4 devices) | topology | IOPS | CPU µs/IO | io_uring_enter calls/batch |");
        System.out.println("|---:|---|---:|---:|---:|");
        for (int batch : new int[] {16, 64, 256}) {
            List<Result> one = new ArrayList<>();
            List<Result> per = new ArrayList<>();
            for (int r = 0; r < rounds; r++) {
                if (r % 2 == 0) {
                    one.add(topologyRun(true, devices, options, batch, seconds));
                    per.add(topologyRun(false, devices, options, batch, seconds));
                } else {
                    per.add(topologyRun(false, devices, options, batch, seconds));
                    one.add(topologyRun(true, devices, options, batch, seconds));
                }
            }
            for (boolean shared : new boolean[] {true, false}) {
                Result m = medianBy(shared ? one : per, Result::cpuUsPerIo);
                System.out.printf(Locale.ROOT, "| %d | %s | %.0f | %.2f | %.2f |%n", batch,
                        shared ? "one ring, all devices" : "one ring per device", median(shared ? one : per).iops(),
                        m.cpuUsPerIo(), (double) m.syscalls() / (m.ios() / batch));
            }
        }
    }

    private static Result topologyRun(boolean oneRing, List<IoDevice> devices, IoOptions options, int batch,
            double seconds) throws IOException {
        if (oneRing) {
            try (IoUringBackend one = IoUringBackend.open(devices, options, IoUringConfig.defaults(options, 4))) {
                return loopBatches(List.of(one), List.of(devices), batch, 4 << 10, seconds);
            }
        }
        List<IoUringBackend> perDevice = new ArrayList<>();
        List<List<IoDevice>> single = new ArrayList<>();
        try {
            for (IoDevice d : devices) {
                List<IoDevice> one = List.of(new IoDevice(0, d.poolFile(), d.sizeBytes(), d.alignment()));
                single.add(one);
                perDevice.add(IoUringBackend.open(one, options, IoUringConfig.defaults(options, 1)));
            }
            return loopBatches(perDevice, single, batch, 4 << 10, seconds);
        } finally {
            for (IoUringBackend b : perDevice) {
                b.close();
            }
        }
    }

    private static void sharing(Path dir, double seconds, long sizeMiB, int rounds) throws Exception {
        List<IoDevice> devices = prepare(dir, 1, sizeMiB);
        IoOptions options = new IoOptions(true, 128, 1);
        sharingRun(devices, options, 32, 2, Math.min(2, seconds));
        System.out.println(rounds + " alternating rounds of " + seconds + " s, medians:");
        System.out.println();
        System.out.println("| threads × batch (4 KiB reads) | rings | IOPS | CPU µs/IO |");
        System.out.println("|---|---|---:|---:|");
        for (int batch : new int[] {8, 32}) {
            List<Result> shared = new ArrayList<>();
            List<Result> own = new ArrayList<>();
            for (int r = 0; r < rounds; r++) {
                for (int k = 0; k < 2; k++) {
                    if ((k + r) % 2 == 0) {
                        shared.add(sharingRun(devices, options, batch, 1, seconds));
                    } else {
                        own.add(sharingRun(devices, options, batch, 2, seconds));
                    }
                }
            }
            System.out.printf(Locale.ROOT, "| 2 × %d | one shared ring (lock) | %.0f | %.2f |%n", batch,
                    median(shared).iops(), medianBy(shared, Result::cpuUsPerIo).cpuUsPerIo());
            System.out.printf(Locale.ROOT, "| 2 × %d | one ring per thread | %.0f | %.2f |%n", batch,
                    median(own).iops(), medianBy(own, Result::cpuUsPerIo).cpuUsPerIo());
        }
    }

    private static Result sharingRun(List<IoDevice> devices, IoOptions options, int batch, int rings, double seconds)
            throws Exception {
        IoUringConfig config = IoUringConfig.defaults(options, 1).withMaxRings(rings);
        try (IoUringBackend backend = IoUringBackend.open(devices, options, config);
                ExecutorService pool = Executors.newFixedThreadPool(2)) {
            long cpu0 = OS.getProcessCpuTime();
            long t0 = System.nanoTime();
            List<Future<Long>> fs = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                int seed = t + 1;
                fs.add(pool.submit(() -> pipelined(backend, devices, 4 << 10, batch, 1, seconds, seed)));
            }
            long ios = 0;
            for (Future<Long> f : fs) {
                ios += f.get();
            }
            double secs = (System.nanoTime() - t0) / 1e9;
            return new Result(ios, ios * 4096, secs, (OS.getProcessCpuTime() - cpu0) / 1e9, 0);
        }
    }

    private static Result medianBy(List<Result> rs, java.util.function.ToDoubleFunction<Result> key) {
        List<Result> sorted = new ArrayList<>(rs);
        sorted.sort(java.util.Comparator.comparingDouble(key));
        return sorted.get(sorted.size() / 2);
    }

    // ------------------------------------------------------------------ Java backends

    private static Result runJava(String backendName, List<IoDevice> devices, int bs, int qd, double seconds,
            boolean fixedBuffers) throws Exception {
        IoOptions options = new IoOptions(true, qd, Math.min(qd, 256));
        IoBackend backend;
        if (backendName.equals("io_uring")) {
            backend = IoUringBackend.open(devices, options,
                    IoUringConfig.defaults(options, devices.size()).withFixedBuffers(fixedBuffers));
        } else {
            IoBackendProvider p = ServiceLoader.load(IoBackendProvider.class).stream().map(ServiceLoader.Provider::get)
                    .filter(x -> x.name().equals(backendName)).findFirst().orElseThrow();
            backend = p.open(devices, options);
        }
        try (backend) {
            int k = Math.min(qd, 8);
            long cpu0 = OS.getProcessCpuTime();
            long t0 = System.nanoTime();
            long ios = pipelined(backend, devices, bs, qd / k, k, seconds, 1);
            double secs = (System.nanoTime() - t0) / 1e9;
            return new Result(ios, ios * bs, secs, (OS.getProcessCpuTime() - cpu0) / 1e9, 0);
        }
    }

    /**
     * Keeps {@code k} batches of {@code perBatch} random reads in rotation on the calling thread for
     * {@code seconds}; returns the reads completed.
     */
    private static long pipelined(IoBackend backend, List<IoDevice> devices, int bs, int perBatch, int k,
            double seconds, long seed) {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment slab = slab(arena, (long) k * perBatch * bs);
            if (backend.dramSlabListener() != null) {
                backend.dramSlabListener().slabAllocated(0, slab);
            }
            IoBatch[] batches = new IoBatch[k];
            long rnd = seed * 0x9E3779B97F4A7C15L + 1;
            long blocks = devices.get(0).sizeBytes() / bs;
            for (int b = 0; b < k; b++) {
                batches[b] = backend.newBatch(perBatch);
                for (int i = 0; i < perBatch; i++) {
                    rnd = xorshift(rnd);
                    batches[b].addRead(0, Math.floorMod(rnd, blocks) * bs,
                            slab.asSlice(((long) b * perBatch + i) * bs, bs), i);
                }
                backend.submit(batches[b]);
            }
            long deadline = System.nanoTime() + (long) (seconds * 1e9);
            long ios = 0;
            MemorySegment[] bufs = new MemorySegment[perBatch];
            for (long round = 0; ; round++) {
                IoBatch batch = batches[(int) (round % k)];
                backend.await(batch);
                ios += perBatch;
                if (System.nanoTime() >= deadline) {
                    break;
                }
                for (int i = 0; i < perBatch; i++) {
                    bufs[i] = batch.buffer(i);
                }
                batch.clear();
                for (int i = 0; i < perBatch; i++) {
                    rnd = xorshift(rnd);
                    batch.addRead(0, Math.floorMod(rnd, blocks) * bs, bufs[i], i);
                }
                backend.submit(batch);
            }
            // Drain the others before the buffers go away.
            for (IoBatch b : batches) {
                backend.await(b);
            }
            if (backend.dramSlabListener() != null) {
                backend.dramSlabListener().slabFreed(0, slab);
            }
            return ios;
        }
    }

    /**
     * A read buffer of {@code bytes} as the DRAM tier allocates a slab; with huge pages, at least one
     * whole huge page (a default slab is 4 MiB), so that small points get them as fio's do.
     */
    private static MemorySegment slab(Arena arena, long bytes) {
        long mapped = HUGE_PAGES ? Math.max(bytes, 2L << 20) : bytes;
        return SlabMemory.allocate(arena, mapped, HUGE_PAGES).asSlice(0, bytes);
    }

    /** Batches over several backends (one per device group), each batch spread round-robin over devices. */
    private static Result loopBatches(List<IoUringBackend> backends, List<List<IoDevice>> deviceGroups, int batchSize,
            int bs, double seconds) {
        int totalDevices = deviceGroups.stream().mapToInt(List::size).sum();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = slab(arena, (long) batchSize * bs);
            IoBatch[] batches = new IoBatch[backends.size()];
            for (int b = 0; b < backends.size(); b++) {
                batches[b] = backends.get(b).newBatch(batchSize);
                backends.get(b).dramSlabListener().slabAllocated(0, buf);
            }
            long blocks = deviceGroups.get(0).get(0).sizeBytes() / bs;
            long rnd = 12345;
            long ios = 0;
            long calls0 = 0;
            for (IoUringBackend b : backends) {
                calls0 += b.stats().submitCalls() + b.stats().waitCalls();
            }
            long cpu0 = OS.getProcessCpuTime();
            long t0 = System.nanoTime();
            long deadline = t0 + (long) (seconds * 1e9);
            while (System.nanoTime() < deadline) {
                for (IoBatch b : batches) {
                    b.clear();
                }
                for (int i = 0; i < batchSize; i++) {
                    int device = i % totalDevices;
                    rnd = xorshift(rnd);
                    long off = Math.floorMod(rnd, blocks) * bs;
                    MemorySegment slice = buf.asSlice((long) i * bs, bs);
                    if (backends.size() == 1) {
                        batches[0].addRead(device, off, slice, i);
                    } else {
                        batches[device].addRead(0, off, slice, i);
                    }
                }
                for (int b = 0; b < batches.length; b++) {
                    backends.get(b).submit(batches[b]);
                }
                for (int b = 0; b < batches.length; b++) {
                    backends.get(b).await(batches[b]);
                }
                ios += batchSize;
            }
            double secs = (System.nanoTime() - t0) / 1e9;
            double cpu = (OS.getProcessCpuTime() - cpu0) / 1e9;
            long calls = -calls0;
            for (IoUringBackend b : backends) {
                calls += b.stats().submitCalls() + b.stats().waitCalls();
            }
            return new Result(ios, ios * bs, secs, cpu, calls);
        }
    }

    private static boolean isBlockDevice(Path p) {
        return p.startsWith("/dev/") && !Files.isDirectory(p);
    }

    private static long xorshift(long x) {
        x ^= x << 13;
        x ^= x >>> 7;
        x ^= x << 17;
        return x;
    }

    // ------------------------------------------------------------------ fio

    private static final Pattern IOPS = Pattern.compile("\"iops\" : ([0-9.]+)");
    private static final Pattern BW = Pattern.compile("\"bw_bytes\" : ([0-9]+)");
    private static final Pattern USR = Pattern.compile("\"usr_cpu\" : ([0-9.]+)");
    private static final Pattern SYS = Pattern.compile("\"sys_cpu\" : ([0-9.]+)");
    private static final Pattern RUNTIME = Pattern.compile("\"runtime\" : ([0-9]+)");

    /**
     * fio at depth {@code qd} as the physical reference: the better of two runs, fio's default
     * (one read refilled per completion) and runJava's burst shape (QD/K reads submitted, at least
     * as many reaped at a time, K = min(QD, 8)), both with registered files and buffers as the
     * backend runs. Either alone is not the limit: the default trails the batched shape at some sizes
     * and the batched one trails at others, and a ratio above 1 would then say the reference was low.
     */
    private static Result runFio(Path file, int kib, int qd, double seconds, long sizeMiB)
            throws IOException, InterruptedException {
        Result plain = runFio(file, kib, qd, seconds, sizeMiB, 0);
        Result batched = runFio(file, kib, qd, seconds, sizeMiB, qd / Math.min(qd, 8));
        return plain.mibps() >= batched.mibps() ? plain : batched;
    }

    private static Result runFio(Path file, int kib, int qd, double seconds, long sizeMiB, int perBatch)
            throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("fio", "--name=randread", "--filename=" + file, "--ioengine=io_uring",
                "--direct=1", "--rw=randread", "--bs=" + kib + "k", "--iodepth=" + qd, "--size=" + sizeMiB + "m",
                "--runtime=" + seconds, "--time_based", "--randrepeat=0", "--norandommap", "--output-format=json",
                "--fixedbufs", "--registerfiles"));
        if (HUGE_PAGES) {
            cmd.add("--iomem_align=2m"); // else most of a small buffer has no aligned huge page
        }
        if (perBatch > 0) {
            cmd.add("--iodepth_batch_submit=" + perBatch);
            cmd.add("--iodepth_batch_complete_min=" + perBatch);
        }
        // fio's buffers come from malloc: this glibc tunable backs them with transparent huge pages,
        // as SlabMemory backs the backend's slab (see docs/io-uring.md, "Slab memory"): like with like.
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(false);
        if (HUGE_PAGES) {
            pb.environment().put("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1");
        }
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException(String.join(" ", cmd) + " failed: " + out);
        }
        double iops = first(IOPS, out);
        double bw = first(BW, out);
        double runtimeS = first(RUNTIME, out) / 1000.0;
        double cpu = (first(USR, out) + first(SYS, out)) / 100.0 * runtimeS;
        long ios = Math.round(iops * runtimeS);
        return new Result(ios, Math.round(bw * runtimeS), runtimeS, cpu, 0);
    }

    private static double first(Pattern p, String s) {
        Matcher m = p.matcher(s);
        if (!m.find()) {
            throw new IllegalStateException("fio output has no " + p.pattern());
        }
        return Double.parseDouble(m.group(1));
    }

    // ------------------------------------------------------------------ files and output

    /** {@code n} pool files of {@code sizeMiB} each, written once with fio (so reads hit real extents). */
    private static List<IoDevice> prepare(Path dir, int n, long sizeMiB) throws IOException, InterruptedException {
        List<IoDevice> devices = new ArrayList<>();
        if (isBlockDevice(dir)) {
            for (int d = 0; d < n; d++) {
                devices.add(new IoDevice(d, dir, sizeMiB << 20, ALIGN));
            }
            return devices;
        }
        for (int d = 0; d < n; d++) {
            Path f = dir.resolve("bench-" + n + "-" + d + ".dat");
            long bytes = sizeMiB << 20;
            if (!Files.exists(f) || Files.size(f) != bytes) {
                Process p = new ProcessBuilder("fio", "--name=prep", "--filename=" + f, "--rw=write", "--bs=1m",
                        "--size=" + sizeMiB + "m", "--direct=1", "--ioengine=io_uring", "--iodepth=8",
                        "--refill_buffers").redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                        .start();
                if (p.waitFor() != 0) {
                    throw new IOException("fio could not write " + f);
                }
            }
            devices.add(new IoDevice(d, f, bytes, ALIGN));
        }
        return devices;
    }

}
