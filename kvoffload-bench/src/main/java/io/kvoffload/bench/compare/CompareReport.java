package io.kvoffload.bench.compare;

import io.kvoffload.KvShape;
import io.kvoffload.LatencyHistogram;
import io.kvoffload.bench.compare.CompareCommand.Row;
import io.kvoffload.bench.compare.IoStrategies.Strategy;
import io.kvoffload.bench.report.CsvWriter;
import io.kvoffload.bench.report.MarkdownTable;
import io.kvoffload.bench.report.Plots;
import io.kvoffload.strategy.swarm.ClusterSummary;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What {@code kvo bench compare} writes once its rows are measured: {@code compare.csv}, the plots
 * and {@code summary.md} in {@code --out}, and the tables the console and the demo print. Reads the
 * run's settings from its {@link CompareCommand}.
 */
final class CompareReport {
    private final CompareCommand cmd;
    private final KvShape shape;

    CompareReport(CompareCommand command, KvShape shape) {
        this.cmd = command;
        this.shape = shape;
    }

    static final double MIB = 1024.0 * 1024.0;

    /** Writes compare.csv, the plots and summary.md into {@code --out}. */
    void write(List<Row> rows, List<Strategy> chosen, double seconds, boolean fio) throws IOException {
        Files.createDirectories(cmd.report.out);
        try (CsvWriter csv = new CsvWriter(cmd.report.out.resolve("compare.csv"), "section", "tokens", "budget", "batch", "ssds",
                "simulated", "strategy", "rows_per_fetch", "mass_recall", "topk_recall", "output_rel_error",
                "select_us_median", "bytes_per_step", "reads_per_step", "io_ms_per_step", "effective_mib_s", "fio_mib_s",
                "effective_over_fio", "aggregate_mib_s", "steps_per_s", "cache_hit_rate", "dram_bytes", "index_bytes",
                "rows_checked", "row_mismatches", "co_activation_share", "fetch_p50_us", "fetch_p99_us",
                "fetch_p999_us", "io_p50_us", "io_p99_us", "io_p999_us")) {
            for (Row r : rows) {
                csv.row(r.section(), r.tokens(), r.budget(), r.batch(), r.ssds(), r.simulated(), r.strategy(),
                        f(r.rowsPerFetch(), 1), f(r.massRecall(), 4), f(r.topKRecall(), 4), f(r.outputError(), 4),
                        f(r.selectMicros(), 1), f(r.bytesPerStep(), 0), f(r.readsPerStep(), 1),
                        f(r.ioMillisPerStep(), 3), f(r.effectiveMiBs(), 1), f(r.fioMiBs(), 1), f(r.fioRatio(), 3),
                        f(r.aggregateMiBs(), 1), f(r.stepsPerSecond(), 2), f(r.cacheHitRate(), 3), r.dramBytes(),
                        r.indexBytes(), r.rowsChecked(), r.mismatches(), f(r.coActivationShare(), 4),
                        us(r.fetchLatency().p50Nanos()), us(r.fetchLatency().p99Nanos()),
                        us(r.fetchLatency().p999Nanos()), us(r.ioLatency().p50Nanos()), us(r.ioLatency().p99Nanos()),
                        us(r.ioLatency().p999Nanos()));
            }
        }
        Plots.headless();
        List<String> names = chosen.stream().map(Strategy::name).toList();
        List<Plots.Series> bw = new ArrayList<>();
        List<Plots.Series> quality = new ArrayList<>();
        List<Plots.Series> scale = new ArrayList<>();
        int largest = Arrays.stream(cmd.sizes).max().orElse(cmd.sizes[0]);
        for (String s : names) {
            List<Row> q = rows.stream().filter(r -> r.section().equals("quality") && r.strategy().equals(s)
                    && r.budget() == cmd.spend.budget).sorted(Comparator.comparingInt(Row::tokens)).toList();
            bw.add(new Plots.Series(s, q.stream().mapToDouble(Row::tokens).toArray(),
                    q.stream().mapToDouble(Row::effectiveMiBs).toArray()));
            List<Row> b = rows.stream().filter(r -> r.section().equals("quality") && r.strategy().equals(s)
                    && r.tokens() == largest).sorted(Comparator.comparingDouble(Row::budget)).toList();
            quality.add(new Plots.Series(s, b.stream().mapToDouble(r -> r.budget() * 100).toArray(),
                    b.stream().mapToDouble(Row::massRecall).toArray()));
            List<Row> c = rows.stream().filter(r -> r.section().equals("scaling") && r.strategy().equals(s))
                    .sorted(Comparator.comparingInt(Row::ssds)).toList();
            if (!c.isEmpty()) {
                scale.add(new Plots.Series(s + " (simulated)", c.stream().mapToDouble(Row::ssds).toArray(),
                        c.stream().mapToDouble(Row::aggregateMiBs).toArray(), s.startsWith("no-") || s.equals("medoid-only")));
            }
        }
        Plots.line(cmd.report.out.resolve("bandwidth-vs-prefix.png"), "Effective read bandwidth vs prefix length (budget "
                + pct(cmd.spend.budget) + "%, batch 1, " + cmd.devices + " directories on one disk)", "prefix tokens",
                "MiB/s (bytes read / I/O time)", bw, new Plots.LineOptions(true, false, true));
        Plots.line(cmd.report.out.resolve("quality-vs-budget.png"), "Attention-mass recall vs budget (" + largest + " tokens)",
                "budget (% of tokens)", "attention-mass recall", quality, Plots.LineOptions.DEFAULT);
        if (!scale.isEmpty()) {
            Plots.line(cmd.report.out.resolve("scaling-vs-ssds.png"), "Read throughput vs SSD count (SIMULATED high-end SSDs,"
                    + " device model)", "SSDs", "MiB/s read (aggregate)", scale, Plots.LineOptions.DEFAULT);
        }
        List<String> cats = new ArrayList<>(names);
        Map<String, double[]> io = new LinkedHashMap<>();
        for (int n : cmd.sizes) {
            double[] v = new double[cats.size()];
            for (int i = 0; i < cats.size(); i++) {
                String s = cats.get(i);
                v[i] = rows.stream().filter(r -> r.section().equals("quality") && r.strategy().equals(s)
                        && r.tokens() == n && r.budget() == cmd.spend.budget).mapToDouble(Row::ioMillisPerStep).findFirst()
                        .orElse(0);
            }
            io.put(n + " tokens", v);
        }
        Plots.bars(cmd.report.out.resolve("io-time-per-strategy.png"), "I/O time per decoding step (all layers, budget "
                + pct(cmd.spend.budget) + "%, batch 1)", "strategy", "ms per step", cats, io);
        Files.writeString(cmd.report.out.resolve("summary.md"), summary(rows, chosen, seconds, fio), StandardCharsets.UTF_8);
    }

