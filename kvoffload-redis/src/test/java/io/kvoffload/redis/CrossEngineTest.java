package io.kvoffload.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.DecodeOptions;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.PrefixMatch;
import io.kvoffload.RemoteConfig;
import io.kvoffload.testing.KvTestData;
import io.kvoffload.testing.KvViews;
import io.kvoffload.testing.TestEngines;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two engines in two JVMs with separate local directories share a prompt prefix through the
 * cluster: A (a child JVM, {@link CrossEngineChild}) commits it, B finds the longest shared prefix
 * remotely, pulls it, and its decoder gathers exactly what A's gathers from its own copy.
 */
@ExtendWith(RedisClusterExtension.class)
class CrossEngineTest {
    static final KvShape SHAPE = new KvShape(4, 8, 2, 64, DType.BF16); // 512-byte entries, 8 KiB blobs
    static final long SEED = 140;

    @TempDir
    Path a;
    @TempDir
    Path b;

    /**
     * What a decode step over the first {@code n} tokens of {@code layer} attends to: the K and V the
     * decoder gathers, row by row in position order (the view's row order depends on where the
     * entries lie, which differs between the two engines), hashed.
     */
    static String decode(KvSequence s, int layer, int n) {
        int row = SHAPE.headDim() * SHAPE.dtype().bytes();
        byte[][] rows = new byte[n][];
        try (KvDecoder d = s.decoder(DecodeOptions.defaults()); KvView v = d.prefetch(layer, TestEngines.all(n), n).await()) {
            for (int r = 0; r < v.tokenCount(); r++) {
                byte[] kv = new byte[2 * SHAPE.kvHeads() * row];
                for (int h = 0; h < SHAPE.kvHeads(); h++) {
                    MemorySegment.copy(v.keys(h), (long) r * row, MemorySegment.ofArray(kv), (long) 2 * h * row, row);
                    MemorySegment.copy(v.values(h), (long) r * row, MemorySegment.ofArray(kv), (long) (2 * h + 1) * row, row);
                }
                rows[v.position(r)] = kv;
            }
        }
        return Integer.toHexString(Arrays.deepHashCode(rows));
    }

    @Test
    void engineBDecodesBitExactFromThePrefixEngineACommittedInAnotherJvm(LoopbackCluster cluster) throws Exception {
        RemoteConfig rc = RedisClusterExtension.remote(cluster).build();
        int tokens = 16 * 10 + 3;
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = List.of(java, "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", System.getProperty("java.class.path"),
                CrossEngineChild.class.getName(), TestEngines.deviceDirs(a, 1).getFirst().toString(),
                cluster.seeds().stream().map(Object::toString).collect(Collectors.joining(",")), rc.keyPrefix(),
                String.valueOf(tokens));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        List<String> output = new ArrayList<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream()))) {
            for (String line; (line = r.readLine()) != null; ) {
                output.add(line);
            }
        }
        assertTrue(p.waitFor(120, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), "engine A failed: " + output);
        assertTrue(output.contains("PUBLISHED 10"), output.toString());
        Map<Integer, String> decodedByA = new HashMap<>();
        for (String line : output) {
            if (line.startsWith("DECODE ")) {
                String[] f = line.split(" ");
                decodedByA.put(Integer.parseInt(f[1]), f[2]);
            }
        }
        assertEquals(SHAPE.layers(), decodedByA.size(), output.toString());

        try (KvEngine eb = KvEngine.open(RedisClusterExtension.config(b, 2, rc))) {
            // B's prompt continues A's differently after 10 blocks and 3 tokens.
            int[] prompt = KvTestData.tokenIds(SEED, 0, 16 * 14);
            prompt[16 * 10 + 3] ^= 1;
            PrefixMatch m = eb.findLongestPrefix(SHAPE, prompt).orElseThrow();
            assertEquals(16 * 10, m.matchedTokens(), "the longest shared run of whole blocks");
            try (KvSequence s = eb.openSequence(m.sequenceId())) {
                assertNull(TestEngines.verify(s, SEED, TestEngines.all(16 * 10)));
                for (int l = 0; l < SHAPE.layers(); l++) {
                    assertEquals(decodedByA.get(l), decode(s, l, 16 * 10), "layer " + l + " decodes as in engine A");
                    try (KvDecoder d = s.decoder(DecodeOptions.defaults());
                            KvView v = d.prefetch(l, TestEngines.all(16 * 10), 16 * 10).await()) {
                        KvViews.assertBitExact(v, expected(l, 16 * 10));
                    }
                }
            }
            assertEquals(10, eb.stats().remote().blocksFetched());
        }
    }

    private static byte[][] expected(int layer, int n) {
        byte[] k = new byte[n * SHAPE.halfEntryBytes()];
        byte[] v = new byte[k.length];
        KvTestData.fill(MemorySegment.ofArray(k), SHAPE, SEED, layer, 0, n, false);
        KvTestData.fill(MemorySegment.ofArray(v), SHAPE, SEED, layer, 0, n, true);
        return new byte[][] {k, v};
    }
}
