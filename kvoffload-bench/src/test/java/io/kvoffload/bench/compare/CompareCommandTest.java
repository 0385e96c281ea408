package io.kvoffload.bench.compare;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.bench.cli.KvoMain;
import io.kvoffload.bench.cli.KvoRun;
import io.kvoffload.workload.TraceHeader;
import io.kvoffload.workload.TraceWriter;
import io.kvoffload.workload.Workload;
import io.kvoffload.workload.WorkloadFamily;
import io.kvoffload.bench.report.CsvWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvo compare} end to end at tiny sizes: every strategy runs through the decoder, every view
 * row is bit-exact against the source KV, and the CSV, the plots and the summary name every strategy.
 */
class CompareCommandTest {
    @TempDir
    Path root;

    @Test
    void everyStrategyReadsBitExactAndIsReported() throws Exception {
        String all = String.join(",", IoStrategies.ALL.stream().map(IoStrategies.Strategy::name).toList());
        Path out = root.resolve("out");
        int code = KvoMain.run("compare", "--sizes", "2048", "--layers", "1", "--steps", "2", "--budgets", "0.1",
                "--batches", "1,2", "--ssd-counts", "1,2", "--scaling-steps", "1", "--fio-seconds", "0",
                "--query-heads", "8", "--kv-heads", "2", "--head-dim", "64", "--profile-queries", "16",
                "--strategies", all, "--out", out.toString(), "--work", root.toString(), "--backend", "portable",
                "--no-progress");
        assertEquals(0, code);
        for (String png : List.of("bandwidth-vs-prefix.png", "quality-vs-budget.png", "scaling-vs-ssds.png",
                "io-time-per-strategy.png")) {
            assertTrue(Files.size(out.resolve(png)) > 1000, png);
        }
        List<List<String>> csv = CsvWriter.read(out.resolve("compare.csv"));
        List<String> header = csv.get(0);
        int strategy = header.indexOf("strategy");
        int checked = header.indexOf("rows_checked");
        int bad = header.indexOf("row_mismatches");
        int section = header.indexOf("section");
        String summary = Files.readString(out.resolve("summary.md"), StandardCharsets.UTF_8);
        for (IoStrategies.Strategy s : IoStrategies.ALL) {
            List<List<String>> rows = csv.stream().skip(1).filter(r -> r.get(strategy).equals(s.name())).toList();
            assertEquals(1 + 2 + 2, rows.size(), s.name() + ": one quality, two batch and two scaling rows");
            for (List<String> r : rows) {
                assertTrue(Long.parseLong(r.get(checked)) > 0, s.name() + " " + r.get(section) + " checked rows");
                assertEquals("0", r.get(bad), s.name() + " " + r.get(section) + ": view rows equal the source KV");
            }
            assertTrue(summary.contains("| " + s.name() + " |"), s.name() + " in summary.md");
        }
        assertTrue(summary.contains("SIMULATED"), summary);
        assertTrue(summary.contains(", 0 differed"), summary);
    }

