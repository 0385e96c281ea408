package io.kvoffload.bench.compare;

import io.kvoffload.bench.report.NanoSamples;
import io.kvoffload.KvShape;
import io.kvoffload.attention.ExactAttention;
import io.kvoffload.attention.QualityMetrics;
import io.kvoffload.bench.ProgressBars;
import io.kvoffload.bench.cli.HeadOptions;
import io.kvoffload.bench.cli.ProfileStepOptions;
import io.kvoffload.bench.cli.ProgressOptions;
import io.kvoffload.internal.baseline.BaselineSelector;
import io.kvoffload.internal.swarm.ClusteringConfig;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import me.tongfei.progressbar.ProgressBar;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Compares the token selectors on one synthetic workload: every strategy is built on the same keys
 * of each layer, then scored on the same decoding queries against exact attention. Per context
 * length, budget and strategy it reports attention-mass recall, top-k recall and the relative error
 * of the sparse attention output ({@link QualityMetrics}), the median selection latency, what a step
 * would read if tokens were stored in fixed blocks (tokens, distinct blocks, bytes, read
 * amplification), what scoring reads of the index, and the index memory and build time. Prints
 * markdown tables and writes one CSV row per (length, budget, strategy). docs/baselines.md holds a
 * measured run.
 */
@Command(name = "compare-quality", mixinStandardHelpOptions = true,
        description = "Quality of the baseline token selectors (oracle, Swarm, Quest, InfLLM, PQCache, ClusterKV, SparQ, "
                + "SparF) on one synthetic workload: attention-mass recall, top-k recall, output error, selection latency, "
                + "block reads and index memory per budget. Prints markdown tables and writes a CSV.")
public final class CompareQualityCommand implements Callable<Integer> {

    @Option(names = "--sizes", split = ",", defaultValue = "16384,65536",
            description = "Context lengths (prefix tokens) to measure (default: ${DEFAULT-VALUE}).")
    int[] sizes;

    @Option(names = "--budgets", split = ",", defaultValue = "0.05,0.1,0.2",
            description = "Token budgets as shares of the context (default: ${DEFAULT-VALUE}).")
    double[] budgets;

    @Option(names = "--strategies", split = ",", defaultValue = "oracle,swarm,quest,infllm,pqcache,clusterkv,sparq,sparf",
            description = "Strategies to compare (default: ${DEFAULT-VALUE}).")
    List<String> strategies;

    @Option(names = "--layers", defaultValue = "2", description = "Layers, each with its own keys and queries (default: ${DEFAULT-VALUE}).")
    int layers;

    @Mixin
    HeadOptions heads = new HeadOptions(8, 2, 128);

    @Option(names = "--steps", defaultValue = "16", description = "Decoding steps scored per layer (default: ${DEFAULT-VALUE}).")
    int steps;

    @Option(names = "--warmup", defaultValue = "3",
            description = "Untimed selections per strategy and budget before each layer's timed ones (default: ${DEFAULT-VALUE}).")
    int warmup;

    @Option(names = "--window", defaultValue = "256",
            description = "Local window kept by InfLLM, PQCache, SparQ/SparF and Swarm (default: ${DEFAULT-VALUE}).")
    int window;

    @Option(names = "--block", defaultValue = "16",
            description = "Tokens per storage block for the read accounting (default: ${DEFAULT-VALUE}).")
    int block;

    @Mixin
    Profiling profiling = new Profiling();

    @Option(names = "--sparq-rank", defaultValue = "0",
            description = "Query dimensions SparQ/SparF keep per head; 0 = head dim / 8, SparQ's 1/8 setting (default: ${DEFAULT-VALUE}).")
    int sparqRank;

    @Option(names = "--seed", defaultValue = "24301", description = "Workload and k-means seed (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--csv", defaultValue = "compare-quality.csv",
            description = "CSV file to write, one row per (tokens, budget, strategy); empty for none (default: ${DEFAULT-VALUE}).")
    String csv;

    @Mixin
    ProgressOptions progress = new ProgressOptions();

    @Spec
    CommandSpec spec;

    /** Runs the command on its own (before it is registered in the CLI). */
    public static void main(String[] args) {
        CommandLine cl = new CommandLine(new CompareQualityCommand());
        cl.setExecutionExceptionHandler((ex, cmd, parsed) -> { // a bad option deserves its message, not a trace
            if (!(ex instanceof IllegalArgumentException)) {
                throw ex;
            }
            cmd.getErr().println("compare-quality: " + ex.getMessage());
            cmd.getErr().flush();
            return 2;
        });
        System.exit(cl.execute(args));
    }

