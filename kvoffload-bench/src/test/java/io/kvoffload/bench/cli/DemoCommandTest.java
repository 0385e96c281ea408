package io.kvoffload.bench.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The demo, small: it must finish OK and report a prefix match, checksums and bit-exact reads. */
class DemoCommandTest {
    @TempDir
    Path root;

    @Test
    void smallDemoVerifiesEverythingAndItsFlightRecordingHoldsTheEvents() throws Exception {
        Path jfr = root.resolve("demo.jfr");
        KvoRun run = KvoRun.of("demo", "--dirs", root.resolve("a") + "," + root.resolve("b"), "--layers", "2",
                "--tokens", "1000", "--read-rounds", "4", "--dram", "32MiB", "--compare-tokens", "2048",
                "--compare-steps", "1", "--jfr", jfr.toString());
        assertEquals(0, run.code(), run.toString());
        String out = run.out();
        assertTrue(out.contains("shares 750 tokens"), out);
        assertTrue(out.contains("checksums:") && out.contains(", 0 failed"), out);
        assertTrue(out.contains("bit-exact: 400 of 400 entries"), out);
        assertTrue(out.contains("| swarm |") && out.contains("| oracle |") && out.contains("| kvswap |"), out);
        assertTrue(out.contains("comparison bit-exact:"), out);
        assertTrue(out.contains("demo: OK"), out);
        assertTrue(out.contains("JFR: " + jfr), out);
        java.util.Map<String, Long> events = FlightRecording.count(jfr);
        assertTrue(events.getOrDefault("io.kvoffload.Commit", 0L) >= 2, events.toString()); // the demo's and compare's
        assertTrue(events.getOrDefault("io.kvoffload.Fetch", 0L) > 0, events.toString()); // compare decodes
        var fetch = jdk.jfr.consumer.RecordingFile.readAllEvents(jfr).stream()
                .filter(e -> e.getEventType().getName().equals("io.kvoffload.Fetch")).findFirst().orElseThrow();
        assertTrue(fetch.getLong("bytes") >= 0 && fetch.getInt("rows") > 0 && fetch.getLong("selectNanos") > 0,
                fetch.toString());
    }

    @Test
    void badOptionsNameTheOption() {
        KvoRun run = KvoRun.of("demo", "--dirs", root.toString(), "--sparsity", "2");
        assertTrue(run.code() != 0);
        assertTrue(run.err().contains("--sparsity = 2.0 is out of range"), run.toString());
    }
}
