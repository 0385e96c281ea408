package io.kvoffload.bench.scaling;

import io.kvoffload.DType;
import io.kvoffload.DecodeOptions;
import io.kvoffload.DecodeStats;
import io.kvoffload.DeviceModelSpec;
import io.kvoffload.KvConfig;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.Placement;
import io.kvoffload.bench.TempDirs;
import io.kvoffload.bench.cli.KvHeadOptions;
import io.kvoffload.bench.cli.ReportOptions;
import io.kvoffload.bench.cli.SimulatedSsdOptions;
import io.kvoffload.bench.report.CsvWriter;
import io.kvoffload.bench.report.MarkdownTable;
import io.kvoffload.bench.report.Medians;
import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.strategy.Strategies;
import io.kvoffload.strategy.kvswap.KvSwap;
import io.kvoffload.strategy.sparf.SparF;
import io.kvoffload.strategy.swarm.Swarm;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Head-sharded against token-striped placement ({@link Placement}) on the decode path: under each
 * placement one sequence laid out in the default page layout, one in KVSwap's groups and one in
 * SparF's layouts (page groups and the dimension-major K); then the same fetches (each step
 * {@code --budget} of the tokens: whole 16-token pages or scattered single tokens from the page
 * layout, KVSwap's predicted groups without a reuse buffer, SparF's two steps) decoded from them,
 * in paired rounds that alternate which placement goes first. Reports
 * fetches per second, useful MiB/s (view rows × entry size over wall time) and MiB read per fetch
 * (what the aligned reads of small head-group shards cost), on 1, 2, 4, 8 SSDs behind the device
 * model (<em>simulated</em>, the high-end profile scaled so that 8 fit this disk) and on real
 * directories without a model. Every view row is compared with the source KV.
 */
@Command(name = "placement", mixinStandardHelpOptions = true,
        description = "Head-sharded vs token-striped placement: decode fetch throughput (page and token fetches,"
                + " KVSwap, SparF) at 1/2/4/8 simulated SSDs and on real directories (paired rounds, medians). Writes placement.csv and summary.md to --out.")
public final class PlacementBench implements Callable<Integer> {
    @Option(names = "--tokens", defaultValue = "16384", description = "Tokens of the sequence (default: ${DEFAULT-VALUE}).")
    int tokens;

    @Mixin
    KvHeadOptions heads = new KvHeadOptions(8, 128);

    @Option(names = "--budget", defaultValue = "0.1", description = "Share of tokens each fetch reads (default: ${DEFAULT-VALUE}).")
    double budget;

    @Option(names = "--steps", defaultValue = "16", description = "Timed fetches per run (default: ${DEFAULT-VALUE}).")
    int steps;