    private String summary(List<Row> rows, List<Strategy> chosen, double seconds, boolean fio) {
        StringBuilder sb = new StringBuilder();
        sb.append("# Strategy comparison through the I/O path\n\n");
        sb.append(cmd.trace != null ? "Workload: trace `" + cmd.trace + "`.\n\n" : "Workload: family `" + cmd.family.name + "` ("
                + cmd.family.get().description() + "), seed " + cmd.seed + ".\n\n");
        sb.append("Every strategy spends the same budget of rows per step, sinks and window inside (`rows / fetch`;"
                + " Swarm's whole clusters and KVSwap's whole groups may round it).\n\n");
        double share = rows.stream().filter(r -> r.strategy().equals("swarm")).mapToDouble(Row::coActivationShare)
                .filter(v -> !Double.isNaN(v)).average().orElse(Double.NaN);
        if (!Double.isNaN(share)) {
            sb.append(String.format(Locale.ROOT, "Swarm: %.2f%% of tokens are in co-activation clusters (mean over"
                    + " layers and prefixes, τ = %.2f)%s.%n%n", 100 * share, cmd.swarm.tau,
                    share < ClusterSummary.LOW_CO_ACTIVATION_SHARE
                            ? " — **near zero: Swarm's index is in effect positional blocks**" : ""));
        }
        sb.append(String.format(Locale.ROOT, "%s: %d layers of %d query heads on %d KV heads × %d, BF16 (%d B entries);"
                + " %d decoding steps per run; sinks %d, window %d (DRAM); hot-cluster cache %.0f%% of a layer's KV;"
                + " %d SSD directories on one disk (measured); positional layout in %d-token clusters; KVSwap's"
                + " adapter rank %d; total %.0f s."
                + " DRAM MiB: the decoder's window, hot cache and KVSwap's reuse buffer and compressed K (also in index MiB)."
                + " fio: %s.%n%n", shape.fingerprint(), cmd.layers, cmd.heads.queryHeads, cmd.heads.kvHeads, cmd.heads.headDim, shape.entryBytes(), cmd.steps,
                cmd.local.sinks, cmd.local.window, cmd.store.cacheShare * 100, cmd.devices, cmd.group,
                cmd.store.kvswapRank(shape), seconds,
                fio ? "the fetch's reads replayed (io_uring, O_DIRECT): its size mix, random reads inside its"
                        + " sequence's extents, its reads in flight submitted and reaped as one burst, about "
                        + cmd.fioRuns.fioSeconds + " s" : "not run"));
        sb.append("Strategies:\n\n");
        for (Strategy s : chosen) {
            sb.append("- `").append(s.name()).append("`: ").append(s.description()).append('\n');
        }
        sb.append('\n');
        for (int n : cmd.sizes) {
            sb.append(String.format(Locale.ROOT, "## %,d tokens, budget %s%%, batch 1%n%n", n, pct(cmd.spend.budget)));
            sb.append(table(rows.stream().filter(r -> r.section().equals("quality") && r.tokens() == n
                    && r.budget() == cmd.spend.budget).toList(), true)).append('\n');
        }
        int largest = Arrays.stream(cmd.sizes).max().orElse(cmd.sizes[0]);
        MarkdownTable qb = new MarkdownTable(header("strategy", "mass recall", "output rel. err", "MiB / step"));
        for (Strategy s : chosen) {
            List<Object> cells = new ArrayList<>(List.of(s.name()));
            for (String metric : List.of("mass", "err", "mib")) {
                for (double b : cmd.spend.budgets) {
                    Row r = find(rows, "quality", largest, b, 1, cmd.devices, s.name());
                    cells.add(r == null ? "" : switch (metric) {
                        case "mass" -> f(r.massRecall(), 3);
                        case "err" -> f(r.outputError(), 3);
                        default -> f(r.bytesPerStep() / MIB, 2);
                    });
                }
            }
            qb.row(cells.toArray());
        }
        sb.append(String.format(Locale.ROOT, "## Quality and reads vs budget (%,d tokens)%n%n", largest))
                .append(qb.render()).append('\n');
        for (int n : cmd.sizes) {
            List<String> h = new ArrayList<>(List.of("strategy"));
            for (int b : cmd.batches) {
                h.add("batch " + b + " MiB/s");
                h.add("batch " + b + " steps/s");
            }
            MarkdownTable bt = new MarkdownTable(h.toArray(String[]::new));
            for (Strategy s : chosen) {
                List<Object> cells = new ArrayList<>(List.of(s.name()));
                for (int b : cmd.batches) {
                    Row r = find(rows, "batch", n, cmd.spend.budget, b, cmd.devices, s.name());
                    cells.add(r == null ? "" : f(r.aggregateMiBs(), 0));
                    cells.add(r == null ? "" : f(r.stepsPerSecond(), 1));
                }
                bt.row(cells.toArray());
            }
            sb.append(String.format(Locale.ROOT, "## Batch sizes (%,d tokens, budget %s%%; sequences decoded"
                    + " concurrently, aggregate over all; selection serialised per selector)%n%n", n, pct(cmd.spend.budget)))
                    .append(bt.render()).append('\n');
        }
        if (cmd.scaling.ssdCounts.length > 0) {
            List<String> h = new ArrayList<>(List.of("strategy"));
            for (int c : cmd.scaling.ssdCounts) {
                h.add(c + " SSD MiB/s");
            }
            h.add("steps/s at " + cmd.scaling.largest());
            MarkdownTable st = new MarkdownTable(h.toArray(String[]::new));
            for (Strategy s : chosen) {
                List<Object> cells = new ArrayList<>(List.of(s.name()));
                Row last = null;
                for (int c : cmd.scaling.ssdCounts) {
                    Row r = find(rows, "scaling", cmd.sizes[0], cmd.spend.budget, 1, c, s.name());
                    cells.add(r == null ? "" : f(r.aggregateMiBs(), 0));
                    last = r == null ? last : r;
                }
                cells.add(last == null ? "" : f(last.stepsPerSecond(), 1));
                st.row(cells.toArray());
            }
            sb.append(String.format(Locale.ROOT, "## SSD scaling — SIMULATED (%,d tokens, budget %s%%, batch 1): %s%n%n",
                    cmd.sizes[0], pct(cmd.spend.budget), cmd.scaling.model().describe(1)))
                    .append(st.render()).append('\n');
        }
        long checked = rows.stream().mapToLong(Row::rowsChecked).sum();
        long bad = rows.stream().mapToLong(Row::mismatches).sum();
        sb.append(String.format(Locale.ROOT, "Bit-exact: %,d view rows compared with the source KV, %d differed.%n",
                checked, bad));
        return sb.toString();
    }

