package io.kvoffload.internal.storage;

import io.kvoffload.strategy.swarm.Swarm;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.DecodeOptions;
import io.kvoffload.strategy.kvswap.GroupOptions;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.strategy.Strategies;
import io.kvoffload.strategy.kvswap.KvSwap;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A store whose manifests are in version 5 — what main wrote before layouts became named sections —
 * opens after the change: every entry reads back bit-exact, clustered, positional and grouped layers
 * decode, and the next commit writes version 6.
 */
class ManifestVersionStoreTest {
    static final KvShape SHAPE = new KvShape(3, 8, 2, 64, DType.BF16);
    static final int TOKENS = 1024;
    static final long SEED = 77;

    @TempDir
    Path root;

    @Test
    void aStoreWithVersionFiveManifestsOpensReadsDecodesAndCommitsVersionSix() throws Exception {
        var config = TestEngines.config(TestEngines.deviceDirs(root, 2), "portable").blockTokens(64).build();
        SelectionStrategy quest = Strategies.named("quest");
        try (KvEngine e = KvEngine.open(config); KvSequence s = e.createSequence("old", SHAPE)) {
            append(s, 0, TOKENS);
            int[][] pages = new int[TOKENS / 32][];
            for (int p = 0; p < pages.length; p++) {
                pages[p] = new int[32];
                for (int i = 0; i < 32; i++) {
                    pages[p][i] = p * 32 + i;
                }
            }
            Swarm.clusterLayer(s, 0, pages, io.kvoffload.strategy.swarm.ClusterOptions.defaults());
            quest.layOut(s, 1);
            KvSwap.groupLayer(s, 2, GroupOptions.defaults());
            s.commit();
        }
        int rewritten = rewriteManifests(5);
        assertTrue(rewritten >= 2, "manifest copies rewritten: " + rewritten);

        try (KvEngine e = KvEngine.open(config)) {
            try (KvSequence s = e.openSequence("old")) {
                assertBitExact(s, TOKENS);
                DecodeOptions.Builder o = DecodeOptions.builder().strategy(Swarm.defaults()).sparsity(0.5).localWindow(64);
                decodeOneStep(s, o.build(), 0);
                decodeOneStep(s, o.strategy(quest).build(), 1);
                decodeOneStep(s, o.strategy(KvSwap.defaults()).build(), 2);
            }
            try (KvSequence s = e.openSequenceForAppend("old")) {
                append(s, TOKENS, 16);
                s.commit();
            }
        }
        assertEquals(List.of(6), versions().distinct().toList(), "a new commit writes version 6");
        try (KvEngine e = KvEngine.open(config); KvSequence s = e.openSequence("old")) {
            assertBitExact(s, TOKENS + 16);
        }
    }

    private static void decodeOneStep(KvSequence s, DecodeOptions o, int layer) {
        float[] q = new float[SHAPE.queryHeads() * SHAPE.headDim()];
        for (int i = 0; i < q.length; i++) {
            q[i] = (float) Math.sin(i * 0.37 + layer);
        }
        try (KvDecoder d = s.decoder(o); KvView v = d.prefetch(layer, q).await()) {
            assertTrue(v.tokenCount() > 0);
            int[] positions = new int[v.tokenCount()];
            for (int r = 0; r < positions.length; r++) {
                positions[r] = v.position(r);
            }
            byte[][] want = expected(layer, TOKENS);
            int row = SHAPE.headDim() * SHAPE.dtype().bytes();
            for (int r = 0; r < positions.length; r++) {
                for (int h = 0; h < SHAPE.kvHeads(); h++) {
                    long at = (long) positions[r] * SHAPE.halfEntryBytes() + (long) h * row;
                    assertEquals(-1, v.keys(h).asSlice((long) r * row, row)
                            .mismatch(MemorySegment.ofArray(want[0]).asSlice(at, row)), "K of " + positions[r]);
                }
            }
            assertTrue(d.stats().bytesRead() > 0, "layer " + layer + " fetched from the SSDs: " + d.stats());
        }
    }

    /** Appends tokens {@code [from, from + n)} of the workload to every layer. */
    private static void append(KvSequence s, int from, int n) {
        s.appendTokens(new int[n]);
        TestEngines.appendKv(s, workload(), from, n);
    }

    /** Layer {@code l}'s K and V bytes of the first {@code tokens} tokens. */
    private static byte[][] expected(int l, int tokens) {
        return TestEngines.kvBytes(workload(), l, tokens);
    }

    private static SyntheticWorkload workload() {
        return new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS + 16).seed(SEED).build());
    }

    private static void assertBitExact(KvSequence s, int tokens) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment k = arena.allocate((long) tokens * SHAPE.halfEntryBytes());
            MemorySegment v = arena.allocate((long) tokens * SHAPE.halfEntryBytes());
            for (int l = 0; l < SHAPE.layers(); l++) {
                s.read(l, 0, tokens, k, v);
                byte[][] want = expected(l, tokens);
                assertEquals(-1, k.mismatch(MemorySegment.ofArray(want[0])), "K of layer " + l);
                assertEquals(-1, v.mismatch(MemorySegment.ofArray(want[1])), "V of layer " + l);
            }
        }
    }

    /** Re-encodes every manifest copy under the root in {@code version}; returns how many. */
    private int rewriteManifests(int version) throws IOException {
        int n = 0;
        try (Stream<Path> files = Files.walk(root)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".kvom") || p.toString().endsWith(".kvom.prev"))
                    .toList()) {
                Manifest m = ManifestCodec.decode(Files.readAllBytes(f));
                Files.write(f, ManifestCodec.encode(m, version));
                n++;
            }
        }
        return n;
    }

    private Stream<Integer> versions() throws IOException {
        try (Stream<Path> files = Files.walk(root)) {
            return files.filter(p -> p.toString().endsWith(".kvom")).map(p -> {
                try {
                    return ByteBuffer.wrap(Files.readAllBytes(p)).getInt(4);
                } catch (IOException x) {
                    throw new java.io.UncheckedIOException(x);
                }
            }).toList().stream();
        }
    }
}
