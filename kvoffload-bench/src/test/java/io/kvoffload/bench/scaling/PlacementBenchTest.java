package io.kvoffload.bench.scaling;

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

/**
 * {@code kvo placement} end to end on a tiny configuration: both placements, every pattern (pages,
 * tokens, KVSwap, SparF), every row bit-exact; {@code --patterns} measures only the ones named.
 */
class PlacementBenchTest {
    @TempDir
    Path dir;

    @Test
    void measuresBothPlacementsBitExact() throws Exception {
        Path out = dir.resolve("report");
        int rc = KvoMain.run("placement", "--tokens", "512", "--kv-heads", "4", "--head-dim", "32", "--steps", "2",
                "--rounds", "1", "--ssd-counts", "1,2", "--real-devices", "2", "--backend", "portable", "--work",
                dir.toString(), "--out", out.toString());
        assertEquals(0, rc);
        List<List<String>> rows = CsvWriter.read(out.resolve("placement.csv"));
        // 3 settings × 4 patterns × 2 placements × 1 round.
        assertEquals(1 + 24, rows.size(), rows.toString());
        assertEquals(java.util.Set.of("PAGES", "TOKENS", "KVSWAP", "SPARF"),
                rows.subList(1, rows.size()).stream().map(r -> r.get(3)).collect(java.util.stream.Collectors.toSet()));
        int bad = rows.get(0).indexOf("row_mismatches");
        int checked = rows.get(0).indexOf("rows_checked");
        for (List<String> r : rows.subList(1, rows.size())) {
            assertEquals("0", r.get(bad), r.toString());
            assertTrue(Long.parseLong(r.get(checked)) > 0, r.toString());
        }
        String summary = Files.readString(out.resolve("summary.md"), StandardCharsets.UTF_8);
        assertTrue(summary.contains("(simulated)") && summary.contains("real 2") && summary.contains("KVSwap")
                && summary.contains("SparF"), summary);
        rc = KvoMain.run("placement", "--tokens", "512", "--kv-heads", "4", "--head-dim", "32", "--steps", "1",
                "--rounds", "1", "--ssd-counts", "2", "--real-devices", "0", "--backend", "portable", "--patterns",
                "KVSWAP", "--work", dir.toString(), "--out", out.toString());
        assertEquals(0, rc);
        rows = CsvWriter.read(out.resolve("placement.csv"));
        assertEquals(1 + 2, rows.size(), "KVSwap on 2 SSDs, both placements: " + rows);
        assertEquals("KVSWAP", rows.get(1).get(3));
    }
}
