package io.kvoffload.bench.swarm;

import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.strategy.swarm.ClusterOptions;
import io.kvoffload.DType;
import io.kvoffload.DecodeOptions;
import io.kvoffload.DecodeStats;
import io.kvoffload.LatencyHistogram;
import io.kvoffload.KvConfig;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvStats;
import io.kvoffload.KvView;
import io.kvoffload.bench.ProgressBars;
import io.kvoffload.bench.TempDirs;
import io.kvoffload.bench.cli.DecodeBudgetOptions;
import io.kvoffload.bench.cli.FioRoundsOptions;
import io.kvoffload.bench.cli.ProgressOptions;
import io.kvoffload.bench.cli.ScratchDeviceOptions;
import io.kvoffload.bench.cli.WorkloadOptions;
import io.kvoffload.bench.fio.Fio;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import me.tongfei.progressbar.ProgressBar;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Swarm's online phase through the real I/O path: the scheduler's ablations (paper Fig. 14), the
 * cache policies at several budgets (Fig. 15), and the decode fetch's effective bandwidth against
 * fio reading the same pool files at the same request sizes and depth.
 */
@Command(name = "swarm-online", mixinStandardHelpOptions = true,
        description = "Swarm online phase through real I/O: scheduling ablations (Fig. 14), cache policies"
                + " (Fig. 15), decode fetch bandwidth as a ratio of fio's.")
public final class SwarmOnlineBench implements Callable<Integer> {
    @Mixin
    WorkloadOptions size = new WorkloadOptions(65536, 2, 17);

    @Mixin
    DecodeBudgetOptions budget = new DecodeBudgetOptions(48, 0.1);

    @Option(names = "--cache-budgets", split = ",", defaultValue = "0.02,0.05,0.1,0.2",
            description = "Hot-cluster cache sizes as shares of a layer's KV (default: ${DEFAULT-VALUE}).")
    double[] cacheBudgets;

    @Mixin
    ScratchDeviceOptions store = new ScratchDeviceOptions();

    @Mixin
    FioRoundsOptions paired = new FioRoundsOptions(5);

    @Option(names = "--device-model", defaultValue = "none", description = "Simulated SSDs for the ablations and"
            + " cache runs (none, high-end, low-end; see docs/configuration.md): each directory gets its own"
            + " bandwidth, IOPS and queue, so an unbalanced schedule costs time as on real SSDs (default: ${DEFAULT-VALUE}).")
    String deviceModel;

    @Option(names = "--in-flight", defaultValue = "2", description = "Layer fetches kept in flight in the bandwidth"
            + " run: 2 is layer l+1 fetched while layer l computes; more needs queries predicted further ahead"
            + " (default: ${DEFAULT-VALUE}).")
    int inFlight;

    /** Parts of the report. */
    enum Section { ABLATIONS, CACHES, BANDWIDTH }

    @Option(names = "--sections", split = ",", defaultValue = "ABLATIONS,CACHES,BANDWIDTH",
            description = "Parts to run, any of ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
    java.util.EnumSet<Section> sections;

    @Mixin
    ProgressOptions progress = new ProgressOptions();

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    static final int QUERY_HEADS = 32;
    static final int KV_HEADS = 8;
    static final int HEAD_DIM = 128;

    private KvShape shape;
    private SyntheticWorkload workload;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        if (inFlight < 1 || inFlight > size.layers) {
            throw new IllegalArgumentException("--in-flight = " + inFlight + " is out of range; allowed: 1..--layers ("
                    + size.layers + "): a decoder fetches one step of a layer at a time");
        }
        shape = new KvShape(size.layers, QUERY_HEADS, KV_HEADS, HEAD_DIM, DType.BF16);
        workload = new SyntheticWorkload(WorkloadSpec.builder(shape, size.tokens).seed(size.seed).build());
        Path root = store.scratch("kvo-swarm-online");
        List<Path> dirs = store.ssdDirectories(root);
        long layerBytes = (long) size.tokens * shape.entryBytes();
        KvConfig.Builder builder = store.config(dirs, layerBytes * size.layers).dramBudgetBytes(Math.max(1L << 30, layerBytes * size.layers))
                .queueDepth(paired.queueDepth);
        if (!deviceModel.equals("none")) {
            builder.deviceModel(deviceModel);
        }
        KvConfig cfg = builder.build();
        int modes = DecodeOptions.Scheduling.values().length;
        long work = 2 + (sections.contains(Section.ABLATIONS) ? modes : 0)
                + (sections.contains(Section.CACHES) ? 2L * cacheBudgets.length : 0)
                + (deviceModel.equals("none") && sections.contains(Section.BANDWIDTH) ? 2L * (paired.rounds + 1) : 0);
        try (KvEngine engine = KvEngine.open(cfg);
                ProgressBar bar = progress.bar("swarm-online", work, 500)) {
            store(engine);
            ProgressBars.step(bar);
            out.printf("# Swarm online phase through real I/O%n%n%d layers × %,d tokens of a Llama-3-8B-shaped layer"
                    + " (%d query heads, %d KV heads × %d, BF16, %d B entries) on %d directories, backend %s;"
                    + " budget %.0f%% of tokens (sinks 4 and window 256 included), %d steps per setting;"
                    + " stored in %.1f s, clustered (64 profiled queries per layer) in %.1f s.%n%n", size.layers, size.tokens, QUERY_HEADS, KV_HEADS, HEAD_DIM,
                    shape.entryBytes(), store.devices, engine.stats().ioBackend(), budget.sparsity * 100, budget.steps,
                    storeNanos / 1e9, clusterNanos / 1e9);
            if (sections.contains(Section.ABLATIONS)) {
                ablations(engine, out, bar);
            }
            if (sections.contains(Section.CACHES)) {
                caches(engine, out, bar, layerBytes);
            }
            if (sections.contains(Section.BANDWIDTH)) {
                if (deviceModel.equals("none")) {
                    bandwidth(engine, out, bar, dirs);
                } else {
                    out.printf("(Bandwidth against fio skipped: the devices are simulated.)%n");
                }
            }
        } finally {
            TempDirs.deleteRecursively(root);
        }
        out.flush();
        return 0;
    }

