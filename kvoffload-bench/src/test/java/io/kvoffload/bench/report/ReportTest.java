package io.kvoffload.bench.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Plots write decodable PNGs headless, CSV round-trips through {@link CsvWriter#read}, tables render. */
class ReportTest {
    @TempDir
    Path dir;

    @Test
    void lineAndBarChartsAreDecodablePngs() throws Exception {
        Path line = Plots.line(dir.resolve("plots/line.png"), "scaling (simulated)", "SSDs", "GB/s",
                List.of(new Plots.Series("high-end", new double[] {1, 2, 4, 8}, new double[] {0.1, 0.2, 0.4, 0.79}),
                        new Plots.Series("low-end", new double[] {1, 2, 4, 8}, new double[] {0.04, 0.08, 0.15, 0.3})),
                new Plots.LineOptions(true, false, true));
        Map<String, double[]> values = new LinkedHashMap<>();
        values.put("I/O ms", new double[] {3.5, 7.25, 1.0});
        Path bars = Plots.bars(dir.resolve("bars"), "I/O time per strategy", "strategy", "ms",
                List.of("swarm", "kvswap", "oracle"), values);
        assertEquals(dir.resolve("bars.png"), bars);
        for (Path p : List.of(line, bars)) {
            assertTrue(Files.size(p) > 1000, p + " is too small to be a chart");
            BufferedImage img = ImageIO.read(p.toFile());
            assertNotNull(img, p + " does not decode as an image");
            assertEquals(Plots.WIDTH, img.getWidth());
            assertEquals(Plots.HEIGHT, img.getHeight());
        }
        assertEquals("true", System.getProperty("java.awt.headless"));
        assertThrows(IllegalArgumentException.class, () -> new Plots.Series("bad", new double[] {1}, new double[0]));
    }

    @Test
    void csvRoundTripsQuotesCommasAndNumbers() throws Exception {
        Path f = dir.resolve("out/t.csv");
        try (CsvWriter w = new CsvWriter(f, "name", "value", "note")) {
            w.row("plain", 1.5, "a, b");
            w.row("quote \"q\"", 3.0, "line\nbreak");
            w.row("big", 123456789L, null);
            w.row("tiny", 1.0 / 3, "");
            assertThrows(IllegalArgumentException.class, () -> w.row("too few"));
        }
        List<List<String>> rows = CsvWriter.read(f);
        assertEquals(List.of(List.of("name", "value", "note"), List.of("plain", "1.5", "a, b"),
                List.of("quote \"q\"", "3", "line\nbreak"), List.of("big", "123456789", ""),
                List.of("tiny", "0.3333333", "")), rows);
    }

    @Test
    void markdownTableEscapesAndAligns() {
        String md = new MarkdownTable("SSDs", "GB/s | simulated").alignRight(0, 1).row(1, "0.10").row(8, "a|b")
                .render();
        assertEquals("""
                | SSDs | GB/s \\| simulated |
                |---:|---:|
                | 1 | 0.10 |
                | 8 | a\\|b |
                """, md);
        assertThrows(IllegalArgumentException.class, () -> new MarkdownTable("a").row(1, 2));
    }
}
