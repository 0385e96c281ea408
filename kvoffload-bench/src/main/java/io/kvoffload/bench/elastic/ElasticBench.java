package io.kvoffload.bench.elastic;

import io.kvoffload.DType;
import io.kvoffload.DecodeOptions;
import io.kvoffload.KvConfig;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.bench.ClusteredSequences;
import io.kvoffload.bench.cli.DeviceOptions;
import io.kvoffload.bench.report.Medians;
import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.bench.cli.DecodeBudgetOptions;
import io.kvoffload.bench.cli.WorkloadOptions;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Decode throughput while the decoders' cache budgets move (SwiftCache's elastic pool): D decoders on
 * D threads, each over its own Swarm-clustered sequence with a hot-cluster cache in the engine's
 * elastic DRAM pool, decode the same steps three ways in paired rounds: budgets fixed at the
 * largest value, fixed at the smallest, and cycling through all values every N steps (each decoder
 * a different phase, so budget moves between them). Also reports the time of one resize and the
 * memory the pool and the process hold after growing and after shrinking to zero.
 */
@Command(name = "elastic", mixinStandardHelpOptions = true,
        description = "Decode steps/s while cache budgets change every N steps vs fixed budgets (elastic DRAM pool).")
public final class ElasticBench implements Callable<Integer> {
    /** Sequence {@code i} has seed {@code --seed + i}. */
    @CommandLine.Mixin
    WorkloadOptions workload = new WorkloadOptions(8192, 4, 300);

    @Option(names = "--decoders", defaultValue = "2", description = "Decoders, one thread each (default: ${DEFAULT-VALUE}).")
    int decoders;

    @CommandLine.Mixin
    DeviceOptions store = new DeviceOptions(2);

    @Option(names = "--every", split = ",", defaultValue = "4,32", description = "Resize every N steps (default: ${DEFAULT-VALUE}).")
    int[] every;

    @Option(names = "--budgets-mib", split = ",", defaultValue = "1,8,32,16",
            description = "Cache budgets per decoder in MiB, cycled (default: ${DEFAULT-VALUE}).")
    double[] budgetsMib;

    @Option(names = "--rounds", defaultValue = "4", description = "Paired rounds after a warm-up round (default: ${DEFAULT-VALUE}).")
    int rounds;

