package io.kvoffload.bench.compare;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.bench.cli.KvoMain;
import io.kvoffload.bench.report.CsvWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code kvo bench compare-sweep} at a tiny size: every cell and strategy reported, relative to the oracle of its cell. */
class SweepCommandTest {
    @TempDir
    Path root;

    @Test
    void everyFamilyShapeAndStrategyIsReportedRelativeToTheOracle() throws Exception {
        Path out = root.resolve("out");
        int code = KvoMain.run("compare-sweep", "--families", "default,control", "--shapes", "mha,gqa4",
                "--head-dims", "64", "--query-heads", "4", "--tokens", "2048", "--budgets", "0.2,0.3", "--budget", "0.2", "--steps", "1",
                "--profile-queries", "8", "--strategies", "oracle,quest,kvswap,swarm", "--backend", "portable",
                "--kvswap-rank", "8", "--work", root.toString(), "--out", out.toString());
        assertEquals(0, code);
        List<List<String>> csv = CsvWriter.read(out.resolve("sweep.csv"));
        List<String> h = csv.get(0);
        assertEquals(1 + 2 * 2 * 2 * 4, csv.size(), "families × shapes × budgets × strategies rows");
        for (List<String> r : csv.subList(1, csv.size())) {
            if (r.get(h.indexOf("strategy")).equals("oracle")) {
                assertEquals(1.0, Double.parseDouble(r.get(h.indexOf("recall_over_oracle"))), 1e-9);
                assertEquals(1.0, Double.parseDouble(r.get(h.indexOf("bytes_over_oracle"))), 1e-9);
            }
            double recall = Double.parseDouble(r.get(h.indexOf("mass_recall")));
            assertTrue(recall > 0 && recall <= 1.0 + 1e-6, r.toString());
        }
        for (String cell : List.of("default-mha-d64", "default-gqa4-d64", "control-mha-d64", "control-gqa4-d64")) {
            assertTrue(Files.size(out.resolve("recall-vs-bytes-" + cell + ".png")) > 1000, cell);
            String summary = Files.readString(out.resolve(cell).resolve("summary.md"), StandardCharsets.UTF_8);
            assertTrue(summary.contains("KVSwap's adapter rank 8"), cell + ": the sweep's options reach each cell");
        }
        String md = Files.readString(out.resolve("sweep.md"), StandardCharsets.UTF_8);
        assertTrue(md.contains("| control | swarm |") && md.contains("mha d64: recall (× oracle)"), md);
        assertTrue(md.contains("token-striped, cache 5% of a layer, KVSwap's rank 8"), md);
    }

    @Test
    void anUnknownFamilyNamesTheAllowedOnes() {
        int code = KvoMain.run("compare-sweep", "--families", "llama", "--out", root.toString());
        assertTrue(code != 0);
    }
}