    private long storeNanos;
    private long clusterNanos;

    private void store(KvEngine engine) {
        try (KvSequence s = engine.createSequence("bench", shape); Arena a = Arena.ofConfined()) {
            s.appendTokens(new int[size.tokens]);
            MemorySegment k = a.allocate((long) size.tokens * shape.halfEntryBytes());
            MemorySegment v = a.allocate((long) size.tokens * shape.halfEntryBytes());
            for (int l = 0; l < size.layers; l++) {
                long t0 = System.nanoTime();
                workload.writeKv(l, 0, size.tokens, shape.dtype(), k, v);
                s.appendKv(l, k, v);
                long t1 = System.nanoTime();
                storeNanos += t1 - t0;
                List<float[]> profile = new ArrayList<>();
                for (int q = 0; q < 64; q++) {
                    profile.add(workload.query(l, 10_000 + q));
                }
                Swarm.clusterLayerFromQueries(s, l, profile, ClusterOptions.defaults());
                clusterNanos += System.nanoTime() - t1;
            }
            s.commit();
        }
    }

    /** One setting: every layer of every step fetched alone (prefetch, then await), so I/O time is per fetch. */
    private record Run(DecodeStats stats, long[] deviceBytes) {}

    private Run run(KvEngine engine, DecodeOptions o) {
        long[] before = deviceBytes(engine.stats());
        try (KvSequence s = engine.openSequence("bench"); KvDecoder d = s.decoder(o)) {
            warmUp(d);
            DecodeStats warm = d.stats();
            before = deviceBytes(engine.stats());
            for (int step = 0; step < budget.steps; step++) {
                for (int l = 0; l < size.layers; l++) {
                    d.prefetch(l, workload.query(l, step)).await().close();
                }
            }
            long[] after = deviceBytes(engine.stats());
            for (int i = 0; i < after.length; i++) {
                after[i] -= before[i];
            }
            return new Run(d.stats().since(warm), after);
        }
    }

    /**
     * Steps left out of every measurement: the first fetch of a layer loads its window and medoid
     * index, and the first settings would otherwise also pay for the JIT compiling the fetch path.
     */
    private void warmUp(KvDecoder d) {
        for (int step = 0; step < Math.max(4, budget.steps / 4); step++) {
            for (int l = 0; l < size.layers; l++) {
                d.prefetch(l, workload.query(l, budget.steps + step)).await().close();
            }
        }
    }

    private static long[] deviceBytes(KvStats s) {
        return s.devices().stream().mapToLong(KvStats.Device::bytesRead).toArray();
    }

