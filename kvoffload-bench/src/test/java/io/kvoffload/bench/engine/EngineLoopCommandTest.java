package io.kvoffload.bench.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.bench.cli.KvoRun;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The engine-loop example at tiny sizes, so it never rots: it must decode, fetch and report every part. */
class EngineLoopCommandTest {
    @TempDir
    Path root;

    @Test
    void tinyLoopDecodesWithOffloadAndInDram() {
        String out = run("engine-loop", "--dirs", root.resolve("a") + "," + root.resolve("b"), "--layers", "2",
                "--context", "600", "--tokens", "3", "--warmup", "1", "--hidden", "64", "--ffn", "96", "--vocab", "32",
                "--kv-heads", "2", "--group", "2", "--head-dim", "16", "--sparsity", "0.5");
        assertTrue(out.contains("engine-loop: OK"), out);
        Matcher offload = Pattern.compile("\\| offload \\(SSD\\) \\| ([0-9.]+) \\|").matcher(out);
        assertTrue(offload.find() && Double.parseDouble(offload.group(1)) > 0, out);
        assertTrue(out.contains("| all in DRAM, dense |"), out);
        assertTrue(out.contains("offload / DRAM tokens/s:"), out);
        assertTrue(out.contains("share of fetch time hidden behind compute:"), out);
        assertTrue(out.contains("cosine to the actual query"), out);
        Matcher recall = Pattern.compile("prefetched with the early query: ([0-9.]+)%; fetched with the actual query: "
                + "([0-9.]+)%").matcher(out);
        assertTrue(recall.find(), out);
        for (int g = 1; g <= 2; g++) {
            double r = Double.parseDouble(recall.group(g));
            assertTrue(r > 0 && r <= 100, "attention-mass recall " + r + "%: " + out);
        }
    }

    @Test
    void previousStepQueriesWorkToo() {
        String out = run("engine-loop", "--dirs", root.resolve("c").toString(), "--layers", "3", "--context", "300",
                "--tokens", "2", "--warmup", "1", "--hidden", "32", "--ffn", "48", "--vocab", "16", "--kv-heads", "1",
                "--group", "4", "--head-dim", "8", "--predict", "PREVIOUS", "--no-dram");
        assertTrue(out.contains("engine-loop: OK"), out);
        assertTrue(out.contains("previous step's query: cosine"), out);
    }

    @Test
    void badOptionsNameTheOption() {
        KvoRun run = KvoRun.of("engine-loop", "--head-dim", "7");
        assertTrue(run.code() != 0);
        assertTrue(run.err().contains("--head-dim = 7"), run.toString());
    }

    private static String run(String... args) {
        KvoRun run = KvoRun.of(args);
        assertEquals(0, run.code(), run.toString());
        return run.out();
    }
}