    /**
     * With fio on, each fetch is compared with fio replaying reads of its own shape (size mix, data,
     * depth, bursts): every quality row at the I/O budget gets a fio figure (needs fio).
     */
    @Test
    void fioIsShapedLikeEachFetch() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(io.kvoffload.bench.fio.Fio.available(), "fio is not installed");
        Path out = root.resolve("fio-out");
        int code = KvoMain.run("compare", "--sizes", "2048", "--layers", "1", "--steps", "2", "--budgets", "0.1",
                "--batches", "1", "--ssd-counts", "1", "--scaling-steps", "1", "--fio-seconds", "1",
                "--fio-min-io-ms", "0", "--window", "16", "--cache-share", "0", "--query-heads", "8", "--kv-heads", "2", "--head-dim", "64", "--profile-queries", "16",
                "--strategies", "quest,kvswap", "--out", out.toString(), "--work", root.toString(), "--backend",
                "portable", "--no-progress");
        assertEquals(0, code);
        List<List<String>> csv = CsvWriter.read(out.resolve("compare.csv"));
        int fio = csv.get(0).indexOf("fio_mib_s");
        int section = csv.get(0).indexOf("section");
        List<List<String>> quality = csv.stream().skip(1).filter(r -> r.get(section).equals("quality")).toList();
        assertEquals(2, quality.size());
        for (List<String> r : quality) {
            assertTrue(Double.parseDouble(r.get(fio)) > 0, "fio ran like the fetch: " + r);
        }
    }

    /** A trace file runs through every strategy: its shape, length and queries, not the command's. */
    @Test
    void aTraceFileRunsEveryStrategy() throws Exception {
        KvShape shape = new KvShape(1, 4, 2, 64, DType.BF16);
        Workload w = WorkloadFamily.MIXED_HEADS.create(shape, 1024, 3);
        Path file = root.resolve("model.kvotrace");
        try (TraceWriter tw = new TraceWriter(file, new TraceHeader(1, 4, 2, 64, 1024, 8, DType.F16, true))) {
            float[][] q = new float[8][];
            for (int i = 0; i < q.length; i++) {
                q[i] = w.query(0, i);
            }
            tw.writeLayer(w.layer(0), q);
        }
        Path out = root.resolve("trace-out");
        int code = KvoMain.run("compare", "--trace", file.toString(), "--steps", "2", "--budgets", "0.1",
                "--batches", "1", "--ssd-counts", "1", "--scaling-steps", "1", "--fio-seconds", "0",
                "--profile-queries", "4", "--strategies", "oracle,quest,kvswap,swarm", "--out", out.toString(),
                "--work", root.toString(), "--backend", "portable", "--no-progress");
        assertEquals(0, code);
        String summary = Files.readString(out.resolve("summary.md"), StandardCharsets.UTF_8);
        assertTrue(summary.contains("Workload: trace") && summary.contains("v1:L1:Q4:H2:D64"), summary);
        assertTrue(summary.contains("| kvswap |") && summary.contains(", 0 differed"), summary);
    }

    /** Any family runs by name on a named head layout; a keys-only trace is refused by name. */
    @Test
    void aFamilyRunsOnAShapeAndAKeysOnlyTraceIsRefused() throws Exception {
        Path out = root.resolve("family-out");
        int code = KvoMain.run("compare", "--family", "control", "--shape", "gqa8", "--query-heads", "8", "--head-dim",
                "80", "--sizes", "1024", "--layers", "1", "--steps", "1", "--budgets", "0.1", "--batches", "1",
                "--ssd-counts", "1", "--scaling-steps", "1", "--fio-seconds", "0", "--profile-queries", "4",
                "--strategies", "oracle,kvswap,swarm", "--out", out.toString(), "--work", root.toString(),
                "--backend", "portable", "--no-progress");
        assertEquals(0, code);
        String summary = Files.readString(out.resolve("summary.md"), StandardCharsets.UTF_8);
        assertTrue(summary.contains("family `control`") && summary.contains("v1:L1:Q8:H1:D80"), summary);
        assertTrue(summary.contains("co-activation clusters"), summary);
        Path keysOnly = root.resolve("keys.kvotrace");
        KvShape shape = new KvShape(1, 4, 2, 64, DType.BF16);
        Workload w = WorkloadFamily.DEFAULT.create(shape, 1024, 3);
        try (TraceWriter tw = new TraceWriter(keysOnly, new TraceHeader(1, 4, 2, 64, 1024, 4, DType.F16, false))) {
            tw.writeLayer(w.layer(0), new float[][] {w.query(0, 0), w.query(0, 1), w.query(0, 2), w.query(0, 3)});
        }
        String err = KvoRun.of("compare", "--trace", keysOnly.toString(), "--out", root.toString()).err();
        assertTrue(err.contains("holds keys only"), err);
    }

    @Test
    void badOptionsNameTheOptionValueAndRange() {
        KvoRun run = KvoRun.of("compare", "--budgets", "1.5", "--out", root.toString());
        assertTrue(run.code() != 0);
        assertTrue(run.err().contains("--budgets = 1.5 is out of range; allowed: (0, 1]"), run.toString());
        KvoRun rank = KvoRun.of("compare", "--shape", "gqa8", "--query-heads", "8", "--kvswap-rank", "200",
                "--out", root.toString());
        assertTrue(rank.code() != 0);
        assertTrue(rank.err().contains("--kvswap-rank = 200 is out of range; allowed: 0..128"), rank.toString());
    }

    /**
     * {@code --kvswap-rank} reaches KVSwap's adapter: its compressed K cache (the index the CSV reports)
     * holds {@code rank} values a token, so doubling the rank doubles it; 0 is σ = 8, the run's header
     * names the rank used, and the views stay bit-exact.
     */
    @Test
    void kvswapRankSetsTheAdapterRank() throws Exception {
        long[] index = new long[3];
        int[] ranks = {8, 16, 0};
        for (int i = 0; i < ranks.length; i++) {
            Path out = root.resolve("rank-" + ranks[i]);
            KvoRun run = KvoRun.of("compare", "--shape", "gqa4", "--query-heads", "8", "--head-dim", "64",
                    "--sizes", "1024", "--layers", "1", "--steps", "1", "--budgets", "0.1", "--batches", "1",
                    "--ssd-counts", "1", "--scaling-steps", "1", "--fio-seconds", "0", "--strategies", "kvswap",
                    "--kvswap-rank", String.valueOf(ranks[i]), "--out", out.toString(), "--work", root.toString(),
                    "--backend", "portable", "--no-progress");
            assertEquals(0, run.code(), run.toString());
            assertTrue(run.out().contains("KVSwap rank " + (ranks[i] == 0 ? 16 : ranks[i])), run.out());
            List<List<String>> csv = CsvWriter.read(out.resolve("compare.csv"));
            int section = csv.get(0).indexOf("section"), bytes = csv.get(0).indexOf("index_bytes");
            int bad = csv.get(0).indexOf("row_mismatches");
            List<String> quality = csv.stream().skip(1).filter(r -> r.get(section).equals("quality")).findFirst().orElseThrow();
            assertEquals("0", quality.get(bad), "view rows equal the source KV");
            index[i] = Long.parseLong(quality.get(bytes));
        }
        assertTrue(index[0] > 0 && index[1] == 2 * index[0], java.util.Arrays.toString(index));
        assertEquals(index[1], index[2], "0: 2 KV heads × 64 / 8 = rank 16");
    }
}
