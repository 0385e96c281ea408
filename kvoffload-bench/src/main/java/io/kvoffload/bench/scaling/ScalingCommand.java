package io.kvoffload.bench.scaling;

import io.kvoffload.DeviceModelSpec;
import io.kvoffload.KvConfig;
import io.kvoffload.bench.ProgressBars;
import io.kvoffload.bench.TempDirs;
import io.kvoffload.bench.cli.ProgressOptions;
import io.kvoffload.bench.cli.ReportOptions;
import io.kvoffload.bench.report.CsvWriter;
import io.kvoffload.bench.report.MarkdownTable;
import io.kvoffload.bench.report.Plots;
import io.kvoffload.internal.io.DeviceModel;
import io.kvoffload.spi.IoBackend;
import io.kvoffload.spi.IoBackendProvider;
import io.kvoffload.spi.IoBatch;
import io.kvoffload.spi.IoDevice;
import io.kvoffload.spi.IoOptions;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import me.tongfei.progressbar.ProgressBar;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Multi-SSD scaling (Swarm paper, Fig. 18): aggregate read bandwidth of a decode-like workload
 * (batches of random 4–64 KiB reads spread evenly over the devices, several batches in flight)
 * on 1, 2, 4 and 8 devices.
 *
 * <p>On a machine with one disk every device is a directory on it behind a {@link DeviceModel}
 * whose per-device limits are scaled so that eight devices together stay within what the disk
 * delivers (measured at the start): the figures are <em>simulated</em> and labelled so in the CSV,
 * the plot and the summary. The same workload without the model on the same directories is
 * measured too, to show what one disk gives. When the directories lie on at least as many
 * distinct file systems as the largest device count, the command measures the real devices
 * without any model.
 */
@Command(name = "scaling", mixinStandardHelpOptions = true,
        description = "Multi-SSD scaling (Swarm Fig. 18): aggregate read bandwidth on 1, 2, 4, 8 devices. On one disk"
                + " each device is a directory behind a device model (figures labelled simulated); on several real"
                + " SSDs (--dirs on distinct file systems) the devices are measured without the model. Writes CSV,"
                + " PNG and markdown to --out.")
public final class ScalingCommand implements Callable<Integer> {
    static final int ALIGN = 4096;
    /** Real throughput is taken at 90% when it sets the host limits: the model must stay below the disk. */
    static final double HOST_HEADROOM = 0.9;

    @Option(names = "--dirs", split = ",", paramLabel = "DIR",
            description = "Device directories (comma-separated), at least the largest --devices count. Default:"
                    + " temporary directories under --work.")
    List<Path> dirs = new ArrayList<>();

    @Option(names = "--devices", split = ",", defaultValue = "1,2,4,8",
            description = "Device counts to measure (default: ${DEFAULT-VALUE}).")
    List<Integer> deviceCounts;

    @Option(names = "--profiles", split = ",", defaultValue = "auto",
            description = "Device models to measure: high-end, low-end, none (real devices, no model), or auto"
                    + " (high-end,low-end plus none as a reference when the directories share a disk; none alone"
                    + " when they lie on distinct file systems). Default: ${DEFAULT-VALUE}.")
    List<String> profiles;

    @Option(names = "--pool", defaultValue = "256MiB", description = "Pool file per device (default: ${DEFAULT-VALUE}).")
    String pool;

    @Option(names = "--seconds", defaultValue = "2.0", description = "Measured time per point (default: ${DEFAULT-VALUE}).")
    double seconds;

    @Mixin
    ReadMixOptions reads = new ReadMixOptions();

    @Mixin
    HostLimitOptions host = new HostLimitOptions();

    @Mixin
    ReportOptions report = new ReportOptions("kvoffload-bench/target/reports/scaling");

    @Option(names = "--seed", defaultValue = "18", description = "Random seed (default: ${DEFAULT-VALUE}).")
    long seed;

    @Mixin
    ProgressOptions progress = new ProgressOptions();

    private PrintStream console = System.out;
    private String writeLabel = "";

