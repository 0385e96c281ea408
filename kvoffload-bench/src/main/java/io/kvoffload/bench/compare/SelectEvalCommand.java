package io.kvoffload.bench.compare;

import io.kvoffload.KvShape;
import io.kvoffload.attention.ExactAttention;
import io.kvoffload.attention.QualityMetrics;
import io.kvoffload.bench.cli.HeadOptions;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.strategy.FetchPlan;
import io.kvoffload.strategy.LayerContext;
import io.kvoffload.strategy.LayerSelector;
import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.workload.Workload;
import io.kvoffload.workload.WorkloadFamily;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import io.kvoffload.bench.cli.WorkloadOptions;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Selection fidelity of the plug-in strategies at equal rows (issue #16): every strategy gets the
 * same {@link FetchPlan} the decoder's pipeline would hand it — the budget {@code ⌈share × tokens⌉}
 * minus the sinks and the window, which are added to every step's set as the pipeline adds them —
 * on one synthetic workload and shape. Per strategy it reports attention-mass recall and the output's
 * relative error against dense attention (and both as a ratio to the oracle's), the rows attended,
 * the bytes a step would read from the SSDs (the default positional layout: each block of
 * {@code --block} tokens one extent, each run of consecutive selected entries one aligned read of
 * 4 KiB pages, sinks and window from DRAM) and the median selection time. No I/O is done: {@code
 * kvo bench compare} runs the strategies through the real pipeline.
 */
@Command(name = "select-eval", mixinStandardHelpOptions = true,
        description = "Plug-in selection strategies at equal rows (sinks and window inside the budget): mass recall,"
                + " output error, bytes a step reads, selection time, each against the oracle's.")
public final class SelectEvalCommand implements Callable<Integer> {
    @Mixin
    WorkloadOptions size = new WorkloadOptions(16384, 2, 24301);

    @Option(names = "--budget", defaultValue = "0.1", description = "Token budget share (default: ${DEFAULT-VALUE}).")
    double budget;

    @Option(names = "--strategies", split = ",", defaultValue = "oracle,mass-bound,mass-mean,mass-mix,logit-mean,quest,"
            + "infllm,clusterkv,pqcache", description = "Registered strategies (default: ${DEFAULT-VALUE}).")
    List<String> strategies;

    @Mixin
    HeadOptions heads = new HeadOptions(32, 8, 128);

    @Option(names = "--steps", defaultValue = "8", description = "Scored decoding steps per layer (default: ${DEFAULT-VALUE}).")
    int steps;

    @Option(names = "--first-step", defaultValue = "256", description = "First scored decoding step (default: ${DEFAULT-VALUE}).")
    int firstStep;

    @Option(names = "--window", defaultValue = "256", description = "Local window (default: ${DEFAULT-VALUE}).")
    int window;

    @Option(names = "--sinks", defaultValue = "4", description = "Sink tokens (default: ${DEFAULT-VALUE}).")
    int sinks;

    @Option(names = "--block", defaultValue = "16", description = "Tokens per stored block (default: ${DEFAULT-VALUE}).")
    int block;

    @Option(names = "--family", defaultValue = "default",
            description = "Workload family: default, mixed-heads, streaming-heads, retrieval-heads, long-documents, control"
                    + " (default: ${DEFAULT-VALUE}).")
    String family;

    @Spec
    CommandSpec spec;

    /** The ceiling of any block ranking: blocks by their true attention mass (needs the exact weights). */
    static final String BLOCK_ORACLE = "block-oracle";

    /**
     * Swarm's medoid selection over its offline co-activation clusters (profiled from 64 decoding
     * queries, every 4th step before the scored ones, τ = 0.35, as {@code compare-quality} does); it
     * picks sinks and window itself inside the same total budget.
     */
    static final String SWARM = "swarm";

    /** Current layer's workload, for {@link #SWARM}'s profile. */
    private Workload workload;
    private int total;

    private SelectionStrategy swarm() {
        return new SelectionStrategy() {
            @Override public String name() { return SWARM; }
            @Override public LayerSelector openLayer(LayerContext context) {
                List<float[]> profile = new ArrayList<>();
                for (int i = 0; i < 64; i++) {
                    profile.add(workload.query(context.layer(), i * 4));
                }
                java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofShared();
                io.kvoffload.internal.swarm.SwarmSelector sel = io.kvoffload.internal.swarm.SwarmSelector.build(
                        context.keys(), heads.queryHeads, profile, budget,
                        io.kvoffload.internal.swarm.ClusteringConfig.defaults()
                                .withRadius(io.kvoffload.internal.swarm.ClusterRadius.fixed(0.35)),
                        sinks, window, arena);
                int[] out = new int[sel.maxSelected(total)];
                return new LayerSelector() {
                    @Override public void select(float[] query, FetchPlan plan) {
                        plan.addAll(out, sel.select(query, total, out));
                    }

                    @Override public void close() {
                        arena.close();
                    }
                };
            }
        };
    }

    /** Exact weights of the step being scored, for {@link #BLOCK_ORACLE}. */
    private float[] exactWeights;

    private SelectionStrategy blockOracle() {
        return new SelectionStrategy() {
            @Override public String name() { return BLOCK_ORACLE; }
            @Override public LayerSelector openLayer(LayerContext context) {
                int blocks = (size.tokens + block - 1) / block;
                return (query, plan) -> {
                    double[] mass = new double[blocks];
                    int windowFrom = Math.max(0, size.tokens - window);
                    for (int t = 0; t < size.tokens; t++) {
                        mass[t / block] += exactWeights[t];
                    }
                    Integer[] order = new Integer[blocks];
                    for (int b = 0; b < blocks; b++) {
                        order[b] = b;
                        if (Math.min(size.tokens, b * block + block) <= sinks || b * block >= windowFrom) {
                            mass[b] = -1;
                        }
                    }
                    Arrays.sort(order, (a, b) -> Double.compare(mass[b], mass[a]));
                    for (int i = 0; i < plan.budget() / block && mass[order[i]] >= 0; i++) {
                        for (int t = order[i] * block; t < Math.min(size.tokens, order[i] * block + block); t++) {
                            plan.add(t);
                        }
                    }
                };
            }
        };
    }

    /** One strategy's sums over size.layers and steps. */
    private static final class Cell {
        final String name;
        double mass, error, rows, bytes;
        final List<Long> nanos = new ArrayList<>();

        Cell(String name) {
            this.name = name;
        }

        double medianMicros() {
            long[] s = nanos.stream().mapToLong(Long::longValue).sorted().toArray();
            return s.length == 0 ? Double.NaN : s[s.length / 2] / 1e3;
        }
    }

    @Override
    public Integer call() {
        if (size.tokens < 1 || size.layers < 1 || steps < 1 || block < 1 || sinks < 0 || window < 0 || !(budget > 0 && budget <= 1)) {
            throw new IllegalArgumentException("--tokens = " + size.tokens + ", --layers = " + size.layers + ", --steps = " + steps
                    + ", --block = " + block + ", --sinks = " + sinks + ", --window = " + window + ", --budget = " + budget
                    + "; allowed: tokens, layers, steps, block ≥ 1, sinks and window ≥ 0, budget in (0, 1]");
        }
        List<SelectionStrategy> chosen = strategies.stream()
                .map(n -> n.equals(BLOCK_ORACLE) ? blockOracle() : n.equals(SWARM) ? swarm()
                        : io.kvoffload.strategy.Strategies.named(n)).toList();
        KvShape shape = heads.shape(size.layers);
        PrintWriter out = spec.commandLine().getOut();
        out.printf(Locale.ROOT, "select-eval: family %s, %d tokens, %d layers, %d query heads on %d KV heads, head dim %d (entry %d B),"
                        + " budget %.3f, sinks %d, window %d, %d-token blocks, steps %d from %d, seed %d, %s%n",
                family, size.tokens, size.layers, heads.queryHeads, heads.kvHeads, heads.headDim, shape.entryBytes(), budget, sinks,
                window, block, steps, firstStep, size.seed, Runtime.version());
        out.flush();
        workload = WorkloadFamily.byName(family).create(shape, size.tokens, size.seed);
        ExactAttention attention = ExactAttention.of(shape);
        Cell[] cells = new Cell[chosen.size()];
        for (int i = 0; i < cells.length; i++) {
            cells[i] = new Cell(chosen.get(i).name());
        }
        total = (int) Math.min(size.tokens, Math.ceil(budget * size.tokens));
        for (int layer = 0; layer < size.layers; layer++) {
            DenseLayerKv kv = DenseLayerKv.materialize(workload.layer(layer), true);
            LayerSelector[] selectors = new LayerSelector[chosen.size()];
            for (int i = 0; i < selectors.length; i++) {
                selectors[i] = chosen.get(i).openLayer(new KeysContext(shape, layer, kv, sinks, window));
            }
            FetchPlan plan = new FetchPlan();
            for (int s = 0; s < steps; s++) {
                float[] q = workload.query(layer, firstStep + s);
                ExactAttention.Result exact = attention.compute(kv, q);
                exactWeights = exact.weights();
                for (int i = 0; i < selectors.length; i++) {
                    int[] set = select(selectors[i], plan, layer, q, total, cells[i]);
                    cells[i].mass += QualityMetrics.attentionMassRecall(exact.weights(), set);
                    cells[i].error += QualityMetrics.relativeError(exact.output(), attention.sparseOutput(kv, q, set));
                    cells[i].rows += set.length;
                    cells[i].bytes += readBytes(set, shape.entryBytes());
                }
            }
            for (LayerSelector sel : selectors) {
                sel.close();
            }
        }
        print(out, cells, (double) size.layers * steps);
        return 0;
    }

    /** One step as the pipeline runs it: sinks and window first, then the strategy, distinct positions. */
    private int[] select(LayerSelector sel, FetchPlan plan, int layer, float[] q, int total, Cell cell) {
        int windowFrom = Math.max(Math.min(sinks, size.tokens), size.tokens - window);
        int resident = Math.min(sinks, size.tokens) + (size.tokens - windowFrom);
        plan.begin(layer, size.tokens, Math.max(0, total - resident));
        for (int t = 0; t < Math.min(sinks, size.tokens); t++) {
            plan.add(t);
        }
        for (int t = windowFrom; t < size.tokens; t++) {
            plan.add(t);
        }
        long t0 = System.nanoTime();
        sel.select(q, plan);
        cell.nanos.add(System.nanoTime() - t0);
        boolean[] seen = new boolean[size.tokens];
        int[] set = new int[plan.size()];
        int n = 0;
        for (int i = 0; i < plan.size(); i++) {
            int p = plan.position(i);
            if (!seen[p]) {
                seen[p] = true;
                set[n++] = p;
            }
        }
        return Arrays.copyOf(set, n);
    }

    /**
     * Bytes the SSD reads for {@code set} in the positional layout: sinks and window are DRAM rows;
     * each run of consecutive positions inside one block extent is one read of whole 4 KiB pages.
     */
    long readBytes(int[] set, long entryBytes) {
        int[] s = set.clone();
        Arrays.sort(s);
        int windowFrom = Math.max(Math.min(sinks, size.tokens), size.tokens - window);
        long bytes = 0;
        int i = 0;
        while (i < s.length) {
            int p = s[i];
            if (p < sinks || p >= windowFrom) {
                i++;
                continue;
            }
            int blockNo = p / block;
            int j = i;
            while (j + 1 < s.length && s[j + 1] == s[j] + 1 && s[j + 1] / block == blockNo && s[j + 1] < windowFrom) {
                j++;
            }
            long from = (long) (p - blockNo * block) * entryBytes;
            long to = (long) (s[j] + 1 - blockNo * block) * entryBytes;
            bytes += (to + 4095) / 4096 * 4096 - from / 4096 * 4096;
            i = j + 1;
        }
        return bytes;
    }

    private static void print(PrintWriter out, Cell[] cells, double samples) {
        Cell oracle = Arrays.stream(cells).filter(c -> c.name.equals("oracle")).findFirst().orElse(null);
        out.println();
        out.println("| strategy | mass recall | × oracle | output rel. error | × oracle | rows/step | KiB read/step | × oracle"
                + " | select µs (median) |");
        out.println("|---|---|---|---|---|---|---|---|---|");
        for (Cell c : cells) {
            out.printf(Locale.ROOT, "| %s | %.4f | %s | %.4f | %s | %.0f | %.0f | %s | %.0f |%n", c.name, c.mass / samples,
                    ratio(c.mass, oracle == null ? 0 : oracle.mass), c.error / samples,
                    ratio(c.error, oracle == null ? 0 : oracle.error), c.rows / samples, c.bytes / samples / 1024,
                    ratio(c.bytes, oracle == null ? 0 : oracle.bytes), c.medianMicros());
        }
        out.flush();
    }

    private static String ratio(double a, double b) {
        return b > 0 ? String.format(Locale.ROOT, "%.3f", a / b) : "–";
    }
}
