package io.kvoffload.bench.batch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvoffload.bench.cli.KvoRun;
import io.kvoffload.bench.fio.Fio;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The batch bench at tiny sizes, so its reporting (batch totals of several decoders) never rots. */
class BatchBenchTest {
    @TempDir
    Path root;

    @Test
    void tinyBatchesReportBandwidthAgainstFio() {
        assumeTrue(Fio.available(), "fio is not installed (./kvo test and .ci/run install it as root on Debian)");
        KvoRun run = KvoRun.of("batch", "--batches", "1,2", "--tokens", "2048", "--layers", "2", "--devices", "2",
                "--seconds", "0.2", "--rounds", "1", "--fio-seconds", "1", "--dir", root.toString());
        assertEquals(0, run.code(), run.toString());
        String out = run.out();
        for (int b : new int[] {1, 2}) {
            Matcher row = Pattern.compile("\\| " + b + " \\| ([0-9]+) \\| ([0-9]+) \\| ([0-9.]+) \\|").matcher(out);
            assertTrue(row.find(), "no row for batch " + b + ":\n" + out);
            assertTrue(Double.parseDouble(row.group(1)) > 0, out);
            assertTrue(Double.parseDouble(row.group(2)) > 0, out);
        }
    }
}