    /** One measured point. */
    record Point(String series, String profile, boolean simulated, int devices, double deviceBandwidth,
            double deviceIops, long requests, long bytes, double seconds, double p50BatchMs, double p99BatchMs,
            double ceilingBytesPerSecond, double modelBoundShare) {
        double bandwidth() {
            return bytes / seconds;
        }

        double iops() {
            return requests / seconds;
        }
    }

    /** What one run of the workload measured. */
    record Run(long requests, long bytes, double seconds, Histogram batchMicros) {}

    @Override
    public Integer call() throws Exception {
        validate();
        int maxDevices = deviceCounts.stream().mapToInt(Integer::intValue).max().orElseThrow();
        long poolBytes = KvConfig.parseSize("--pool", pool);
        if (poolBytes < 16L << 20 || poolBytes % ALIGN != 0) {
            throw new IllegalArgumentException("--pool = " + pool + " is out of range; allowed: at least 16MiB, a"
                    + " multiple of 4KiB");
        }
        Path tempRoot = null;
        List<Path> deviceDirs = new ArrayList<>(dirs);
        if (deviceDirs.isEmpty()) {
            Path base = report.work != null ? report.work : Path.of(System.getProperty("java.io.tmpdir"));
            Files.createDirectories(base);
            tempRoot = TempDirs.createUnder(base, "kvo-scaling-");
            deviceDirs.addAll(TempDirs.ssdDirectories(tempRoot, maxDevices));
        } else if (deviceDirs.size() < maxDevices) {
            throw new IllegalArgumentException("--dirs has " + deviceDirs.size() + " directories; allowed: at least the"
                    + " largest --devices count, " + maxDevices);
        }
        try {
            return measure(deviceDirs.subList(0, maxDevices), poolBytes);
        } finally {
            if (tempRoot != null) {
                TempDirs.deleteRecursively(tempRoot);
            }
        }
    }

    private void validate() {
        if (deviceCounts.isEmpty()) {
            throw new IllegalArgumentException("--devices is empty; allowed: counts 1..256");
        }
        for (int n : deviceCounts) {
            if (n < 1 || n > 256) {
                throw new IllegalArgumentException("--devices = " + n + " is out of range; allowed: 1..256");
            }
        }
        if (!(seconds > 0 && seconds <= 600)) {
            throw new IllegalArgumentException("--seconds = " + seconds + " is out of range; allowed: (0, 600]");
        }
        host.validate();
        reads.validate();
        for (String p : profiles) {
            if (!List.of("auto", "none", DeviceModelSpec.HIGH_END, DeviceModelSpec.LOW_END).contains(p)) {
                throw new IllegalArgumentException("--profiles lists '" + p + "'; allowed: auto, none, high-end, low-end");
            }
        }
    }