    private String[] header(String first, String... metrics) {
        List<String> h = new ArrayList<>(List.of(first));
        for (String m : metrics) {
            for (double b : cmd.spend.budgets) {
                h.add(m + " @" + pct(b) + "%");
            }
        }
        return h.toArray(String[]::new);
    }

    private static Row find(List<Row> rows, String section, int n, double budget, int batch, int ssds, String s) {
        return rows.stream().filter(r -> r.section().equals(section) && r.tokens() == n && r.budget() == budget
                && r.batch() == batch && r.ssds() == ssds && r.strategy().equals(s)).findFirst().orElse(null);
    }

    /** The per-strategy table of quality and I/O per step (what the summary and the demo print). */
    public static String table(List<Row> rows, boolean full) {
        MarkdownTable t = full
                ? new MarkdownTable("strategy", "rows / fetch", "mass recall", "top-k recall", "output rel. err",
                        "select µs (median)", "MiB / step", "reads / step", "I/O ms / step", "eff. MiB/s", "fio MiB/s",
                        "eff / fio", "cache hit", "DRAM MiB", "index MiB")
                : new MarkdownTable("strategy", "mass recall", "output rel. err", "select µs", "MiB / step",
                        "reads / step", "I/O ms / step", "eff / fio", "fetch ms p50/p99/p99.9");
        t.alignRight(java.util.stream.IntStream.range(1, full ? 15 : 9).toArray());
        for (Row r : rows) {
            if (full) {
                t.row(r.strategy(), f(r.rowsPerFetch(), 0), f(r.massRecall(), 3), f(r.topKRecall(), 3),
                        f(r.outputError(), 3), f(r.selectMicros(), 0), f(r.bytesPerStep() / MIB, 2),
                        f(r.readsPerStep(), 0), f(r.ioMillisPerStep(), 2), f(r.effectiveMiBs(), 0),
                        r.fioMiBs() > 0 ? f(r.fioMiBs(), 0) : "–", r.fioMiBs() > 0 ? f(r.fioRatio(), 2) : "–",
                        f(r.cacheHitRate(), 2), f(r.dramBytes() / MIB, 1), f(r.indexBytes() / MIB, 2));
            } else {
                t.row(r.strategy(), f(r.massRecall(), 3), f(r.outputError(), 3), f(r.selectMicros(), 0),
                        f(r.bytesPerStep() / MIB, 2), f(r.readsPerStep(), 0), f(r.ioMillisPerStep(), 2),
                        r.fioMiBs() > 0 ? f(r.fioRatio(), 2) : "–", percentiles(r.fetchLatency()));
            }
        }
        return t.render();
    }

