package io.kvoffload.bench.compare;

import io.kvoffload.bench.report.CsvWriter;
import io.kvoffload.bench.report.MarkdownTable;
import io.kvoffload.bench.report.Plots;
import io.kvoffload.workload.WorkloadFamily;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import io.kvoffload.bench.cli.ReportOptions;
import io.kvoffload.bench.cli.WorkloadOptions;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code compare} over every workload family and head layout (issue #16): per family × shape ×
 * head dimension it runs the comparison's quality section (batch 1, no scaling, no fio) through the
 * I/O path, and reports each strategy's attention-mass recall, output relative error and bytes read
 * per step, each also relative to the oracle's in the same cell, with the rows each one spent (the
 * shared budget, sinks and window inside). Writes sweep.csv, sweep.md and one recall–bytes PNG per
 * cell, each cell's own compare reports in a sub-folder.
 */
@Command(name = "compare-sweep", mixinStandardHelpOptions = true,
        description = "compare's quality section over workload families × shapes × head dims: recall, output error and"
                + " bytes per step, each relative to the oracle; writes sweep.csv, sweep.md and recall-vs-bytes PNGs.")
public final class SweepCommand implements Callable<Integer> {
    @Mixin
    WorkloadOptions workload = new WorkloadOptions(4096, 1, 24301);

    @Option(names = "--families", split = ",", completionCandidates = FamilyOption.Names.class,
            defaultValue = "default,mixed-heads,streaming-heads,retrieval-heads,long-documents,control",
            description = "Families (default: ${DEFAULT-VALUE}; allowed: ${COMPLETION-CANDIDATES}).")
    List<String> families;

    @Option(names = "--shapes", split = ",", defaultValue = "mha,gqa4,gqa8",
            description = "Head layouts (default: ${DEFAULT-VALUE}: KV heads = query heads, /4, /8).")
    List<String> shapes;

    @Option(names = "--head-dims", split = ",", defaultValue = "128",
            description = "Head dimensions (default: ${DEFAULT-VALUE}; the families also take 64, 80, 96).")
    int[] headDims;

    @Option(names = "--query-heads", defaultValue = "8",
            description = "Query heads (default: ${DEFAULT-VALUE}; MHA 8:8, GQA 4:1 8:2, GQA 8:1 8:1).")
    int queryHeads;

    @Mixin
    BudgetOptions spend = new BudgetOptions();

    @Option(names = "--steps", defaultValue = "3", description = "Decoding steps per run (default: ${DEFAULT-VALUE}).")
    int steps;

    @Option(names = "--profile-queries", defaultValue = "32",
            description = "Queries Swarm's offline phase profiles (default: ${DEFAULT-VALUE}).")
    int profileQueries;

    @Option(names = "--strategies", split = ",", defaultValue = "oracle,infllm,quest,pqcache,clusterkv,kvswap,swarm,mass-auto,mass-mix,swarm-mass",
            description = "Strategies; the first must be oracle (default: ${DEFAULT-VALUE}).")
    List<String> strategies;

    @Mixin
    StoreOptions store = new StoreOptions();

    @Mixin
    ReportOptions report = new ReportOptions("kvoffload-bench/target/reports/compare-sweep");

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** One strategy in one cell at one budget. */
    record Cell(String family, String shape, int headDim, int tokens, double budget, CompareCommand.Row row,
            CompareCommand.Row oracle) {
        double recallRatio() { return row.massRecall() / oracle.massRecall(); }
        double errorRatio() { return row.outputError() / oracle.outputError(); }
        double bytesRatio() { return row.bytesPerStep() / oracle.bytesPerStep(); }
        /** Rows read per step over the shared budget ⌈budget × tokens⌉ (sinks and window inside). */
        double rowsOverBudget() { return row.rowsPerFetch() / Math.ceil(budget * tokens); }
    }