    private int measure(List<Path> deviceDirs, long poolBytes) throws IOException {
        int maxDevices = deviceDirs.size();
        int distinctDisks = distinctFileStores(deviceDirs);
        List<String> series = resolveProfiles(distinctDisks >= maxDevices && maxDevices > 1);
        boolean anySimulated = series.stream().anyMatch(s -> !s.equals("none"));
        IoBackendProvider provider = provider(report.backend);
        List<IoDevice> devices = new ArrayList<>();
        for (int i = 0; i < maxDevices; i++) {
            Path f = deviceDirs.get(i).resolve("kvo-scaling.pool");
            try (var ch = java.nio.channels.FileChannel.open(f, java.nio.file.StandardOpenOption.CREATE,
                    java.nio.file.StandardOpenOption.READ, java.nio.file.StandardOpenOption.WRITE)) {
                ch.truncate(poolBytes);
                if (ch.size() < poolBytes) {
                    ch.write(java.nio.ByteBuffer.allocate(1), poolBytes - 1);
                }
            }
            devices.add(new IoDevice(i, f, poolBytes, ALIGN));
        }
        IoOptions options = new IoOptions(true, reads.queueDepth(), 8);
        int totalPoints = 2 + series.size() * deviceCounts.size();
        long hostBw;
        long hostIo;
        String hostSource;
        double writeSeconds;
        List<Point> points = new ArrayList<>();
        try (ProgressBar bar = progress.bar("scaling", totalPoints, 250)) {
            extra(bar, "writing " + maxDevices + " × " + poolBytes / (1 << 20) + " MiB");
            String firstModel = series.stream().filter(x -> !x.equals("none")).findFirst().orElse(null);
            writeSeconds = writeAll(provider, devices, options, firstModel == null ? null
                    : DeviceModelSpec.profile(firstModel).withScaleDevices(maxDevices));
            writeLabel = firstModel == null ? "without a model" : "through the " + firstModel
                    + " model (default host limits, simulated)";
            ProgressBars.step(bar);
            if (host.hostBandwidth != null && host.hostIops != null) {
                hostBw = KvConfig.parseSize("--host-bandwidth", host.hostBandwidth);
                hostIo = host.hostIops;
                hostSource = "configured (--host-bandwidth, --host-iops)";
            } else {
                extra(bar, "measuring the disk (no model)");
                List<IoDevice> one = devices.subList(0, 1);
                Run small = runOnce(provider, one, options, null, host.calibrateSeconds, ALIGN, ALIGN);
                Run large = runOnce(provider, one, options, null, host.calibrateSeconds, 64 << 10, 64 << 10);
                hostIo = host.hostIops != null ? host.hostIops : (long) (small.requests() / small.seconds() * HOST_HEADROOM);
                hostBw = host.hostBandwidth != null ? KvConfig.parseSize("--host-bandwidth", host.hostBandwidth)
                        : (long) (large.bytes() / large.seconds() * HOST_HEADROOM);
                hostSource = String.format(Locale.ROOT, "measured here: %.0f IOPS at 4 KiB, %.1f MB/s at 64 KiB (%d"
                        + " in flight, %s); the model uses %.0f%% of that", small.requests() / small.seconds(),
                        large.bytes() / large.seconds() / 1e6, reads.queueDepth(), provider.name(), HOST_HEADROOM * 100);
            }
            ProgressBars.step(bar);
            for (String s : series) {
                DeviceModelSpec spec = s.equals("none") ? null
                        : DeviceModelSpec.profile(s).withScaleDevices(maxDevices).withHost(Math.max(hostBw, 1_000_000),
                                Math.max(hostIo, 100));
                for (int n : deviceCounts) {
                    extra(bar, label(s, anySimulated) + ", " + n + " device" + (n == 1 ? "" : "s"));
                    points.add(point(provider, devices.subList(0, n), options, s, spec, anySimulated));
                    ProgressBars.step(bar);
                }
            }
        }
        report(points, series, anySimulated, provider.name(), hostSource, hostBw, hostIo, distinctDisks, poolBytes,
                writeSeconds, devices.size());
        return 0;
    }

    private List<String> resolveProfiles(boolean realDevices) {
        List<String> result = new ArrayList<>();
        for (String p : profiles) {
            if (p.equals("auto")) {
                if (realDevices) {
                    result.add("none");
                } else {
                    result.addAll(List.of(DeviceModelSpec.HIGH_END, DeviceModelSpec.LOW_END, "none"));
                }
            } else {
                result.add(p);
            }
        }
        return result.stream().distinct().toList();
    }

    static String label(String series, boolean anySimulated) {
        if (series.equals("none")) {
            return anySimulated ? "real directories on one disk (no model)" : "real devices (no model)";
        }
        return series + " (simulated)";
    }

    private Point point(IoBackendProvider provider, List<IoDevice> devs, IoOptions options, String series,
            DeviceModelSpec spec, boolean anySimulated) throws IOException {
        int n = devs.size();
        try (IoBackend b = open(provider, devs, options, spec)) {
            run(b, Math.min(0.3, seconds / 4), reads.minBytes(), reads.maxBytes()); // warm-up
            DeviceModel.Stats before = b instanceof DeviceModel m ? m.stats() : null;
            Run r = run(b, seconds, reads.minBytes(), reads.maxBytes());
            double modelBound = 0;
            if (b instanceof DeviceModel m) {
                DeviceModel.Stats after = m.stats();
                long awaits = after.awaits() - before.awaits();
                modelBound = awaits == 0 ? 0 : (double) (after.modelBoundAwaits() - before.modelBoundAwaits()) / awaits;
            }
            double devBw = spec == null ? 0 : spec.deviceBandwidth(n);
            double devIops = spec == null ? 0 : spec.deviceIops(n);
            double ceiling = spec == null ? 0 : n * ceilingPerDevice(devBw, devIops, reads.minBytes(), reads.maxBytes());
            return new Point(label(series, anySimulated), series, spec != null, n, devBw, devIops, r.requests(),
                    r.bytes(), r.seconds(), r.batchMicros().getValueAtPercentile(50) / 1000.0,
                    r.batchMicros().getValueAtPercentile(99) / 1000.0, ceiling, modelBound);
        }
    }

