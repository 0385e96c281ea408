package io.kvoffload.bench.compare;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code kvo bench select-eval} at a tiny size, and its bytes-per-step model on hand-made sets. */
class SelectEvalCommandTest {
    @Test
    void reportsEveryStrategyAgainstTheOracle() {
        StringWriter text = new StringWriter();
        CommandLine cl = new CommandLine(new SelectEvalCommand());
        cl.setOut(new PrintWriter(text));
        int code = cl.execute("--tokens", "2048", "--layers", "1", "--steps", "2", "--query-heads", "8", "--kv-heads", "2",
                "--head-dim", "64", "--window", "64", "--family", "mixed-heads",
                "--strategies", "oracle,block-oracle,swarm,mass-mix,quest");
        assertEquals(0, code, text.toString());
        String out = text.toString();
        assertTrue(out.contains("| oracle | ") && out.contains("| 1.000 |"), out);
        for (String s : new String[] {"block-oracle", "swarm", "mass-mix", "quest"}) {
            assertTrue(out.contains("| " + s + " | "), s + " missing: " + out);
        }
        assertTrue(out.contains("without a JIT warm-up"), "the timing column says what it measures: " + out);
        StringWriter err = new StringWriter();
        cl.setErr(new PrintWriter(err));
        assertEquals(1, cl.execute("--budget", "1.5"), "a bad option fails the command");
        assertTrue(err.toString().contains("--budget = 1.5"), err.toString());
    }

    @Test
    void perHeadReferencesAndRecallPerHeadType() {
        StringWriter text = new StringWriter();
        CommandLine cl = new CommandLine(new SelectEvalCommand());
        cl.setOut(new PrintWriter(text));
        // The library's per-head strategies run as registered ones at the layout's head groups.
        String all = "oracle,head-oracle,head-oracle-pooled,block-oracle,head-block-oracle,mass-mix,head-mass-mix,"
                + "head-qmass-mix,mass-auto";
        int code = cl.execute("--tokens", "2048", "--layers", "1", "--steps", "2", "--query-heads", "8", "--kv-heads", "2",
                "--head-dim", "64", "--window", "64", "--family", "mixed-heads", "--head-groups", "2", "--strategies", all);
        assertEquals(0, code, text.toString());
        String out = text.toString();
        assertTrue(out.contains("streaming heads recall") && out.contains("retrieval heads recall"), out);
        for (String s : all.split(",")) {
            assertEquals(2, out.split("\\| " + s + " \\|", -1).length - 1, s + ": one row per table: " + out);
        }
        // At 100% budget every per-head reference attends every token of every head: recall 1, error 0.
        StringWriter full = new StringWriter();
        cl.setOut(new PrintWriter(full));
        assertEquals(0, cl.execute("--tokens", "512", "--layers", "1", "--steps", "1", "--query-heads", "4", "--kv-heads", "2",
                "--head-dim", "32", "--window", "64", "--budget", "1", "--family", "mixed-heads", "--head-groups", "2",
                "--strategies", "head-oracle,head-oracle-pooled,head-block-oracle,head-mass-mix,head-qmass-mix,mass-auto"));
        for (String line : full.toString().split("\n")) {
            if ((line.startsWith("| head-") || line.startsWith("| mass-auto")) && line.split("\\|").length > 5) {
                assertTrue(line.contains("| 1.0000 | – | 0.0000 |"), line);
            }
        }
    }

    @Test
    void bytesModelReadsEachAlignedPageOfABlockOnceAndNothingFromDram() {
        SelectEvalCommand c = new SelectEvalCommand();
        new CommandLine(c).parseArgs("--tokens", "1000", "--block", "16", "--sinks", "4", "--window", "100");
        // 1 KiB entries: a run of 4 inside one block is one 4 KiB page; 8 scattered tokens are 8 pages.
        assertEquals(4096, c.readBytes(new int[] {32, 33, 34, 35}, 1024));
        assertEquals(8 * 4096, c.readBytes(new int[] {20, 40, 60, 80, 100, 120, 140, 160}, 1024));
        // A run across a block boundary is two reads (two extents); sinks and window cost nothing.
        assertEquals(2 * 4096, c.readBytes(new int[] {30, 31, 32, 33}, 1024));
        assertEquals(0, c.readBytes(new int[] {0, 1, 2, 3, 900, 950, 999}, 1024));
        // Two entries in one 4 KiB page are one page read, as the pipeline reads them (one aligned read);
        // 1.5 KiB entries 0 and 2 of a block share the page [0, 4096), entry 2 also reaches into the next.
        assertEquals(4096, c.readBytes(new int[] {20, 22}, 1024));
        assertEquals(2 * 4096, c.readBytes(new int[] {16, 18}, 1536));
        // 4 KiB entries: every entry is a page.
        assertEquals(16 * 4096, c.readBytes(java.util.stream.IntStream.range(16, 32).toArray(), 4096));
    }
}