    @CommandLine.Mixin
    DecodeBudgetOptions decode = new DecodeBudgetOptions(400, 0.1);

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    private KvShape shape;
    private SyntheticWorkload[] workloads;
    private long[] budgets;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        if (decoders < 1 || decoders > 16) {
            throw new IllegalArgumentException("--decoders = " + decoders + "; allowed: 1..16");
        }
        if (budgetsMib.length < 2) {
            throw new IllegalArgumentException("--budgets-mib has " + budgetsMib.length + " values; allowed: 2 or more");
        }
        for (int n : every) {
            if (n < 1) {
                throw new IllegalArgumentException("--every has " + n + "; allowed: 1 or more");
            }
        }
        budgets = new long[budgetsMib.length];
        long max = 0;
        long min = Long.MAX_VALUE;
        for (int i = 0; i < budgets.length; i++) {
            budgets[i] = (long) (budgetsMib[i] * (1 << 20));
            max = Math.max(max, budgets[i]);
            min = Math.min(min, budgets[i]);
        }
        shape = new KvShape(workload.layers, 32, 8, 128, DType.BF16);
        Path root = store.root("kvo-elastic");
        List<Path> dirs = store.ssdDirectories(root);
        long seqBytes = (long) workload.tokens * shape.entryBytes() * workload.layers;
        KvConfig cfg = store.config(dirs, seqBytes * decoders).dramBudgetBytes(2L << 30).build();
        ExecutorService pool = Executors.newFixedThreadPool(decoders);
        try (KvEngine engine = KvEngine.open(cfg)) {
            workloads = new SyntheticWorkload[decoders];
            for (int i = 0; i < decoders; i++) {
                workloads[i] = new SyntheticWorkload(WorkloadSpec.builder(shape, workload.tokens).seed(workload.seed + i).build());
                ClusteredSequences.store(engine, "s" + i, workloads[i], workload.tokens);
            }
            out.printf("# Elastic DRAM pool: decode throughput while cache budgets change%n%n%d decoders on %d threads,"
                    + " each over its own sequence of %d layers × %,d tokens (32 query heads, 8 KV heads × 128, BF16,"
                    + " %d B entries), Swarm's hot-cluster cache in the engine's elastic pool; %d directories, backend"
                    + " %s; token budget %.0f%%; %d steps (all layers) per decoder and run; budgets per decoder cycled"
                    + " %s MiB.%n%n", decoders, decoders, workload.layers, workload.tokens, shape.entryBytes(), store.devices,
                    engine.stats().ioBackend(), decode.sparsity * 100, decode.steps, java.util.Arrays.toString(budgetsMib));
            long mean = 0;
            for (long b : budgets) {
                mean += b / budgets.length;
            }
            mean &= -(1L << 20); // whole MiB at or below the mean
            int kinds = 3 + every.length;
            List<List<Double>> sps = new ArrayList<>();
            List<List<Double>> ratioMax = new ArrayList<>();
            for (int k = 0; k < kinds; k++) {
                sps.add(new ArrayList<>());
                ratioMax.add(new ArrayList<>());
            }
            List<Double> resizeMicros = new ArrayList<>();
            for (int round = 0; round <= rounds; round++) {
                double[] r = new double[kinds];
                for (int j = 0; j < kinds; j++) {
                    int k = round % 2 == 0 ? j : kinds - 1 - j; // alternate the order between rounds
                    long fixed = k == 0 ? max : k == 1 ? min : k == 2 ? mean : -1;
                    int n = k >= 3 ? every[k - 3] : 0;
                    r[k] = run(engine, pool, fixed, n, round > 0 ? resizeMicros : null);
                }
                if (round > 0) {
                    for (int k = 0; k < kinds; k++) {
                        sps.get(k).add(r[k]);
                        ratioMax.get(k).add(r[k] / r[0]);
                    }
                }
            }
            out.printf("Medians of %d paired rounds after one unreported warm-up round (the order of the runs alternates"
                    + " between rounds). steps/s counts one step of one decoder (every layer); the ratio is taken per"
                    + " round against the fixed runs of the same round.%n%n", rounds);
            out.println("| budgets | steps/s (all decoders) | vs fixed largest | vs fixed mean | per round vs fixed mean |");
            out.println("|---|---:|---:|---:|---|");
            for (int k = 0; k < kinds; k++) {
                String name = k == 0 ? "fixed " + budgetsMib[argMax()] + " MiB" : k == 1 ? "fixed "
                        + budgetsMib[argMin()] + " MiB" : k == 2 ? "fixed " + (mean >> 20) + " MiB (mean of the cycle)"
                        : "cycled every " + every[k - 3] + " steps";
                List<Double> vsMean = new ArrayList<>();
                StringBuilder per = new StringBuilder();
                for (int i = 0; i < sps.get(k).size(); i++) {
                    double x = sps.get(k).get(i) / sps.get(2).get(i);
                    vsMean.add(x);
                    per.append(String.format("%.2f ", x));
                }
                out.printf("| %s | %.0f | %.2f | %.2f | %s|%n", name, Medians.of(sps.get(k)),
                        Medians.of(ratioMax.get(k)), Medians.of(vsMean), per);
            }
            out.println();
            out.printf("One resize (KvDecoder.setCacheBytes, all layers, growing or shrinking): median %.0f µs over %d"
                    + " resizes.%n%n", Medians.of(resizeMicros), resizeMicros.size());
            memory(engine, out, max);
        } finally {
            pool.shutdownNow();
            store.release(root);
        }
        out.flush();
        return 0;
    }

    private int argMax() {
        int a = 0;
        for (int i = 1; i < budgetsMib.length; i++) {
            a = budgetsMib[i] > budgetsMib[a] ? i : a;
        }
        return a;
    }

    private int argMin() {
        int a = 0;
        for (int i = 1; i < budgetsMib.length; i++) {
            a = budgetsMib[i] < budgetsMib[a] ? i : a;
        }
        return a;
    }

    /** The pool's and the process's memory with every decoder at the largest budget, then at zero. */
    private void memory(KvEngine engine, PrintWriter out, long max) throws Exception {
        List<KvSequence> seqs = new ArrayList<>();
        List<KvDecoder> decs = new ArrayList<>();
        try {
            for (int i = 0; i < decoders; i++) {
                seqs.add(engine.openSequence("s" + i));
                decs.add(seqs.get(i).decoder(options(max)));
            }
            for (int step = 0; step < 64; step++) {
                for (int i = 0; i < decoders; i++) {
                    step(decs.get(i), workloads[i], step);
                }
            }
            long poolGrown = engine.elasticDramReservedBytes();
            long dramGrown = engine.stats().dramReservedBytes();
            long rssGrown = rssBytes();
            for (KvDecoder d : decs) {
                d.setCacheBytes(0);
            }
            long poolShrunk = engine.elasticDramReservedBytes();
            long dramShrunk = engine.stats().dramReservedBytes();
            long rssShrunk = rssBytes();
            out.println("| memory | all decoders at the largest budget, 64 steps in | after setCacheBytes(0) |");
            out.println("|---|---:|---:|");
            out.printf("| elastic pool chunks (MiB) | %.1f | %.1f |%n", poolGrown / 1048576.0, poolShrunk / 1048576.0);
            out.printf("| DRAM tier reserved (MiB) | %.1f | %.1f |%n", dramGrown / 1048576.0, dramShrunk / 1048576.0);
            out.printf("| process RSS (MiB, /proc/self/status) | %.1f | %.1f |%n", rssGrown / 1048576.0,
                    rssShrunk / 1048576.0);
        } finally {
            for (KvDecoder d : decs) {
                d.close();
            }
            for (KvSequence s : seqs) {
                s.close();
            }
        }
    }

    private static long rssBytes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
                }
            }
        } catch (Exception e) {
            return -1;
        }
        return -1;
    }

    private DecodeOptions options(long cacheBytes) {
        return DecodeOptions.builder().strategy(Swarm.defaults()).sparsity(decode.sparsity).cacheBytes(cacheBytes).build();
    }

    /**
     * All decoders decode {@link #steps} steps on their threads; budgets fixed at {@code fixed}, or
     * cycled every {@code n} steps (decoder i starts i values further on). Returns steps/s of all.
     */
    private double run(KvEngine engine, ExecutorService pool, long fixed, int n, List<Double> resizeMicros)
            throws Exception {
        List<KvSequence> seqs = new ArrayList<>();
        List<KvDecoder> decs = new ArrayList<>();
        try {
            for (int i = 0; i < decoders; i++) {
                seqs.add(engine.openSequence("s" + i));
                decs.add(seqs.get(i).decoder(options(fixed >= 0 ? fixed : budgets[i % budgets.length])));
            }
            // Every layer opened (its window loaded, its cache taken) before the clock starts.
            for (int i = 0; i < decoders; i++) {
                step(decs.get(i), workloads[i], 0);
            }
            List<Future<List<Double>>> fs = new ArrayList<>();
            long t0 = System.nanoTime();
            for (int i = 0; i < decoders; i++) {
                KvDecoder d = decs.get(i);
                SyntheticWorkload w = workloads[i];
                int phase = i;
                fs.add(pool.submit(() -> {
                    List<Double> micros = new ArrayList<>();
                    for (int s = 0; s < decode.steps; s++) {
                        if (n > 0 && s % n == 0) {
                            long r0 = System.nanoTime();
                            d.setCacheBytes(budgets[(s / n + phase) % budgets.length]);
                            micros.add((System.nanoTime() - r0) / 1e3);
                        }
                        step(d, w, s + 1);
                    }
                    return micros;
                }));
            }
            for (Future<List<Double>> f : fs) {
                List<Double> m = f.get();
                if (resizeMicros != null) {
                    resizeMicros.addAll(m);
                }
            }
            double secs = (System.nanoTime() - t0) / 1e9;
            return decoders * (double) decode.steps / secs;
        } finally {
            for (KvDecoder d : decs) {
                d.close();
            }
            for (KvSequence s : seqs) {
                s.close();
            }
        }
    }

    /** One step: every layer, the next layer's fetch in flight while one is consumed. */
    private void step(KvDecoder d, SyntheticWorkload w, int s) {
        int q = s % 64;
        KvView next = d.prefetch(0, w.query(0, q));
        for (int l = 0; l < workload.layers; l++) {
            KvView v = next.await();
            if (l + 1 < workload.layers) {
                next = d.prefetch(l + 1, w.query(l + 1, q));
            }
            v.close();
        }
    }
}