    /**
     * What one simulated device can deliver for this workload: mean bytes per request over the
     * mean device time per request, {@code max(len / bandwidth, 1 / iops)}, sizes uniform over the
     * 4 KiB multiples in [min, max].
     */
    static double ceilingPerDevice(double bandwidth, double iops, int min, int max) {
        double bytes = 0;
        double time = 0;
        for (int len = min; len <= max; len += ALIGN) {
            bytes += len;
            time += Math.max(len / bandwidth, 1 / iops);
        }
        return bytes / time;
    }

    private Run runOnce(IoBackendProvider provider, List<IoDevice> devs, IoOptions options, DeviceModelSpec spec,
            double secs, int min, int max) throws IOException {
        try (IoBackend b = open(provider, devs, options, spec)) {
            run(b, Math.min(0.2, secs / 4), min, max);
            return run(b, secs, min, max);
        }
    }

    /**
     * The decode-like read workload: {@link ReadMixOptions#inflight} batches of {@link ReadMixOptions#batchSize} random reads
     * of 4 KiB multiples in [min, max], each batch spread over the devices by least-loaded bucket
     * (bytes, as Swarm's scheduler balances), refilled and resubmitted as soon as it completes.
     * Every 4 KiB block read is checked against the pattern {@link #writeAll} wrote.
     */
    private Run run(IoBackend b, double secs, int min, int max) {
        int n = b.devices().size();
        long poolBytes = b.devices().get(0).sizeBytes();
        SplittableRandom rnd = new SplittableRandom(seed ^ n);
        Histogram hist = new Histogram(3_600_000_000L, 3);
        long requests = 0;
        long bytes = 0;
        try (Arena arena = Arena.ofShared()) {
            IoBatch[] batches = new IoBatch[reads.inflight];
            MemorySegment[] buffers = new MemorySegment[reads.inflight];
            long[] submitted = new long[reads.inflight];
            long[] load = new long[n];
            for (int k = 0; k < reads.inflight; k++) {
                batches[k] = b.newBatch(reads.batchSize);
                buffers[k] = arena.allocate((long) reads.batchSize * max, ALIGN);
            }
            long t0 = System.nanoTime();
            long end = t0 + (long) (secs * 1e9);
            for (int k = 0; k < reads.inflight; k++) {
                fill(batches[k], buffers[k], rnd, load, poolBytes, min, max);
                submitted[k] = System.nanoTime();
                b.submit(batches[k]);
            }
            int k = 0;
            int live = reads.inflight;
            while (live > 0) {
                IoBatch batch = batches[k];
                if (batch != null) {
                    b.await(batch);
                    long now = System.nanoTime();
                    hist.recordValue(Math.max(1, (now - submitted[k]) / 1000));
                    for (int i = 0; i < batch.size(); i++) {
                        verify(batch, i);
                        bytes += batch.length(i);
                    }
                    requests += batch.size();
                    if (now < end) {
                        fill(batch, buffers[k], rnd, load, poolBytes, min, max);
                        submitted[k] = System.nanoTime();
                        b.submit(batch);
                    } else {
                        batches[k] = null;
                        live--;
                    }
                }
                k = k + 1 == reads.inflight ? 0 : k + 1;
            }
            return new Run(requests, bytes, (System.nanoTime() - t0) / 1e9, hist);
        }
    }