    @Option(names = "--rounds", defaultValue = "3", description = "Paired rounds (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Mixin
    SimulatedSsdOptions simulated = new SimulatedSsdOptions();

    @Option(names = "--real-devices", defaultValue = "4",
            description = "Directories measured without a model; 0 for none (default: ${DEFAULT-VALUE}).")
    int realDevices;

    @Mixin
    ReportOptions report = new ReportOptions("kvoffload-bench/target/reports/placement");

    @Option(names = "--patterns", split = ",", defaultValue = "PAGES,TOKENS,KVSWAP,SPARF",
            description = "Fetches measured: PAGES, TOKENS (positions from the page layout), KVSWAP, SPARF"
                    + " (default: ${DEFAULT-VALUE}).")
    Pattern[] patterns;

    @Option(names = "--seed", defaultValue = "15", description = "Seed of the KV and the fetches (default: ${DEFAULT-VALUE}).")
    long seed;

    /** Which tokens a fetch asks for, from which layout. */
    enum Pattern {
        /** Whole consecutive pages of 16 tokens (what page selectors such as Quest fetch). */
        PAGES("whole 16-token pages"),
        /** Single tokens anywhere (what token selectors such as the oracle fetch). */
        TOKENS("scattered single tokens"),
        /** KVSwap's predicted groups of 4 from its group layout, no reuse buffer (every group read). */
        KVSWAP("KVSwap's predicted groups (G = 4, no reuse buffer)"),
        /** SparF's step 1 (the top-r dimension slices) and step 2 (the best page groups). */
        SPARF("SparF's two steps (dimension slices, then page groups)");

        final String title;

        Pattern(String title) {
            this.title = title;
        }

        /** Whether the strategy chooses the tokens from a query (else the bench names positions). */
        boolean predicted() {
            return this == KVSWAP || this == SPARF;
        }

        /** The sequence of {@code placement} this pattern reads (the positional patterns share the page layout). */
        String sequence(Placement placement) {
            String base = placement.name().toLowerCase(Locale.ROOT);
            return predicted() ? base + "-" + name().toLowerCase(Locale.ROOT) : base;
        }

        SelectionStrategy strategy() {
            return switch (this) {
                case KVSWAP -> KvSwap.defaults().withReuseSlots(0);
                case SPARF -> new SparF();
                default -> Swarm.defaults();
            };
        }
    }

    /** One run: a placement, a device setting and a pattern, over {@link #steps} fetches. */
    record Run(String setting, int ssds, boolean simulated, Pattern pattern, Placement placement, int round,
            double fetchesPerSecond, double usefulMiBs, double readMiBPerFetch, double readsPerFetch,
            long rowsChecked, long mismatches) {}

    private KvShape shape;
    private byte[] keys;
    private byte[] values;

    @Override
    public Integer call() throws Exception {
        if (tokens < 64 || !(budget > 0 && budget <= 1) || steps < 1 || rounds < 1 || realDevices < 0) {
            throw new IllegalArgumentException("--tokens = " + tokens + ", --budget = " + budget + ", --steps = " + steps
                    + ", --rounds = " + rounds + ", --real-devices = " + realDevices + "; allowed: tokens >= 64,"
                    + " budget in (0, 1], steps and rounds >= 1, real devices >= 0");
        }
        shape = new KvShape(1, heads.kvHeads * 4, heads.kvHeads, heads.headDim, DType.BF16);
        SplittableRandom rnd = new SplittableRandom(seed);
        keys = new byte[tokens * shape.halfEntryBytes()];
        values = new byte[keys.length];
        // Keys finite (KVSwap fits its adapter to them): uniform in [-1, 1) as BF16, little-endian.
        for (int i = 0; i < keys.length; i += 2) {
            int bits = Float.floatToRawIntBits((float) (rnd.nextDouble() * 2 - 1)) >>> 16;
            keys[i] = (byte) bits;
            keys[i + 1] = (byte) (bits >>> 8);
        }
        rnd.nextBytes(values);
        DeviceModelSpec model = simulated.model();
        List<Run> runs = new ArrayList<>();
        long start = System.nanoTime();
        for (int n : simulated.ssdCounts) {
            runs.addAll(measure("simulated", n, model));
        }
        if (realDevices > 0) {
            runs.addAll(measure("real", realDevices, null));
        }
        report(runs, model.describe(simulated.largest()), (System.nanoTime() - start) / 1e9);
        long bad = runs.stream().mapToLong(Run::mismatches).sum();
        return bad == 0 ? 0 : 1;
    }

    /** Both placements on {@code ssds} directories, paired rounds alternating which goes first. */
    private List<Run> measure(String setting, int ssds, DeviceModelSpec model) throws IOException {
        List<Run> out = new ArrayList<>();
        Path root = report.scratch("kvo-placement");
        try {
            List<Path> dirs = TempDirs.ssdDirectories(root, ssds);
            // Both layouts in one store (one sequence each), so both read the same files.
            try (KvEngine e = open(dirs, model, Placement.TOKEN_STRIPED)) {
                store(e, Placement.TOKEN_STRIPED);
            }
            try (KvEngine e = open(dirs, model, Placement.HEAD_SHARDED)) {
                store(e, Placement.HEAD_SHARDED);
            }
            try (KvEngine e = open(dirs, model, Placement.TOKEN_STRIPED)) {
                for (int round = 0; round < rounds; round++) {
                    for (Pattern p : patterns) {
                        Placement[] order = round % 2 == 0
                                ? new Placement[] {Placement.TOKEN_STRIPED, Placement.HEAD_SHARDED}
                                : new Placement[] {Placement.HEAD_SHARDED, Placement.TOKEN_STRIPED};
                        for (Placement pl : order) {
                            out.add(decode(e, setting, ssds, model != null, p, pl, round));
                        }
                    }
                }
            }
        } finally {
            TempDirs.deleteRecursively(root);
        }
        return out;
    }

    private KvEngine open(List<Path> dirs, DeviceModelSpec model, Placement placement) {
        long layer = (long) tokens * shape.entryBytes();
        // Per placement: the page layout, KVSwap's groups, SparF's pages and dual K, and their block extents.
        KvConfig.Builder b = report.config(dirs).placement(placement)
                .deviceCapacityBytes(((16 * layer) / dirs.size() + (64L << 20)) & -(1L << 20))
                .dramBudgetBytes(Math.max(1L << 30, 4 * layer));
        if (model != null) {
            b.deviceModel(model);
        }
        return KvEngine.open(b.build());
    }

    /** The sequences of {@code placement}: the default pages, KVSwap's groups and SparF's layouts, each committed. */
    private void store(KvEngine e, Placement placement) {
        for (Pattern p : new Pattern[] {Pattern.PAGES, Pattern.KVSWAP, Pattern.SPARF}) {
            if (java.util.Arrays.stream(patterns).noneMatch(q -> q.sequence(placement).equals(p.sequence(placement)))) {
                continue; // not measured
            }
            try (KvSequence s = e.createSequence(p.sequence(placement), shape)) {
                int[] ids = new int[tokens];
                for (int t = 0; t < tokens; t++) {
                    ids[t] = t % 32000;
                }
                s.appendTokens(ids);
                s.appendKv(0, MemorySegment.ofArray(keys), MemorySegment.ofArray(values));
                (p == Pattern.PAGES ? Strategies.named("quest") : p.strategy()).layOut(s, 0);
                s.commit();
            }
        }
    }

    private Run decode(KvEngine e, String setting, int ssds, boolean simulated, Pattern pattern, Placement placement,
            int round) {
        int want = (int) Math.max(1, Math.round(budget * tokens));
        DecodeOptions.Builder ob = DecodeOptions.builder().strategy(pattern.strategy()).cacheBytes(0).sinkTokens(0)
                .localWindow(0);
        DecodeOptions o = (pattern.predicted() ? ob.budgetTokens(want) : ob).build();
        // The same fetches for both placements: seeded by round and pattern only.
        SplittableRandom rnd = new SplittableRandom(seed * 31 + round * 7L + pattern.ordinal());
        try (KvSequence s = e.openSequence(pattern.sequence(placement)); KvDecoder d = s.decoder(o)) {
            int[] positions = new int[want];
            float[] query = new float[shape.queryHeads() * shape.headDim()];
            fill(positions, query, pattern, rnd);
            fetch(d, pattern, positions, query).await().close(); // untimed: opens the layer, warms the path
            DecodeStats before = d.stats();
            long rows = 0;
            long bad = 0;
            long t0 = System.nanoTime();
            for (int step = 0; step < steps; step++) {
                fill(positions, query, pattern, rnd);
                try (KvView v = fetch(d, pattern, positions, query)) {
                    v.await();
                    rows += v.tokenCount();
                    bad += check(v);
                }
            }
            double seconds = (System.nanoTime() - t0) / 1e9;
            DecodeStats st = d.stats().since(before);
            return new Run(setting, ssds, simulated, pattern, placement, round, steps / seconds,
                    rows * (double) shape.entryBytes() / seconds / MIB, st.bytesRead() / (double) steps / MIB,
                    st.readRequests() / (double) steps, rows, bad);
        }
    }

    private static final double MIB = 1024.0 * 1024.0;

    /** One fetch: the named positions, or the strategy's choice for the query. */
    private static KvView fetch(KvDecoder d, Pattern pattern, int[] positions, float[] query) {
        return pattern.predicted() ? d.prefetch(0, query) : d.prefetch(0, positions, positions.length);
    }

    /**
     * The next fetch: a random query (each element uniform in [-1, 1)) for a predicting strategy,
     * else {@code positions.length} distinct tokens, whole pages of 16 or single tokens.
     */
    private void fill(int[] positions, float[] query, Pattern pattern, SplittableRandom rnd) {
        if (pattern.predicted()) {
            for (int i = 0; i < query.length; i++) {
                query[i] = (float) (rnd.nextDouble() * 2 - 1);
            }
            return;
        }
        java.util.BitSet taken = new java.util.BitSet(tokens);
        int n = 0;
        while (n < positions.length) {
            if (pattern == Pattern.PAGES) {
                int page = rnd.nextInt(tokens / 16);
                if (taken.get(page * 16)) {
                    continue;
                }
                for (int i = 0; i < 16 && n < positions.length; i++) {
                    taken.set(page * 16 + i);
                    positions[n++] = page * 16 + i;
                }
            } else {
                int t = rnd.nextInt(tokens);
                if (!taken.get(t)) {
                    taken.set(t);
                    positions[n++] = t;
                }
            }
        }
    }

    /** Rows whose K or V differ from the source (must be 0). */
    private long check(KvView v) {
        int row = shape.headDim() * shape.dtype().bytes();
        MemorySegment k = MemorySegment.ofArray(keys);
        MemorySegment val = MemorySegment.ofArray(values);
        long bad = 0;
        for (int r = 0; r < v.tokenCount(); r++) {
            long base = (long) v.position(r) * shape.halfEntryBytes();
            for (int h = 0; h < shape.kvHeads(); h++) {
                if (v.keys(h).asSlice((long) r * row, row).mismatch(k.asSlice(base + (long) h * row, row)) != -1
                        || v.values(h).asSlice((long) r * row, row).mismatch(val.asSlice(base + (long) h * row, row))
                                != -1) {
                    bad++;
                    break;
                }
            }
        }
        return bad;
    }

    private void report(List<Run> runs, String modelDescription, double seconds) throws IOException {
        Files.createDirectories(report.out);
        try (CsvWriter csv = new CsvWriter(report.out.resolve("placement.csv"), "setting", "ssds", "simulated", "pattern",
                "placement", "round", "fetches_per_s", "useful_mib_s", "read_mib_per_fetch", "reads_per_fetch",
                "rows_checked", "row_mismatches")) {
            for (Run r : runs) {
                csv.row(r.setting(), r.ssds(), r.simulated(), r.pattern(), r.placement(), r.round(),
                        String.format(Locale.ROOT, "%.2f", r.fetchesPerSecond()),
                        String.format(Locale.ROOT, "%.1f", r.usefulMiBs()),
                        String.format(Locale.ROOT, "%.3f", r.readMiBPerFetch()),
                        String.format(Locale.ROOT, "%.1f", r.readsPerFetch()), r.rowsChecked(), r.mismatches());
            }
        }
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "# Head-sharded vs token-striped placement (%s)%n%n", LocalDate.now()));
        sb.append(String.format(Locale.ROOT, "%d tokens of one layer, %d KV heads × %d, BF16 (%d B entries), in the"
                + " default page layout, KVSwap's groups and SparF's layouts; each fetch %.0f%% of the tokens; %d timed"
                + " fetches per run, %d paired rounds"
                + " (medians); total %.0f s. Simulated: %s.%n%n", tokens, heads.kvHeads, heads.headDim, shape.entryBytes(),
                100 * budget, steps, rounds, seconds, modelDescription));
        for (Pattern p : patterns) {
            sb.append("## Fetches of ").append(p.title).append("\n\n");
            MarkdownTable t = new MarkdownTable("SSDs", "striped fetches/s", "sharded fetches/s", "sharded / striped",
                    "striped MiB/s", "sharded MiB/s", "striped MiB read / fetch", "sharded MiB read / fetch",
                    "striped reads / fetch", "sharded reads / fetch").alignRight(1, 2, 3, 4, 5, 6, 7, 8, 9);
            List<String> settings = runs.stream().map(r -> r.setting() + ":" + r.ssds()).distinct().toList();
            for (String key : settings) {
                List<Run> striped = runs.stream().filter(r -> (r.setting() + ":" + r.ssds()).equals(key)
                        && r.pattern() == p && r.placement() == Placement.TOKEN_STRIPED).toList();
                List<Run> sharded = runs.stream().filter(r -> (r.setting() + ":" + r.ssds()).equals(key)
                        && r.pattern() == p && r.placement() == Placement.HEAD_SHARDED).toList();
                List<Double> ratios = new ArrayList<>();
                for (int i = 0; i < Math.min(striped.size(), sharded.size()); i++) {
                    ratios.add(sharded.get(i).fetchesPerSecond() / striped.get(i).fetchesPerSecond());
                }
                Run first = striped.get(0);
                t.row((first.simulated() ? "" : "real ") + first.ssds() + (first.simulated() ? " (simulated)" : ""),
                        f(med(striped, Run::fetchesPerSecond), 1), f(med(sharded, Run::fetchesPerSecond), 1),
                        f(Medians.of(ratios), 2), f(med(striped, Run::usefulMiBs), 0), f(med(sharded, Run::usefulMiBs), 0),
                        f(med(striped, Run::readMiBPerFetch), 2), f(med(sharded, Run::readMiBPerFetch), 2),
                        f(med(striped, Run::readsPerFetch), 0), f(med(sharded, Run::readsPerFetch), 0));
            }
            sb.append(t.render()).append('\n');
        }
        long checked = runs.stream().mapToLong(Run::rowsChecked).sum();
        long bad = runs.stream().mapToLong(Run::mismatches).sum();
        sb.append(String.format(Locale.ROOT, "Bit-exact: %,d view rows compared with the source KV, %d differed.%n",
                checked, bad));
        Files.writeString(report.out.resolve("summary.md"), sb.toString(), StandardCharsets.UTF_8);
        System.out.print(sb);
    }

    private static double med(List<Run> runs, java.util.function.ToDoubleFunction<Run> f) {
        return Medians.of(runs.stream().map(r -> f.applyAsDouble(r)).toList());
    }

    private static String f(double v, int digits) {
        return String.format(Locale.ROOT, "%." + digits + "f", v);
    }
}