    private void ablations(KvEngine engine, PrintWriter out, ProgressBar bar) {
        out.printf("## Scheduling ablations (paper Fig. 14), no cache%s%n%n",
                deviceModel.equals("none") ? "" : " — SIMULATED devices (" + deviceModel + ")");
        out.println("| scheduling | MiB read / fetch | reads / fetch | entries read / fetch | fetch time, p50"
                + " ms | p99 ms | p99.9 ms | of which select+schedule, mean ms | select p99 ms | I/O p50 ms | I/O p99 ms"
                + " | busiest device / mean |");
        out.println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        double swarmMib = 0;
        for (DecodeOptions.Scheduling m : DecodeOptions.Scheduling.values()) {
            Run r = run(engine, DecodeOptions.builder().strategy(Swarm.defaults()).sparsity(budget.sparsity).cacheBytes(0).scheduling(m).build());
            long fetches = r.stats().steps();
            double mib = r.stats().bytesRead() / (double) fetches / (1 << 20);
            if (m == DecodeOptions.Scheduling.BALANCED) {
                swarmMib = mib;
            }
            long max = Arrays.stream(r.deviceBytes()).max().orElse(0);
            double mean = Arrays.stream(r.deviceBytes()).average().orElse(1);
            LatencyHistogram fetch = r.stats().fetchLatency();
            LatencyHistogram io = r.stats().ioLatency();
            out.printf("| %s | %.2f | %.0f | %.0f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |%n", m, mib,
                    r.stats().readRequests() / (double) fetches, r.stats().tokensFetched() / (double) fetches,
                    fetch.p50Nanos() / 1e6, fetch.p99Nanos() / 1e6, fetch.p999Nanos() / 1e6,
                    r.stats().selectNanos() / 1e6 / fetches, r.stats().selectLatency().p99Nanos() / 1e6,
                    io.p50Nanos() / 1e6, io.p99Nanos() / 1e6, max / mean);
            ProgressBars.step(bar);
        }
        out.printf("%nSwarm reads %.2f MiB per layer fetch.%n%n", swarmMib);
    }

    private void caches(KvEngine engine, PrintWriter out, ProgressBar bar, long layerBytes) {
        out.printf("## Hot-cluster cache (paper Fig. 15): cost-effectiveness (Eq. 6) vs LRU%s%n%n",
                deviceModel.equals("none") ? "" : " — SIMULATED devices (" + deviceModel + ")");
        out.println("| cache budget (share of a layer) | policy | cluster hit rate | rows from cache | MiB read / fetch"
                + " | fetch p50 ms | p99 ms | p99.9 ms |");
        out.println("|---:|---|---:|---:|---:|---:|---:|---:|");
        for (double b : cacheBudgets) {
            for (Swarm.CachePolicy p : Swarm.CachePolicy.values()) {
                long bytes = (long) (b * layerBytes) * size.layers;
                Run r = run(engine, DecodeOptions.builder().sparsity(budget.sparsity).cacheBytes(bytes).strategy(Swarm.builder().cachePolicy(p).build()).build());
                DecodeStats s = r.stats();
                long rows = s.tokensFetched() + s.tokensCached() + s.tokensWindow();
                out.printf("| %.0f%% | %s | %.1f%% | %.1f%% | %.2f | %.2f | %.2f | %.2f |%n", b * 100, p,
                        100 * s.cacheHitRate(), 100.0 * s.tokensCached() / rows,
                        s.bytesRead() / (double) s.steps() / (1 << 20), s.fetchLatency().p50Nanos() / 1e6,
                        s.fetchLatency().p99Nanos() / 1e6, s.fetchLatency().p999Nanos() / 1e6);
                ProgressBars.step(bar);
            }
        }
        out.println();
    }