    /** Sums over layers and steps for one (tokens, budget, strategy) cell. */
    private static final class Cell {
        final int tokens;
        final double share;
        final int budget;
        final String strategy;
        double mass, topK, error, selected, blocks, scoredBytes;
        /** Each step's selection time; one per scored step. */
        final NanoSamples latency = new NanoSamples();
        long buildNanos, indexBytes;
        int builds;

        Cell(int tokens, double share, int budget, String strategy) {
            this.tokens = tokens;
            this.share = share;
            this.budget = budget;
            this.strategy = strategy;
        }
    }

    @Override
    public Integer call() {
        validate();
        PrintWriter out = spec.commandLine().getOut();
        int t = profiling.schedule.threads();
        KvShape shape = heads.shape(layers);
        ClusteringConfig swarmConfig = profiling.config();
        out.printf(Locale.ROOT, "compare-quality: %s (%d layers, %d query heads on %d KV heads, head dim %d, BF16 entries "
                        + "of %d B), %d scored steps per layer after %d profiled (every %d), window %d, %d-token blocks, "
                        + "SparQ rank %d, seed %d, %d threads, %s%n%n",
                shape.fingerprint(), layers, heads.queryHeads, heads.kvHeads, heads.headDim, shape.entryBytes(), steps, profiling.swarm.profileQueries,
                profiling.schedule.profileStride, window, block, sparqRank > 0 ? sparqRank : Math.max(1, heads.headDim / 8), seed, t,
                Runtime.version());
        out.flush();
        List<Cell> all = new ArrayList<>();
        long work = (long) sizes.length * layers * (strategies.size() + steps);
        long start = System.nanoTime();
        try (ProgressBar bar = progress.bar("compare-quality", work, 500)) {
            for (int n : sizes) {
                all.addAll(measure(shape, n, swarmConfig, bar));
            }
        }
        for (int n : sizes) {
            print(out, shape, n, all.stream().filter(c -> c.tokens == n).toList());
        }
        out.printf(Locale.ROOT, "Total time %.1f s.%n", (System.nanoTime() - start) / 1e9);
        out.flush();
        if (!csv.isEmpty()) {
            writeCsv(Path.of(csv), shape, all);
            out.println("CSV: " + Path.of(csv).toAbsolutePath());
            out.flush();
        }
        return 0;
    }

    private void validate() {
        if (sizes.length == 0 || budgets.length == 0 || strategies.isEmpty()) {
            throw new IllegalArgumentException("--sizes, --budgets and --strategies each need at least one value");
        }
        for (int n : sizes) {
            if (n < 1 || n > (1 << 24)) {
                throw new IllegalArgumentException("--sizes holds " + n + "; allowed: 1.." + (1 << 24));
            }
        }
        for (double b : budgets) {
            if (!(b > 0 && b <= 1)) {
                throw new IllegalArgumentException("--budgets holds " + b + "; allowed: (0, 1]");
            }
        }
        for (String s : strategies) {
            if (!Strategies.ALL.contains(s)) {
                throw new IllegalArgumentException("--strategies holds " + s + "; allowed: " + String.join(", ", Strategies.ALL));
            }
        }
        positive("--layers", layers);
        positive("--steps", steps);
        positive("--block", block);
        positive("--profile-queries", profiling.swarm.profileQueries);
        positive("--profile-stride", profiling.schedule.profileStride);
        if (sparqRank < 0 || sparqRank > heads.headDim) {
            throw new IllegalArgumentException("--sparq-rank = " + sparqRank + "; allowed: 0.." + heads.headDim);
        }
        if (warmup < 0 || window < 0) {
            throw new IllegalArgumentException("--warmup = " + warmup + ", --window = " + window + "; allowed: ≥ 0");
        }
    }

    private static void positive(String name, int v) {
        if (v < 1) {
            throw new IllegalArgumentException(name + " = " + v + "; allowed: ≥ 1");
        }
    }

