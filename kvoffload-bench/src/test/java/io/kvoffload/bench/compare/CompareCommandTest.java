package io.kvoffload.bench.compare;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.bench.cli.KvoMain;
import io.kvoffload.bench.report.CsvWriter;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
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

    @Test
    void badOptionsNameTheOptionValueAndRange() {
        PrintStream old = System.err;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        int code;
        try {
            System.setErr(new PrintStream(buf, true, StandardCharsets.UTF_8));
            code = KvoMain.run("compare", "--budgets", "1.5", "--out", root.toString());
        } finally {
            System.setErr(old);
        }
        assertTrue(code != 0);
        assertTrue(buf.toString(StandardCharsets.UTF_8).contains("--budgets = 1.5 is out of range; allowed: (0, 1]"),
                buf.toString(StandardCharsets.UTF_8));
    }
}