    /**
     * Decode fetches pipelined as an engine runs them (layer l+1 in flight while layer l is
     * consumed), against fio reading the same pool files with the decode's request-size mix and
     * its mean number of requests in flight.
     */
    private void bandwidth(KvEngine engine, PrintWriter out, ProgressBar bar, List<Path> dirs)
            throws IOException, InterruptedException {
        DecodeOptions o = DecodeOptions.builder().strategy(Swarm.defaults()).sparsity(budget.sparsity).cacheBytes(0).pipelineDepth(inFlight + 1).build();
        List<Double> decode = new ArrayList<>();
        List<Double> fio = new ArrayList<>();
        List<Double> wallMs = new ArrayList<>();
        List<Double> selectMs = new ArrayList<>();
        List<Double> busyShare = new ArrayList<>();
        List<Double> cpuPerMib = new ArrayList<>();
        String bssplit = null;
        int depth = 0;
        double meanKib = 0;
        long fileSize = Fio.poolFileSize(engine.stats());
        // Round 0 warms both sides up (first touch of the pool files after the other runs, fio's own
        // start-up) and is not reported; rounds 1..rounds are paired.
        for (int round = 0; round <= paired.rounds; round++) {
            try (KvSequence s = engine.openSequence("bench"); KvDecoder d = s.decoder(o)) {
                warmUp(d);
                DecodeStats warm = d.stats();
                var threads = java.lang.management.ManagementFactory.getThreadMXBean();
                long cpu0 = threads.getCurrentThreadCpuTime();
                long t = System.nanoTime();
                // Fetch i is (step i / layers, layer i % layers); two stay in flight while the oldest is consumed.
                int total = budget.steps * size.layers;
                java.util.ArrayDeque<KvView> pending = new java.util.ArrayDeque<>();
                int issued = 0;
                for (int done = 0; done < total; done++) {
                    while (pending.size() < inFlight && issued < total) {
                        int l = issued % size.layers;
                        pending.add(d.prefetch(l, workload.query(l, issued / size.layers)));
                        issued++;
                    }
                    pending.poll().await().close();
                }
                double seconds = (System.nanoTime() - t) / 1e9;
                double busy = (threads.getCurrentThreadCpuTime() - cpu0) / 1e9 / seconds;
                DecodeStats st = d.stats().since(warm);
                if (round > 0) {
                    decode.add(st.bytesRead() / seconds / (1 << 20));
                    wallMs.add(seconds * 1e3 / st.steps());
                    selectMs.add(st.selectNanos() / 1e6 / st.steps());
                    busyShare.add(busy);
                    // The figure of merit on a shared machine: CPU the decode thread spends per MiB fetched.
                    cpuPerMib.add(busy * seconds * 1e3 / (st.bytesRead() / (double) (1 << 20)));
                }
                if (bssplit == null) {
                    bssplit = bssplit(st);
                    // inFlight layer fetches, each a batch of this many reads, as deep as the rings allow.
                    depth = Fio.depth((double) inFlight * st.readRequests() / st.steps(), engine.config().queueDepth(),
                            store.devices);
                    meanKib = st.bytesRead() / (double) st.readRequests() / 1024;
                }
            }
            ProgressBars.step(bar);
            double f = runFio(dirs, fileSize, bssplit, depth);
            if (round > 0) {
                fio.add(f);
            }
            ProgressBars.step(bar);
        }
        double dm = median(decode);
        double fm = median(fio);
        out.printf("## Decode fetch bandwidth against fio%n%n");
        out.printf("Decode: %d steps × %d layers, %d layer fetches always in flight, no cache; fio: randread, io_uring,"
                + " O_DIRECT, registered files and buffers on huge pages, best of two submit batchings, iodepth %d (and the"
                + " devices' request queue, where smaller), bssplit %s (the decode's request-size mix, mean %.1f KiB), the same %d"
                + " pool files (first %d MiB of each), %d s per run; %d paired rounds after one unreported"
                + " warm-up round.%n%n", budget.steps, size.layers, inFlight, depth,
                bssplit, meanKib, dirs.size(), fileSize >> 20, paired.fioSeconds, paired.rounds);
        out.println("| round | decode MiB/s | fio MiB/s | decode / fio |");
        out.println("|---:|---:|---:|---:|");
        List<Double> ratios = new ArrayList<>();
        for (int i = 0; i < decode.size(); i++) {
            ratios.add(decode.get(i) / fio.get(i));
            out.printf("| %d | %.0f | %.0f | %.2f |%n", i + 1, decode.get(i), fio.get(i), ratios.get(i));
        }
        out.printf("| median | %.0f | %.0f | %.2f |%n%n", dm, fm, dm / fm);
        out.printf("Median of the per-round ratios: %.2f. Per fetch (medians over rounds): %.2f ms of wall time,"
                + " of which %.2f ms selecting and scheduling on the calling thread; that thread was on a CPU"
                + " %.0f%% of the time (user + kernel, io_uring work included), %.3f ms of CPU per MiB fetched"
                + " (rounds: %s).%n%n", median(ratios),
                median(wallMs), median(selectMs), 100 * median(busyShare), median(cpuPerMib), fmt(cpuPerMib));
    }

    static String bssplit(DecodeStats st) {
        return Fio.bssplit(st);
    }

    private double runFio(List<Path> dirs, long fileSize, String bssplit, int depth)
            throws IOException, InterruptedException {
        return Fio.randRead(dirs, fileSize, bssplit, depth, paired.fioSeconds);
    }

    private static String fmt(List<Double> xs) {
        StringBuilder sb = new StringBuilder();
        for (double x : xs) {
            sb.append(sb.isEmpty() ? "" : " ").append(String.format("%.3f", x));
        }
        return sb.toString();
    }

    private static double median(List<Double> xs) {
        return io.kvoffload.bench.report.Medians.of(xs);
    }
}