    @Override
    public Integer call() throws Exception {
        PrintWriter pw = spec.commandLine().getOut();
        if (strategies.isEmpty() || !strategies.get(0).equals("oracle")) {
            throw new IllegalArgumentException("--strategies = " + strategies + "; allowed: a list starting with oracle"
                    + " (every figure is also given relative to it)");
        }
        families.forEach(WorkloadFamily::byName);
        shapes.forEach(s -> CompareCommand.kvHeadsFor(s, queryHeads));
        long t0 = System.nanoTime();
        List<Cell> cells = new ArrayList<>();
        long bad = 0;
        for (String family : families) {
            for (String shape : shapes) {
                for (int d : headDims) {
                    String name = family + "-" + shape + "-d" + d;
                    List<String> args = new ArrayList<>(List.of("--family", family, "--shape", shape,
                            "--query-heads", String.valueOf(queryHeads), "--head-dim", String.valueOf(d),
                            "--sizes", String.valueOf(workload.tokens),
                            "--steps", String.valueOf(steps), "--layers", String.valueOf(workload.layers),
                            "--profile-queries", String.valueOf(profileQueries), "--strategies", String.join(",", strategies),
                            "--seed", String.valueOf(workload.seed), "--fio-seconds", "0", "--backend", report.backend,
                            "--out", report.out.resolve(name).toString(), "--no-progress"));
                    args.addAll(spend.args());
                    args.addAll(store.args());
                    if (report.work != null) {
                        args.addAll(List.of("--work", report.work.toString()));
                    }
                    CompareCommand c = new CompareCommand();
                    new CommandLine(c).parseArgs(args.toArray(String[]::new));
                    c.batches = new int[0]; // the quality section only
                    c.scaling.ssdCounts = new int[0];
                    List<CompareCommand.Row> rows = c.execute(pw);
                    bad += rows.stream().mapToLong(CompareCommand.Row::mismatches).sum();
                    for (double b : spend.budgets) {
                        CompareCommand.Row oracle = rows.stream().filter(r -> r.budget() == b
                                && r.strategy().equals("oracle")).findFirst().orElseThrow();
                        for (CompareCommand.Row r : rows) {
                            if (r.budget() == b && r.section().equals("quality")) {
                                cells.add(new Cell(family, shape, d, workload.tokens, b, r, oracle));
                            }
                        }
                    }
                    plot(name, cells.stream().filter(x -> x.family().equals(family) && x.shape().equals(shape)
                            && x.headDim() == d).toList());
                }
            }
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        write(cells, seconds);
        pw.println(table(cells, spend.budget));
        pw.printf(Locale.ROOT, "compare-sweep: %d cells in %.0f s; reports in %s%n", families.size() * shapes.size()
                * headDims.length, seconds, report.out.toAbsolutePath());
        pw.flush();
        return bad == 0 ? 0 : 1;
    }

    /** Recall against MiB read per step, one curve per strategy over the budgets. */
    private void plot(String name, List<Cell> cells) throws IOException {
        Plots.headless();
        List<Plots.Series> series = new ArrayList<>();
        for (String s : strategies) {
            List<Cell> pts = cells.stream().filter(c -> c.row().strategy().equals(s))
                    .sorted(Comparator.comparingDouble(Cell::budget)).toList();
            series.add(new Plots.Series(s, pts.stream().mapToDouble(c -> c.row().bytesPerStep() / MIB).toArray(),
                    pts.stream().mapToDouble(c -> c.row().massRecall()).toArray()));
        }
        Plots.line(report.out.resolve("recall-vs-bytes-" + name + ".png"), "Attention-mass recall vs bytes read (" + name
                + ", " + workload.tokens + " tokens, budgets " + spend.joined() + ")", "MiB read per step (all layers)",
                "attention-mass recall", series, Plots.LineOptions.DEFAULT);
    }

    private void write(List<Cell> cells, double seconds) throws IOException {
        Files.createDirectories(report.out);
        try (CsvWriter csv = new CsvWriter(report.out.resolve("sweep.csv"), "family", "shape", "head_dim", "tokens", "budget",
                "strategy", "rows_per_fetch", "rows_over_budget", "mass_recall", "recall_over_oracle", "output_rel_error",
                "error_over_oracle", "bytes_per_step", "bytes_over_oracle", "co_activation_share")) {
            for (Cell c : cells) {
                CompareCommand.Row r = c.row();
                csv.row(c.family(), c.shape(), c.headDim(), workload.tokens, c.budget(), r.strategy(), f(r.rowsPerFetch(), 1),
                        f(c.rowsOverBudget(), 3), f(r.massRecall(), 4), f(c.recallRatio(), 4), f(r.outputError(), 4),
                        f(c.errorRatio(), 3), f(r.bytesPerStep(), 0), f(c.bytesRatio(), 3), f(r.coActivationShare(), 4));
            }
        }
        String md = String.format(Locale.ROOT, "# compare-sweep%n%n%d query heads, %d tokens, %d layer(s), %d steps,"
                + " budgets %s, seed %d, %s, cache %.0f%% of a layer, KVSwap's rank %s; %.0f s.%n%n", queryHeads,
                workload.tokens, workload.layers, steps, spend.joined(), workload.seed, store.placement, store.cacheShare * 100,
                store.kvswapRankName(), seconds)
                + table(cells, spend.budget);
        Files.writeString(report.out.resolve("sweep.md"), md, StandardCharsets.UTF_8);
    }

    /**
     * The table at {@code budget}: one row per family and strategy, per shape (and head dim) the mass
     * recall, the output error and the bytes per step, each as value (× oracle), and the rows read per
     * step over the shared budget.
     */
    static String table(List<Cell> cells, double budget) {
        List<String> keys = cells.stream().map(c -> c.shape() + " d" + c.headDim()).distinct().toList();
        List<String> header = new ArrayList<>(List.of("family", "strategy"));
        for (String k : keys) {
            header.add(k + ": recall (× oracle)");
            header.add("rel. err (× oracle)");
            header.add("bytes × oracle");
            header.add("rows / budget");
        }
        MarkdownTable t = new MarkdownTable(header.toArray(String[]::new));
        t.alignRight(java.util.stream.IntStream.range(2, header.size()).toArray());
        List<String> families = cells.stream().map(Cell::family).distinct().toList();
        List<String> names = cells.stream().map(c -> c.row().strategy()).distinct().toList();
        for (String fam : families) {
            for (String s : names) {
                List<Object> row = new ArrayList<>(List.of(fam, s));
                for (String k : keys) {
                    Cell c = cells.stream().filter(x -> x.family().equals(fam) && x.row().strategy().equals(s)
                            && x.budget() == budget && (x.shape() + " d" + x.headDim()).equals(k)).findFirst().orElse(null);
                    if (c == null) {
                        row.addAll(List.of("", "", "", ""));
                        continue;
                    }
                    row.add(f(c.row().massRecall(), 3) + " (" + f(c.recallRatio(), 2) + ")");
                    row.add(f(c.row().outputError(), 3) + " (" + f(c.errorRatio(), 1) + ")");
                    row.add(f(c.bytesRatio(), 2));
                    row.add(f(c.rowsOverBudget(), 2));
                }
                t.row(row.toArray());
            }
        }
        return t.render();
    }

    private static final double MIB = 1024.0 * 1024.0;

    private static String f(double v, int decimals) {
        return CompareCommand.f(v, decimals);
    }
}