    private List<Cell> measure(KvShape shape, int n, ClusteringConfig swarmConfig, ProgressBar bar) {
        WorkloadSpec spec = WorkloadSpec.builder(shape, n).seed(seed).build();
        SyntheticWorkload workload = new SyntheticWorkload(spec);
        ExactAttention attention = ExactAttention.of(shape);
        Map<String, Cell[]> cells = new LinkedHashMap<>();
        int[] budgetTokens = new int[budgets.length];
        for (int b = 0; b < budgets.length; b++) {
            budgetTokens[b] = (int) Math.max(1, Math.min(n, Math.round(budgets[b] * n)));
        }
        for (String s : strategies) {
            Cell[] row = new Cell[budgets.length];
            for (int b = 0; b < budgets.length; b++) {
                row[b] = new Cell(n, budgets[b], budgetTokens[b], s);
            }
            cells.put(s, row);
        }
        int firstScored = profiling.firstScored();
        for (int layer = 0; layer < layers; layer++) {
            DenseLayerKv kv = DenseLayerKv.materialize(workload.layer(layer), true);
            List<float[]> profile = profiling.queries(workload, layer);
            Strategies.Params params = new Strategies.Params(heads.queryHeads, window, seed + layer, sparqRank, spec.sinkTokens(), profile,
                    profiling.profileSparsity, swarmConfig);
            try (Arena arena = Arena.ofConfined()) {
                Map<String, BaselineSelector> selectors = new LinkedHashMap<>();
                for (String s : strategies) {
                    long t0 = System.nanoTime();
                    BaselineSelector sel = Strategies.build(s, kv, params, arena);
                    long t1 = System.nanoTime();
                    selectors.put(s, sel);
                    for (Cell c : cells.get(s)) {
                        c.buildNanos += t1 - t0;
                        c.indexBytes += sel.indexBytes();
                        c.builds++;
                    }
                    ProgressBars.step(bar);
                }
                int most = 0;
                for (BaselineSelector sel : selectors.values()) {
                    for (int bt : budgetTokens) {
                        most = Math.max(most, sel.maxSelected(bt));
                    }
                }
                int[] out = new int[most];
                float[] first = workload.query(layer, firstScored);
                for (Map.Entry<String, BaselineSelector> e : selectors.entrySet()) { // JIT warm-up, untimed
                    for (int w = 0; w < warmup; w++) {
                        for (int bt : budgetTokens) {
                            e.getValue().select(first, bt, out);
                        }
                    }
                }
                for (int s = 0; s < steps; s++) {
                    float[] q = workload.query(layer, firstScored + s);
                    ExactAttention.Result exact = attention.compute(kv, q);
                    for (Map.Entry<String, BaselineSelector> e : selectors.entrySet()) {
                        BaselineSelector sel = e.getValue();
                        Cell[] row = cells.get(e.getKey());
                        for (int b = 0; b < budgetTokens.length; b++) {
                            long t0 = System.nanoTime();
                            int count = sel.select(q, budgetTokens[b], out);
                            long t1 = System.nanoTime();
                            int[] chosen = Arrays.copyOf(out, count);
                            Cell c = row[b];
                            c.latency.add(t1 - t0);
                            c.scoredBytes += sel.lastScoredBytes();
                            c.selected += count;
                            c.blocks += distinctBlocks(chosen, block);
                            c.mass += QualityMetrics.attentionMassRecall(exact.weights(), chosen);
                            c.topK += QualityMetrics.topKRecall(exact.weights(), chosen, budgetTokens[b]);
                            c.error += QualityMetrics.relativeError(exact.output(), attention.sparseOutput(kv, q, chosen));
                        }
                    }
                    ProgressBars.step(bar);
                }
            }
        }
        List<Cell> result = new ArrayList<>();
        for (int b = 0; b < budgets.length; b++) {
            for (Cell[] row : cells.values()) {
                result.add(row[b]);
            }
        }
        return result;
    }

    /** Distinct {@code block}-token blocks holding the chosen tokens: the reads of a block-granular store. */
    static int distinctBlocks(int[] tokens, int block) {
        int[] b = new int[tokens.length];
        for (int i = 0; i < tokens.length; i++) {
            b[i] = tokens[i] / block;
        }
        Arrays.sort(b);
        int distinct = 0;
        for (int i = 0; i < b.length; i++) {
            if (i == 0 || b[i] != b[i - 1]) {
                distinct++;
            }
        }
        return distinct;
    }