    private void fill(IoBatch batch, MemorySegment buffer, SplittableRandom rnd, long[] load, long poolBytes, int min,
            int max) {
        batch.clear();
        java.util.Arrays.fill(load, 0);
        int blocks = (max - min) / ALIGN + 1;
        for (int i = 0; i < reads.batchSize; i++) {
            int len = min + rnd.nextInt(blocks) * ALIGN;
            int d = 0;
            for (int j = 1; j < load.length; j++) {
                if (load[j] < load[d]) {
                    d = j;
                }
            }
            load[d] += len;
            long offset = rnd.nextLong((poolBytes - len) / ALIGN + 1) * ALIGN;
            batch.addRead(d, offset, buffer, (long) i * max, len, i);
        }
    }

    /** The first long of every 4 KiB block of the pools: device and block number. */
    static long stamp(int device, long offset) {
        return ((long) device << 48) | (offset / ALIGN) | 0x5A00_0000_0000_0000L;
    }

    private static void verify(IoBatch batch, int i) {
        MemorySegment seg = batch.segment(i);
        long base = batch.bufferOffset(i);
        int d = batch.device(i);
        long off = batch.offset(i);
        for (long p = 0; p < batch.length(i); p += ALIGN) {
            long got = seg.get(ValueLayout.JAVA_LONG, base + p);
            if (got != stamp(d, off + p)) {
                throw new IllegalStateException("device " + d + " offset " + (off + p) + " read " + Long.toHexString(got)
                        + ", wrote " + Long.toHexString(stamp(d, off + p)) + ": the data came back wrong");
            }
        }
    }

    /** The real backend over {@code devs}, behind a device model when {@code spec} is not null. */
    private static IoBackend open(IoBackendProvider provider, List<IoDevice> devs, IoOptions options,
            DeviceModelSpec spec) throws IOException {
        IoBackend real = provider.open(devs, options);
        if (spec == null) {
            return real;
        }
        try {
            return DeviceModel.wrap(real, spec);
        } catch (RuntimeException e) {
            real.close();
            throw e;
        }
    }

    /**
     * Writes every pool completely (1 MiB requests, all devices in parallel), through the device
     * model when {@code spec} is not null; returns seconds.
     */
    private static double writeAll(IoBackendProvider provider, List<IoDevice> devs, IoOptions options,
            DeviceModelSpec spec) throws IOException {
        int chunk = 1 << 20;
        int perBatch = 4;
        long poolBytes = devs.get(0).sizeBytes();
        long t0 = System.nanoTime();
        try (IoBackend b = open(provider, devs, options, spec); Arena arena = Arena.ofShared()) {
            int n = devs.size();
            MemorySegment buf = arena.allocate((long) n * perBatch * chunk, ALIGN);
            IoBatch batch = b.newBatch(n * perBatch);
            for (long off = 0; off < poolBytes; off += (long) perBatch * chunk) {
                batch.clear();
                for (int d = 0; d < n; d++) {
                    for (int c = 0; c < perBatch && off + (long) c * chunk < poolBytes; c++) {
                        long at = off + (long) c * chunk;
                        int len = (int) Math.min(chunk, poolBytes - at);
                        long bufOff = ((long) d * perBatch + c) * chunk;
                        for (long p = 0; p < len; p += 8) {
                            long v = p % ALIGN == 0 ? stamp(d, at + p) : (at + p) * 0x9E3779B97F4A7C15L;
                            buf.set(ValueLayout.JAVA_LONG, bufOff + p, v);
                        }
                        batch.addWrite(d, at, buf.asSlice(bufOff, len), 0);
                    }
                }
                b.execute(batch);
            }
            for (int d = 0; d < n; d++) {
                b.sync(d);
            }
        }
        return (System.nanoTime() - t0) / 1e9;
    }

    private static IoBackendProvider provider(String name) {
        List<IoBackendProvider> all = new ArrayList<>();
        ServiceLoader.load(IoBackendProvider.class).forEach(all::add);
        all.sort(Comparator.comparingInt(IoBackendProvider::priority).reversed());
        for (IoBackendProvider p : all) {
            if (name.equals("auto") ? p.probe().available() : p.name().equals(name)) {
                if (!p.probe().available()) {
                    throw new IllegalArgumentException("--backend = '" + name + "' is not available here: "
                            + p.probe().reason());
                }
                return p;
            }
        }
        throw new IllegalArgumentException("--backend = '" + name + "' is unknown; allowed: auto or one of "
                + all.stream().map(IoBackendProvider::name).toList());
    }