    /** The batch-1 table at {@code budget}, for the console. */
    public static String summaryTable(List<Row> rows, double budget) {
        StringBuilder sb = new StringBuilder();
        rows.stream().filter(r -> r.section().equals("quality") && r.budget() == budget).mapToInt(Row::tokens)
                .distinct().forEach(n -> sb.append(String.format(Locale.ROOT, "%n%,d tokens, budget %s%%:%n%n", n,
                        pct(budget))).append(table(rows.stream().filter(r -> r.section().equals("quality")
                        && r.tokens() == n && r.budget() == budget).toList(), false)));
        return sb.toString();
    }

    /** {@code p50/p99/p99.9} in ms. */
    static String percentiles(LatencyHistogram h) {
        return h.count() == 0 ? "–" : String.format(Locale.ROOT, "%.2f/%.2f/%.2f", h.p50Nanos() / 1e6,
                h.p99Nanos() / 1e6, h.p999Nanos() / 1e6);
    }

    private static String us(long nanos) {
        return f(nanos / 1e3, 1);
    }

    static String f(double v, int decimals) {
        return Double.isNaN(v) ? "" : String.format(Locale.ROOT, "%." + decimals + "f", v);
    }

    static String pct(double share) {
        double p = share * 100;
        return p == Math.rint(p) ? String.valueOf((long) p) : String.format(Locale.ROOT, "%.1f", p);
    }
}
