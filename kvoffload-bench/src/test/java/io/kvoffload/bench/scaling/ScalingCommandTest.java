package io.kvoffload.bench.scaling;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.bench.cli.KvoMain;
import io.kvoffload.bench.report.CsvWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code kvo scaling} end to end on a tiny configuration: CSV, PNG and summary, simulated rows labelled. */
class ScalingCommandTest {
    @TempDir
    Path dir;

    @Test
    void writesLabelledCsvPlotAndSummary() throws Exception {
        Path out = dir.resolve("report");
        int rc = KvoMain.run("scaling", "--work", dir.toString(), "--devices", "1,2", "--profiles", "high-end,none",
                "--pool", "16MiB", "--seconds", "0.2", "--batch", "16", "--inflight", "2", "--host-bandwidth",
                "400MB", "--host-iops", "40000", "--no-progress", "--out", out.toString());
        assertEquals(0, rc);
        List<List<String>> rows = CsvWriter.read(out.resolve("scaling.csv"));
        assertEquals(5, rows.size(), rows.toString());
        List<String> header = rows.get(0);
        int series = header.indexOf("series");
        int simulated = header.indexOf("simulated");
        int gbps = header.indexOf("bandwidth_GBps");
        int ceiling = header.indexOf("model_ceiling_GBps");
        for (List<String> r : rows.subList(1, rows.size())) {
            boolean sim = Boolean.parseBoolean(r.get(simulated));
            assertEquals(sim, r.get(series).contains("(simulated)"), "every simulated row says so: " + r);
            assertTrue(Double.parseDouble(r.get(gbps)) > 0, r.toString());
            if (sim) {
                // The model can only slow reads down: never faster than its own limit.
                assertTrue(Double.parseDouble(r.get(gbps)) <= Double.parseDouble(r.get(ceiling)) * 1.05, r.toString());
            }
        }
        assertNotNull(ImageIO.read(out.resolve("scaling.png").toFile()));
        String md = Files.readString(out.resolve("summary.md"));
        assertTrue(md.contains("# Multi-SSD scaling (simulated)") && md.contains("**Simulated figures.**"), md);
        assertTrue(md.contains("./kvo bench scaling"), md);
        try (var left = Files.list(dir)) {
            assertEquals(List.of(out), left.toList(), "temporary device directories are removed");
        }
    }

    @Test
    void badOptionsNameTheOptionAndRange() {
        assertEquals(2, KvoMain.run("scaling", "--devices", "0", "--no-progress", "--out", dir.toString()));
        assertEquals(2, KvoMain.run("scaling", "--profiles", "mid-range", "--no-progress", "--out", dir.toString()));
    }
}
