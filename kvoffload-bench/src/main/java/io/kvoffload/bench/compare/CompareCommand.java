package io.kvoffload.bench.compare;

import io.kvoffload.LatencyHistogram;
import io.kvoffload.DeviceModelSpec;
import io.kvoffload.KvConfig;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvEngine;
import io.kvoffload.KvShape;
import io.kvoffload.SparseAttention;
import io.kvoffload.bench.ProgressBars;
import io.kvoffload.bench.TempDirs;
import io.kvoffload.bench.cli.HeadOptions;
import io.kvoffload.bench.cli.ProgressOptions;
import io.kvoffload.bench.cli.ReportOptions;
import io.kvoffload.bench.cli.SimulatedSsdOptions;
import io.kvoffload.bench.compare.IoStrategies.Layout;
import io.kvoffload.bench.compare.IoStrategies.Strategy;
import io.kvoffload.bench.fio.FetchFioJob;
import io.kvoffload.bench.fio.FetchShape;
import io.kvoffload.bench.fio.Fio;
import io.kvoffload.internal.swarm.Clustering;
import io.kvoffload.workload.TraceHeader;
import io.kvoffload.workload.TraceWorkload;
import io.kvoffload.workload.Workload;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import me.tongfei.progressbar.ProgressBar;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Every strategy through the same I/O path (issue #7): each one's layer is stored on the SSD
 * directories and every decoding step reads through a {@link KvDecoder} — Swarm and its ablations
 * select by medoid score over their cluster layouts; the token-set baselines are
 * {@link io.kvoffload.strategy.SelectionStrategy strategies} the decoder runs over a positional
 * layout; every one through {@code prefetch(layer, query)}: the same bucket scheduler, one batched submission,
 * per-entry CRC32C, gather into a view. Per strategy and setting it measures quality (attention-mass
 * recall, top-k recall, the relative error of {@link SparseAttention} over the view against dense
 * attention) and I/O (bytes, reads, I/O time, effective bandwidth and its ratio to fio on the same
 * files at the same request sizes, selection latency, cache hit rate, DRAM, index memory), at several
 * prefix lengths, budgets and batch sizes, plus multi-SSD scaling through the device model
 * (simulated). Every view row is checked bit-exact against the source KV. Writes CSV, PNG and a
 * markdown summary.
 */
@Command(name = "compare", mixinStandardHelpOptions = true,
        description = "All strategies through the same scheduler and I/O path (oracle, InfLLM, Quest, PQCache, ClusterKV,"
                + " KVSwap, Swarm and its ablations): quality, I/O, fio ratio, batch sizes, SSD scaling (simulated)."
                + " Writes compare.csv, PNG plots and summary.md to --out.")
public final class CompareCommand implements Callable<Integer> {
    @Option(names = "--sizes", split = ",", defaultValue = "16384,32768",
            description = "Prefix lengths in tokens (default: ${DEFAULT-VALUE}; up to 1M as memory allows: the dense"
                    + " reference keeps each layer's K and V as floats).")
    int[] sizes;

    @Mixin
    BudgetOptions spend = new BudgetOptions();

    @Option(names = "--batches", split = ",", defaultValue = "1,4,8",
            description = "Batch sizes: sequences decoded concurrently, one thread each (default: ${DEFAULT-VALUE}).")
    int[] batches;

    @Option(names = "--strategies", split = ",", defaultValue = IoStrategies.DEFAULTS,
            description = "Strategies (default: ${DEFAULT-VALUE}; also sparq, sparf-memory, sparf, sparf-qh).")
    List<String> strategies;

    @Option(names = "--layers", defaultValue = "2", description = "Layers (default: ${DEFAULT-VALUE}).")
    int layers;

    @Mixin
    StoreOptions store = new StoreOptions();

    @Mixin
    FamilyOption family = new FamilyOption();

    @Option(names = "--shape", completionCandidates = ShapeNames.class,
            description = "Head layout: ${COMPLETION-CANDIDATES} (MHA, GQA 4:1, GQA 8:1: KV heads = query heads,"
                    + " /4, /8); overrides --kv-heads.")
    String shapeName;

    @Option(names = "--trace", description = "A KVOTRACE file (docs/swarm-offline.md §3, with values and at least 2"
            + " queries per layer) instead of a synthetic family: its shape, context length and queries (the first half"
            + " profiles Swarm, the second half is scored); --sizes, --family and the head options are ignored.")
    Path trace;

    @Option(names = "--trace-layers", defaultValue = "0",
            description = "Layers of the trace to run, from layer 0; 0 for all (default: ${DEFAULT-VALUE}).")
    int traceLayers;

    @Mixin
    HeadOptions heads = new HeadOptions(32, 8, 128);

    @Option(names = "--steps", defaultValue = "8", description = "Decoding steps per run (default: ${DEFAULT-VALUE}).")
    int steps;

    @Option(names = "--devices", defaultValue = "4",
            description = "SSD directories of the measured runs (default: ${DEFAULT-VALUE}).")
    int devices;

    @Mixin
    ScalingRuns scaling = new ScalingRuns();

    @Option(names = "--group", defaultValue = "16",
            description = "Tokens per cluster of the positional layout (default: ${DEFAULT-VALUE}).")
    int group;

    @Mixin
    LocalTokenOptions local = new LocalTokenOptions();

    @Mixin
    SwarmProfileOptions swarm = new SwarmProfileOptions();

    @Mixin
    FioRuns fioRuns = new FioRuns();

    @Mixin
    ReportOptions report = new ReportOptions("kvoffload-bench/target/reports/compare");

    @Option(names = "--seed", defaultValue = "24301", description = "Workload seed (default: ${DEFAULT-VALUE}).")
    long seed;

    @Mixin
    ProgressOptions progress = new ProgressOptions();

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** The shape names, for --help. */
    static final class ShapeNames implements Iterable<String> {
        @Override
        public java.util.Iterator<String> iterator() {
            return SHAPES.iterator();
        }
    }

    PrintWriter console;
    KvShape shape;
    private ProgressBar bar;

    /**
     * One measured cell.
     *
     * @param section {@code quality} (batch 1, every budget), {@code batch} or {@code scaling}
     * @param simulated whether the SSDs were simulated by the device model
     * @param coActivationShare for Swarm's layouts, the share of tokens in co-activation clusters
     *     (mean over layers); NaN for the others
     */
    public record Row(String section, int tokens, double budget, int batch, int ssds, boolean simulated, String strategy,
            double rowsPerFetch, double massRecall, double topKRecall, double outputError, double selectMicros,
            double bytesPerStep, double readsPerStep, double ioMillisPerStep, double effectiveMiBs, double fioMiBs,
            double aggregateMiBs, double stepsPerSecond, double cacheHitRate, long dramBytes, long indexBytes,
            long rowsChecked, long mismatches, double coActivationShare, LatencyHistogram fetchLatency,
            LatencyHistogram ioLatency) {
        /** Effective bandwidth over fio's, or NaN without fio. */
        public double fioRatio() {
            return fioMiBs > 0 ? effectiveMiBs / fioMiBs : Double.NaN;
        }
    }

    /**
     * A short configuration for the demo: one small prefix, one budget, batch 1, no scaling, no fio
     * (a few steps read for milliseconds, too short for a bandwidth ratio).
     */
    public static CompareCommand quick(int tokens, int steps) {
        CompareCommand c = new CompareCommand();
        new CommandLine(c).parseArgs("--sizes", String.valueOf(tokens), "--budgets", "0.1", "--batches", "1",
                "--layers", "1", "--steps", String.valueOf(steps), "--fio-seconds", "0",
                "--profile-queries", "32", "--no-progress");
        c.scaling.ssdCounts = new int[0]; // no scaling runs
        return c;
    }

    /** Sets the output folder (the demo writes to a temporary one). */
    public CompareCommand out(Path folder) {
        report.out = folder;
        return this;
    }

    /** Sets the folder for the SSD directories. */
    public CompareCommand work(Path folder) {
        report.work = folder;
        return this;
    }

    @Override
    public Integer call() throws Exception {
        PrintWriter pw = spec.commandLine().getOut();
        List<Row> rows = execute(pw);
        pw.println(summaryTable(rows, spend.budget));
        pw.flush();
        long bad = rows.stream().mapToLong(Row::mismatches).sum();
        return bad == 0 ? 0 : 1;
    }

    /** Runs the comparison, writes the reports and returns the rows. */
    public List<Row> execute(PrintWriter pw) throws IOException, InterruptedException {
        try (TraceWorkload traced = trace == null ? null : TraceWorkload.open(trace)) {
            if (traced != null) {
                adoptTrace(traced);
            } else if (shapeName != null) {
                heads.kvHeads = kvHeadsFor(shapeName, heads.queryHeads);
            }
            validate();
            console = pw;
            shape = heads.shape(layers);
            range("--kvswap-rank", store.kvswapRank, 0, shape.kvHeads() * shape.headDim());
            source = traced;
            return run();
        } finally {
            source = null;
        }
    }

    /** The shapes of --shape: MHA and GQA 4:1 and 8:1 over the query heads. */
    public static final List<String> SHAPES = List.of("mha", "gqa4", "gqa8");

    /** KV heads of shape {@code name} for {@code queryHeads}. */
    static int kvHeadsFor(String name, int queryHeads) {
        int ratio = switch (name) {
            case "mha" -> 1;
            case "gqa4" -> 4;
            case "gqa8" -> 8;
            default -> throw new IllegalArgumentException("--shape = " + name + " is unknown; allowed: "
                    + String.join(", ", SHAPES));
        };
        if (queryHeads % ratio != 0) {
            throw new IllegalArgumentException("--query-heads = " + queryHeads + " is not a multiple of " + ratio
                    + "; allowed for --shape " + name + ": multiples of " + ratio);
        }
        return queryHeads / ratio;
    }

    /** Takes the trace's shape, length and layers. */
    private void adoptTrace(TraceWorkload t) {
        TraceHeader h = t.header();
        if (!h.values()) {
            throw new IllegalArgumentException("--trace " + trace + " holds keys only; allowed: a trace with values"
                    + " (the output error needs them)");
        }
        if (h.queriesPerLayer() < 2) {
            throw new IllegalArgumentException("--trace " + trace + " holds " + h.queriesPerLayer() + " queries per"
                    + " layer; allowed: at least 2 (half profile Swarm, half are scored)");
        }
        range("--trace-layers", traceLayers, 0, h.layers());
        layers = traceLayers == 0 ? h.layers() : traceLayers;
        heads.queryHeads = h.queryHeads();
        heads.kvHeads = h.kvHeads();
        heads.headDim = h.headDim();
        sizes = new int[] {h.tokens()};
    }

    /** The trace being run, or null for a synthetic family. */
    Workload source;

    private List<Row> run() throws IOException, InterruptedException {
        List<Strategy> chosen = strategies.stream().map(IoStrategies::byName).toList();
        boolean fio = fioRuns.fioSeconds > 0 && Fio.available();
        long work = 0;
        for (int n : sizes) {
            work += 2 + (long) chosen.size() * (spend.budgets.length + batches.length + (fio ? 1 : 0));
        }
        work += (long) scaling.ssdCounts.length * (1 + chosen.size());
        long t0 = System.nanoTime();
        List<Row> rows = new ArrayList<>();
        console.printf(Locale.ROOT, "compare: %s, %d layers, prefixes %s, budgets %s, batches %s, %d steps, %d SSD"
                + " directories (%s), positional groups of %d, cache %.0f%% of a layer, KVSwap rank %d, %s%n",
                shape.fingerprint(), layers, Arrays.toString(sizes), Arrays.toString(spend.budgets),
                Arrays.toString(batches), steps, devices, store.placement, group, store.cacheShare * 100,
                store.kvswapRank(shape), Runtime.version());
        console.flush();
        bar = progress.bar("compare", work, 500);
        try {
            for (int i = 0; i < sizes.length; i++) {
                try (CompareFixture f = new CompareFixture(this, sizes[i], chosen)) {
                    rows.addAll(measureSize(f, chosen, fio));
                    if (i == 0 && scaling.ssdCounts.length > 0) {
                        rows.addAll(scaling(f, chosen));
                    }
                }
            }
        } finally {
            if (bar != null) {
                bar.close();
            }
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        report(rows, chosen, seconds, fio);
        console.printf(Locale.ROOT, "compare: %d rows in %.1f s; reports in %s%n", rows.size(), seconds,
                report.out.toAbsolutePath());
        console.flush();
        return rows;
    }

    private void validate() {
        if (sizes.length == 0 || spend.budgets.length == 0 || strategies.isEmpty()) {
            throw new IllegalArgumentException("--sizes, --budgets and --strategies need at least one value");
        }
        for (int n : sizes) {
            if (n < 1024 || n > (1 << 20)) {
                throw new IllegalArgumentException((trace != null ? "--trace " + trace + " has " + n + " tokens"
                        : "--sizes holds " + n) + "; allowed: 1024.." + (1 << 20));
            }
        }
        for (double b : spend.budgets) {
            share("--budgets", b);
        }
        share("--budget", spend.budget);
        share("--cache-share", store.cacheShare == 0 ? 1 : store.cacheShare);
        for (int b : batches) {
            range("--batches", b, 1, 64);
        }
        for (int c : scaling.ssdCounts) {
            range("--ssd-counts", c, 1, 64);
        }
        strategies.forEach(IoStrategies::byName);
        family.get();
        range("--layers", layers, 1, trace != null ? 4096 : 64);
        range("--steps", steps, 1, 100_000);
        range("--scaling-steps", scaling.scalingSteps, 1, 100_000);
        range("--devices", devices, 1, 64);
        store.placement(); // a bad --placement fails before any work
        range("--group", group, 1, 4096);
        range("--profile-queries", swarm.profileQueries, 1, 4096);
        range("--window", local.window, 0, 1 << 20);
        range("--sinks", local.sinks, 0, 1 << 20);
        range("--fio-seconds", fioRuns.fioSeconds, 0, 600);
        range("--fio-min-io-ms", fioRuns.fioMinIoMillis, 0, 3_600_000);
    }

    private static void share(String name, double v) {
        if (!(v > 0 && v <= 1)) {
            throw new IllegalArgumentException(name + " = " + v + " is out of range; allowed: (0, 1]");
        }
    }

    private static void range(String name, long v, long lo, long hi) {
        if (v < lo || v > hi) {
            throw new IllegalArgumentException(name + " = " + v + " is out of range; allowed: " + lo + ".." + hi);
        }
    }

    void step() {
        ProgressBars.step(bar);
    }

    // ------------------------------------------------------------------ data and layouts

    static List<Layout> layouts(List<Strategy> chosen) {
        return chosen.stream().map(Strategy::layout).distinct().toList();
    }

    /** Sequences stored for {@code chosen}: one per layout, one per strategy laying itself out. */
    private static int sequences(List<Strategy> chosen) {
        return (int) chosen.stream().map(Strategy::sequenceId).distinct().count();
    }

    static int[][] positional(int tokens, int g) {
        return io.kvoffload.strategy.SelectionStrategy.pages(tokens, g);
    }

    /** A clustering as member arrays, each cluster's medoid first (what clusterLayer takes). */
    static int[][] arrays(Clustering c) {
        int[][] out = new int[c.clusterCount()][];
        for (int k = 0; k < out.length; k++) {
            int size = c.size(k);
            int medoid = c.medoid(k);
            out[k] = new int[size];
            out[k][0] = medoid;
            for (int i = 0, j = 1; i < size; i++) {
                int m = c.member(k, i);
                if (m != medoid) {
                    out[k][j++] = m;
                }
            }
        }
        return out;
    }

    KvEngine open(List<Path> deviceDirs, DeviceModelSpec model, List<Strategy> chosen) throws IOException {
        return open(deviceDirs, model, chosen, sizes[0]);
    }

    private KvEngine open(List<Path> deviceDirs, DeviceModelSpec model, List<Strategy> chosen, int n)
            throws IOException {
        long layerBytes = (long) Arrays.stream(sizes).max().orElse(n) * shape.entryBytes();
        // Swarm's replicas (up to 4 copies, about 1.5 measured) and alignment padding: 3× per layout is ample.
        long total = layerBytes * layers * sequences(chosen) * 3;
        long capacity = (total / deviceDirs.size() + (64L << 20)) & -(1L << 20);
        KvConfig.Builder b = report.config(deviceDirs).placement(store.placement())
                .deviceCapacityBytes(capacity).dramBudgetBytes(dramBudget(layerBytes));
        if (model != null) {
            b.deviceModel(model);
        }
        return KvEngine.open(b.build());
    }

    /**
     * DRAM for the engine: every concurrent decoder holds its views (pipeline depth 2, up to the
     * budget's rows each), window and cache, and the pool grows in slabs of up to 128 MiB.
     */
    private long dramBudget(long layerBytes) {
        int maxBatch = Arrays.stream(batches).max().orElse(1);
        long perDecoder = 2 * (long) Math.ceil(Arrays.stream(spend.budgets).max().orElse(spend.budget) * layerBytes)
                + (long) (store.cacheShare * layerBytes) * layers + (64L << 20);
        return Math.max(1L << 30, layerBytes * layers + maxBatch * perDecoder + (256L << 20));
    }

    // ------------------------------------------------------------------ decoding

    private long index(CompareFixture f, Strategy s) {
        return s.decoderSelects() ? f.medoidIndexBytes.getOrDefault(s.layout(), 0L)
                : f.indexBytes.getOrDefault(s.name(), 0L);
    }

    private List<Row> measureSize(CompareFixture f, List<Strategy> chosen, boolean fio)
            throws IOException, InterruptedException {
        List<Row> rows = new ArrayList<>();
        for (Strategy s : chosen) {
            for (double b : spend.budgets) {
                DecodeRun a = DecodeRun.decode(this, f, f.engine, s, b, 1, steps, true);
                double fioMiBs = 0;
                if (fio && b == spend.budget && a.first.readRequests() > 0) {
                    fioMiBs = fioLikeFetch(f, s, a);
                    step();
                }
                rows.add(a.row("quality", f, s, b, 1, devices, false, steps, fioMiBs, index(f, s)));
                step();
            }
            for (int batch : batches) {
                DecodeRun a = DecodeRun.decode(this, f, f.engine, s, spend.budget, batch, steps, false);
                rows.add(a.row("batch", f, s, spend.budget, batch, devices, false, steps, 0, index(f, s)));
                step();
            }
        }
        return rows;
    }

    /**
     * fio shaped like this strategy's fetches ({@link FetchFioJob}: same size mix, data, reads in
     * flight and bursts), about {@code --fio-seconds} of reads at the fetch's own bandwidth; 0 (no
     * ratio reported) when the job cannot match the fetch, with the reason on stderr.
     */
    private double fioLikeFetch(CompareFixture f, Strategy s, DecodeRun a) throws IOException, InterruptedException {
        if (a.ioNanos < fioRuns.fioMinIoMillis * 1_000_000L) {
            System.err.printf(java.util.Locale.ROOT, "compare: no fio ratio for %s: its timed fetches read for %.0f ms,"
                    + " under --fio-min-io-ms %d (a burst that short is not comparable with a steady fio run; use more"
                    + " --steps)%n", s.name(), a.ioNanos / 1e6, fioRuns.fioMinIoMillis);
            return 0;
        }
        String id = s.sequenceId();
        FetchShape shape = FetchShape.measure(f.dirs, id, a.first, (long) steps * layers,
                f.engine.config().queueDepth());
        double fetchMiBs = a.bytes / (a.ioNanos / 1e9) / MIB;
        FetchFioJob job;
        try {
            job = FetchFioJob.of(shape, (long) (fetchMiBs * MIB * fioRuns.fioSeconds), s.name().hashCode());
        } catch (IllegalArgumentException e) {
            System.err.println("compare: no fio ratio for " + s.name() + ": " + e.getMessage());
            return 0;
        }
        List<String> unlike = job.unlike(shape);
        if (!unlike.isEmpty()) {
            System.err.println("compare: no fio ratio for " + s.name() + ": " + String.join("; ", unlike));
            return 0;
        }
        return Fio.replay(job, f.root.resolve("fio-" + s.name() + ".iolog"));
    }

    /** Multi-SSD scaling through the device model (simulated high-end SSDs, scaled so 8 fit this disk). */
    private List<Row> scaling(CompareFixture f, List<Strategy> chosen) throws IOException, InterruptedException {
        List<Row> rows = new ArrayList<>();
        DeviceModelSpec model = scaling.model();
        for (int count : scaling.ssdCounts) {
            Path root = report.scratch("kvo-compare-scaling");
            try (KvEngine e = open(TempDirs.ssdDirectories(root, count), model, chosen, f.n)) {
                f.store(e, chosen);
                step();
                for (Strategy s : chosen) {
                    DecodeRun a = DecodeRun.decode(this, f, e, s, spend.budget, 1, scaling.scalingSteps, false);
                    rows.add(a.row("scaling", f, s, spend.budget, 1, count, true, scaling.scalingSteps, 0, index(f, s)));
                    step();
                }
            } finally {
                TempDirs.deleteRecursively(root);
            }
        }
        return rows;
    }

    // ------------------------------------------------------------------ reports

    static final double MIB = CompareReport.MIB;

    private void report(List<Row> rows, List<Strategy> chosen, double seconds, boolean fio) throws IOException {
        new CompareReport(this, shape).write(rows, chosen, seconds, fio);
    }

    /** The per-strategy table of quality and I/O per step (what the summary and the demo print). */
    public static String table(List<Row> rows, boolean full) {
        return CompareReport.table(rows, full);
    }

    /** The batch-1 table at {@code budget}, for the console. */
    public static String summaryTable(List<Row> rows, double budget) {
        return CompareReport.summaryTable(rows, budget);
    }

    static String f(double v, int decimals) {
        return CompareReport.f(v, decimals);
    }

    /** The simulated SSD scaling runs: at which SSD counts (and their model), with how many decoding steps. */
    static final class ScalingRuns extends SimulatedSsdOptions {
        @Option(names = "--scaling-steps", defaultValue = "4",
                description = "Decoding steps per scaling run (default: ${DEFAULT-VALUE}).")
        int scalingSteps;
    }

    /** The fio runs a strategy's fetch rate is set against: how long, and the least decode I/O worth it. */
    static final class FioRuns {
        @Option(names = "--fio-seconds", defaultValue = "2",
                description = "Seconds per fio run; 0 for no fio (default: ${DEFAULT-VALUE}).")
        int fioSeconds;

        @Option(names = "--fio-min-io-ms", defaultValue = "500",
                description = "Least I/O time of a strategy's timed fetches for an eff / fio ratio: a shorter decode "
                        + "is not set against a steady fio run (default: ${DEFAULT-VALUE}).")
        int fioMinIoMillis;
    }
}
