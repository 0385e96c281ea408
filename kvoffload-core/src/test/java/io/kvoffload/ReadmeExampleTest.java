package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.strategy.swarm.ClusterOptions;
import io.kvoffload.strategy.swarm.Swarm;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's usage example, compiled and run: {@link #readmeExampleRuns} holds it verbatim between
 * the markers, and {@link #theReadmeShowsExactlyThisCode} fails when the README's block and the
 * marked region differ, so the example can never drift from the API.
 */
class ReadmeExampleTest {
    static final Path README = Path.of("../README.md");
    static final String BEGIN = "// README-BEGIN";
    static final String END = "// README-END";
    static final int TOKENS = 64;

    @TempDir
    Path root;

    // What the example takes from the engine around it: a prompt, its K/V per layer, sampled queries.
    final SplittableRandom random = new SplittableRandom(18);
    final KvShape model = KvShape.llama3_8b();
    final int[] promptIds = new int[TOKENS];
    final float[][] keys = kv();
    final float[][] values = kv();
    @SuppressWarnings("unchecked")
    final List<float[]>[] sampledQueries = new List[model.layers()];
    int attended;
    DecodeStats reported;

    float[][] kv() {
        float[][] kv = new float[model.layers()][TOKENS * model.kvHeads() * model.headDim()];
        for (float[] layer : kv) {
            for (int i = 0; i < layer.length; i++) {
                layer[i] = (float) random.nextGaussian();
            }
        }
        return kv;
    }

    float[] query(int layer) {
        float[] q = new float[model.queryHeads() * model.headDim()];
        for (int i = 0; i < q.length; i++) {
            q[i] = (float) random.nextGaussian();
        }
        return q;
    }

    void attention(KvView view) {
        float[] out = new float[model.queryHeads() * model.headDim()];
        new SparseAttention(model).attend(view, query(view.layer()), out);
        assertTrue(view.tokenCount() > 0 && Float.isFinite(out[0]), "attended " + view.tokenCount() + " rows");
        attended++;
    }

    void report(DecodeStats stats) {
        reported = stats;
    }

    @Test
    void readmeExampleRuns() {
        for (int l = 0; l < model.layers(); l++) {
            sampledQueries[l] = new ArrayList<>();
            for (int q = 0; q < 8; q++) {
                sampledQueries[l].add(query(l));
            }
        }
        Path ssd0 = root.resolve("nvme0");
        Path ssd1 = root.resolve("nvme1");
        long dramBytes = 256L << 20;
        long ssdBytes = 64L << 20;
        try {
            Files.createDirectories(ssd0);
            Files.createDirectories(ssd1);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        // README-BEGIN
        KvShape shape = KvShape.llama3_8b();                     // 32 layers, 8 KV heads x 128, BF16
        KvConfig config = KvConfig.builder()
                .ssdDirectories(ssd0, ssd1)                        // e.g. Path.of("/mnt/nvme0/kv"), one per SSD
                .dramBudgetBytes(dramBytes)                        // e.g. 4L << 30
                .deviceCapacityBytes(ssdBytes).build();            // e.g. 256L << 30, preallocated per SSD
        try (KvEngine engine = KvEngine.open(config);
             KvSequence seq = engine.createSequence(shape)) {
            seq.appendTokens(promptIds);                           // prefill: [token][kvHead][dim] per layer
            for (int l = 0; l < shape.layers(); l++) {
                seq.appendKv(l, keys[l], values[l]);               // float[] converted to BF16 (or short[] bits)
                Swarm.clusterLayerFromQueries(seq, l, sampledQueries[l], ClusterOptions.defaults()); // Swarm offline phase
            }
            seq.commit();                                          // durable; found again by findLongestPrefix
            try (KvDecoder dec = seq.decoder(DecodeOptions.defaults())) {  // mass-auto, 10% budget, 256-token window
                KvView next = dec.prefetch(0, query(0));           // returns at once; reads spread over all SSDs
                for (int l = 0; l < shape.layers(); l++) {
                    KvView view = next.await();                    // K, V per KV head + positions + block table
                    if (l + 1 < shape.layers()) next = dec.prefetch(l + 1, query(l + 1)); // overlaps layer l
                    attention(view);                               // your kernel, or new SparseAttention(shape)
                    view.close();
                }
                report(dec.stats());                               // bytes, reads, p50/p99/p99.9 of fetch, select, I/O
            }
        }
        // README-END
        assertEquals(model.layers(), attended);
        assertEquals(model.layers(), reported.steps());
        assertEquals(model.layers(), reported.fetchLatency().count());
    }

    @Test
    void theReadmeShowsExactlyThisCode() throws IOException {
        String readme = Files.readString(README);
        int use = readme.indexOf("## Use");
        int from = readme.indexOf("```java\n", use) + "```java\n".length();
        String block = readme.substring(from, readme.indexOf("```", from));
        List<String> region = new ArrayList<>();
        boolean in = false;
        for (String line : Files.readAllLines(Path.of("src/test/java/io/kvoffload/ReadmeExampleTest.java"))) {
            if (line.strip().equals(END)) {
                in = false;
            }
            if (in) {
                region.add(line.length() >= 8 ? line.substring(8) : line.strip()); // the method body's indent
            }
            if (line.strip().equals(BEGIN)) {
                in = true;
            }
        }
        assertEquals(block, String.join("\n", region) + "\n", "README.md's example and ReadmeExampleTest's region"
                + " differ: change both together");
    }
}