    private static int distinctFileStores(List<Path> dirs) {
        Set<String> stores = new HashSet<>();
        for (Path d : dirs) {
            try {
                stores.add(Files.getFileStore(d).name());
            } catch (IOException e) {
                stores.add(d.toString());
            }
        }
        return stores.size();
    }

    private void report(List<Point> points, List<String> series, boolean anySimulated, String backendName,
            String hostSource, long hostBw, long hostIo, int distinctDisks, long poolBytes, double writeSeconds,
            int maxDevices) throws IOException {
        Files.createDirectories(report.out);
        Path csv = report.out.resolve("scaling.csv");
        try (CsvWriter w = new CsvWriter(csv, "series", "profile", "simulated", "devices", "device_bandwidth_MBps",
                "device_iops", "requests", "bytes", "seconds", "bandwidth_GBps", "iops", "batch_p50_ms",
                "batch_p99_ms", "model_ceiling_GBps", "efficiency", "model_bound_share")) {
            for (Point p : points) {
                w.row(p.series(), p.profile(), p.simulated(), p.devices(), round(p.deviceBandwidth() / 1e6, 2),
                        Math.round(p.deviceIops()), p.requests(), p.bytes(), round(p.seconds(), 3),
                        round(p.bandwidth() / 1e9, 4), Math.round(p.iops()), round(p.p50BatchMs(), 3),
                        round(p.p99BatchMs(), 3), round(p.ceilingBytesPerSecond() / 1e9, 4),
                        p.simulated() ? round(p.bandwidth() / p.ceilingBytesPerSecond(), 3) : "",
                        p.simulated() ? round(p.modelBoundShare(), 3) : "");
            }
        }
        List<Plots.Series> lines = new ArrayList<>();
        for (String s : series) {
            List<Point> ps = points.stream().filter(p -> p.profile().equals(s)).toList();
            double[] x = ps.stream().mapToDouble(Point::devices).toArray();
            lines.add(new Plots.Series(ps.get(0).series(), x, ps.stream().mapToDouble(p -> p.bandwidth() / 1e9).toArray()));
            if (!s.equals("none")) {
                lines.add(new Plots.Series(s + " model limit (simulated)", x,
                        ps.stream().mapToDouble(p -> p.ceilingBytesPerSecond() / 1e9).toArray(), true));
            }
        }
        String title = anySimulated ? "Multi-SSD scaling (SIMULATED: directories on one disk behind a device model)"
                : "Multi-SSD scaling (real devices)";
        Path png = Plots.line(report.out.resolve("scaling.png"), title, "SSD count", "aggregate read bandwidth (GB/s)", lines,
                new Plots.LineOptions(false, true, false));

        MarkdownTable table = new MarkdownTable("series", "SSDs", "per-device limit", "GB/s", "kIOPS",
                "batch p50 / p99 ms", "model limit GB/s", "of limit", "model-bound batches", "speed-up vs 1")
                .alignRight(1, 3, 4, 5, 6, 7, 8, 9);
        for (Point p : points) {
            Point first = points.stream().filter(q -> q.profile().equals(p.profile())).findFirst().orElseThrow();
            double speedup = p.bandwidth() / first.bandwidth() * first.devices();
            table.row(p.series(), p.devices(), p.simulated() ? String.format(Locale.ROOT, "%.0f MB/s, %.1fk IOPS",
                    p.deviceBandwidth() / 1e6, p.deviceIops() / 1e3) : "-", fmt(p.bandwidth() / 1e9, 3),
                    fmt(p.iops() / 1e3, 1), fmt(p.p50BatchMs(), 2) + " / " + fmt(p.p99BatchMs(), 2),
                    p.simulated() ? fmt(p.ceilingBytesPerSecond() / 1e9, 3) : "-",
                    p.simulated() ? fmt(100 * p.bandwidth() / p.ceilingBytesPerSecond(), 0) + "%" : "-",
                    p.simulated() ? fmt(100 * p.modelBoundShare(), 0) + "%" : "-", fmt(speedup, 2) + "x");
        }
        StringBuilder md = new StringBuilder();
        md.append("# Multi-SSD scaling").append(anySimulated ? " (simulated)" : " (real devices)").append("\n\n");
        if (anySimulated) {
            md.append("**Simulated figures.** The ").append(maxDevices).append(" devices are directories on ")
                    .append(distinctDisks == 1 ? "one disk" : distinctDisks + " file systems")
                    .append("; every read really happens on them, through a device model that gives each device its"
                            + " own bandwidth, IOPS, latency floor and queue (`io.kvoffload.internal.io.DeviceModel`)."
                            + " The profiles (Swarm §6: Samsung PM9A3 high-end, Intel Optane 900P low-end) are scaled"
                            + " by one factor so that ").append(maxDevices)
                    .append(" devices together stay within the disk. Rows without a model are real.\n\n");
        }
        md.append("- Command: `").append(commandLine()).append("`\n");
        md.append("- Date: ").append(LocalDateTime.now().format(DateTimeFormatter.ISO_LOCAL_DATE_TIME)).append('\n');
        md.append("- Backend: ").append(backendName).append("; queue depth ").append(reads.queueDepth())
                .append(" (").append(reads.inflight).append(" batches of ").append(reads.batchSize).append(" reads, ")
                .append(reads.minKib).append("-").append(reads.maxKib).append(" KiB, spread by least-loaded device)\n");
        md.append("- Pools: ").append(poolBytes >> 20).append(" MiB per device, written ").append(writeLabel)
                .append(" in ").append(fmt(writeSeconds, 1)).append(" s; every 4 KiB block read was verified\n");
        if (anySimulated) {
            md.append("- Host limits for scaling: ").append(hostSource).append(" → ")
                    .append(fmt(hostBw / 1e6, 0)).append(" MB/s, ").append(hostIo).append(" IOPS\n");
            for (String s : series) {
                if (!s.equals("none")) {
                    DeviceModelSpec spec = DeviceModelSpec.profile(s).withScaleDevices(maxDevices)
                            .withHost(Math.max(hostBw, 1_000_000), Math.max(hostIo, 100));
                    md.append("- ").append(s).append(": ").append(spec.describe(1)).append('\n');
                }
            }
        }
        md.append('\n').append(table.render()).append('\n');
        md.append("\"model limit\" is what the simulated devices allow for this request-size mix; \"model-bound"
                + " batches\" is the share of batches whose completion the model (not the real disk) set: near 100%"
                + " means the figure is the model's, lower means the real disk was the bottleneck too.\n\n");
        md.append("![scaling](").append(png.getFileName()).append(")\n\nData: [").append(csv.getFileName())
                .append("](").append(csv.getFileName()).append(")\n");
        Files.writeString(report.out.resolve("summary.md"), md.toString());
        console.println(md);
        console.println("wrote " + csv + ", " + png + ", " + report.out.resolve("summary.md"));
    }

    private String commandLine() {
        StringBuilder sb = new StringBuilder("./kvo bench scaling");
        if (!dirs.isEmpty()) {
            sb.append(" --dirs ").append(String.join(",", dirs.stream().map(Path::toString).toList()));
        }
        sb.append(" --devices ").append(String.join(",", deviceCounts.stream().map(String::valueOf).toList()));
        sb.append(" --profiles ").append(String.join(",", profiles));
        sb.append(" --pool ").append(pool).append(" --seconds ").append(seconds).append(" --batch ").append(reads.batchSize)
                .append(" --inflight ").append(reads.inflight);
        if (!report.backend.equals("auto")) {
            sb.append(" --backend ").append(report.backend);
        }
        return sb.toString();
    }

    static double round(double v, int decimals) {
        double f = Math.pow(10, decimals);
        return Math.round(v * f) / f;
    }

    static String fmt(double v, int decimals) {
        return String.format(Locale.ROOT, "%." + decimals + "f", v);
    }

    private static void extra(ProgressBar bar, String message) {
        if (bar != null) {
            bar.setExtraMessage(message);
        }
    }

    /** For tests: where the summary is printed. */
    void console(PrintStream out) {
        this.console = out;
    }
}