    private void print(PrintWriter out, KvShape shape, int n, List<Cell> cells) {
        long kvBytes = (long) n * shape.entryBytes(); // one layer's K and V in BF16
        out.printf(Locale.ROOT, "### %,d tokens: quality and reads per decoding step (mean over %d layers × %d steps)%n%n",
                n, layers, steps);
        out.println("| budget | strategy | tokens selected | mass recall ↑ | top-k recall ↑ | output rel. err ↓ "
                + "| select µs (median) | " + block + "-token blocks read | MiB read | read amp. | scored MiB/step |");
        out.println("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (Cell c : cells) {
            int k = c.latency.size();
            double blocks = c.blocks / k;
            out.printf(Locale.ROOT, "| %s%% (%,d) | %s | %,.0f | %.3f | %.3f | %.3f | %,.0f | %,.0f | %.2f | %.2f | %.2f |%n",
                    CompareReport.pct(c.share), c.budget, c.strategy, c.selected / k, c.mass / k, c.topK / k, c.error / k, c.latency.medianMicros(),
                    blocks, blocks * block * shape.entryBytes() / MIB, blocks * block / (c.selected / k),
                    c.scoredBytes / k / MIB);
        }
        out.printf(Locale.ROOT, "%n### %,d tokens: index per layer (KV of one layer: %.1f MiB in BF16)%n%n", n, kvBytes / MIB);
        out.println("| strategy | index MiB | index / KV | build s |");
        out.println("|---|---:|---:|---:|");
        for (Cell c : cells) {
            if (c.share != cells.get(0).share) {
                continue; // the index does not depend on the budget
            }
            double index = c.indexBytes / (double) c.builds;
            out.printf(Locale.ROOT, "| %s | %.2f | %.1f%% | %.2f |%n", c.strategy, index / MIB, 100 * index / kvBytes,
                    c.buildNanos / 1e9 / c.builds);
        }
        out.println();
        out.flush();
    }

    private static final double MIB = 1024.0 * 1024.0;

    private void writeCsv(Path path, KvShape shape, List<Cell> cells) {
        StringBuilder sb = new StringBuilder("tokens,budget_share,budget_tokens,strategy,layers,steps,tokens_selected,"
                + "mass_recall,topk_recall,output_rel_error,select_us_median,blocks_read,bytes_read,read_amplification,"
                + "scored_bytes_per_step,index_bytes,build_seconds\n");
        for (Cell c : cells) {
            int k = c.latency.size();
            double blocks = c.blocks / k;
            sb.append(String.format(Locale.ROOT, "%d,%s,%d,%s,%d,%d,%.1f,%.5f,%.5f,%.5f,%.1f,%.1f,%.0f,%.4f,%.0f,%d,%.4f%n",
                    c.tokens, c.share, c.budget, c.strategy, layers, steps, c.selected / k, c.mass / k, c.topK / k,
                    c.error / k, c.latency.medianMicros(), blocks, blocks * block * shape.entryBytes(),
                    blocks * block / (c.selected / k), c.scoredBytes / k, c.indexBytes / c.builds,
                    c.buildNanos / 1e9 / c.builds));
        }
        try {
            Path parent = path.toAbsolutePath().getParent();
            if (parent != null) {
                Files.createDirectories(parent);
            }
            Files.writeString(path, sb.toString(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + path, e);
        }
    }

    /**
     * Swarm's offline phase as compare-quality runs it: {@link SwarmProfileOptions}, plus which
     * decoding steps it profiles and on how many threads ({@link ProfileStepOptions}) and how sparse a
     * profiled query is.
     */
    static final class Profiling {
        @Mixin
        SwarmProfileOptions swarm = new SwarmProfileOptions();

        @Mixin
        ProfileStepOptions schedule = new ProfileStepOptions();

        @Option(names = "--profile-sparsity", defaultValue = "0.1",
                description = "Share of tokens a profiled query activates (default: ${DEFAULT-VALUE}).")
        double profileSparsity;

        /** Swarm's clustering: radius {@code --tau}, on up to 256 of {@code --threads} threads. */
        ClusteringConfig config() {
            return ClusteringConfig.defaults().withRadius(swarm.radius()).withParallelism(Math.min(256, schedule.threads()));
        }

        /** The profiled queries of {@code layer}: every {@code --profile-stride}th decoding step from 0. */
        List<float[]> queries(SyntheticWorkload workload, int layer) {
            return schedule.queries(workload, layer, swarm.profileQueries);
        }

        /** The first scored step: decoding continues after the profiled steps. */
        int firstScored() {
            return schedule.firstScored(swarm.profileQueries);
        }
    }
}
