package io.kvoffload.attention;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.DecodeOptions;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.SparseAttention;
import io.kvoffload.testing.Allocations;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** {@link DecodeAttention} on real views: a Swarm-selected sparse view, the dense path, bad input, allocation. */
class DecodeAttentionTest {
    @TempDir
    Path root;

    @Test
    void swarmSelectedBf16ViewMatchesTheReferenceBitForBit() {
        KvShape shape = new KvShape(1, 16, 4, 64, DType.BF16);
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(shape, 2048).seed(5).build());
        try (KvEngine e = KvEngine.open(TestEngines.config(TestEngines.deviceDirs(root, 2), "portable")
                .blockTokens(16).build())) {
            TestEngines.storeClustered(e, "s", w, 2048, 0, 32);
            try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(DecodeOptions.defaults())) {
                float[] q = w.query(0, 40);
                float[] fast = new float[q.length];
                float[] reference = new float[q.length];
                float[] xk = AttentionFixture.rounded(new Random(1), DType.F32, shape.kvHeads() * shape.headDim(), 1);
                float[] xv = AttentionFixture.rounded(new Random(2), DType.F32, shape.kvHeads() * shape.headDim(), 1);
                try (KvView v = d.prefetch(0, q).await()) {
                    assertTrue(v.tokenCount() < 2048 / 2, "a sparse view: " + v.tokenCount() + " rows");
                    new DecodeAttention(shape).attend(v, q, xk, xv, 1, fast);
                    new SparseAttention(shape).attend(v, q, xk, xv, 1, reference);
                }
                assertArrayEquals(reference, fast);
            }
        }
    }

    /**
     * Over rows in token order the dense path equals {@link ExactAttention} bit for bit when the
     * GQA group is a multiple of 4: ExactAttention then scores four heads per pass with one
     * sequential sum each, the same order as this kernel (for other groups it splits the sums, and
     * the property test's bound applies).
     */
    @ParameterizedTest
    @ValueSource(ints = {4, 8})
    void densePathEqualsExactAttentionBitForBit(int group) {
        KvShape shape = new KvShape(1, 2 * group, 2, 128, DType.F32);
        int rows = 777;
        Random rnd = new Random(group);
        float[] k = AttentionFixture.rounded(rnd, DType.F32, rows * 2 * 128, 1.5f);
        float[] v = AttentionFixture.rounded(rnd, DType.F32, rows * 2 * 128, 1f);
        float[] q = AttentionFixture.rounded(rnd, DType.F32, 2 * group * 128, 1.5f);
        float[][] kh = new float[2][rows * 128];
        float[][] vh = new float[2][rows * 128];
        for (int t = 0; t < rows; t++) {
            for (int h = 0; h < 2; h++) {
                System.arraycopy(k, (t * 2 + h) * 128, kh[h], t * 128, 128);
                System.arraycopy(v, (t * 2 + h) * 128, vh[h], t * 128, 128);
            }
        }
        float[] out = new float[q.length];
        new DecodeAttention(shape).attend(k, v, rows, q, out);
        float[] exact = ExactAttention.of(shape).compute(new io.kvoffload.strategy.DenseLayerKv(rows, 128, kh, vh), q).output();
        assertArrayEquals(exact, out);
    }

    @Test
    void steadyStateCallsAllocateNothing() {
        KvShape shape = new KvShape(1, 8, 2, 128, DType.BF16);
        try (AttentionFixture f = new AttentionFixture(shape, 600, 3)) {
            DecodeAttention kernel = new DecodeAttention(shape, 600);
            float[] out = new float[f.query.length];
            float[] xk = f.rows(f.keys, 599, 1);
            float[] xv = f.rows(f.values, 599, 1);
            try (KvView v = f.view(TestEngines.all(599), 599)) {
                long bytes = Allocations.leastOverWindows(() -> {
                    for (int i = 0; i < 200; i++) {
                        kernel.attend(v, f.query, xk, xv, 1, out);
                    }
                }, 5);
                assertEquals(0, bytes, "bytes allocated by 200 calls");
            }
        }
    }

    @Test
    void badInputIsRefusedWithTheArgumentNamed() {
        KvShape shape = new KvShape(1, 4, 2, 8, DType.F16);
        try (AttentionFixture f = new AttentionFixture(shape, 40, 9)) {
            DecodeAttention kernel = new DecodeAttention(shape);
            float[] out = new float[f.query.length];
            float[] xk = f.rows(f.keys, 39, 1);
            KvView v = f.view(TestEngines.all(39), 39);
            assertMessage(() -> kernel.attend(v, new float[3], out), "query.length = 3");
            assertMessage(() -> kernel.attend(v, f.query, new float[5]), "out.length = 5");
            assertMessage(() -> kernel.attend(v, f.query, xk, new float[1], 1, out), "extraValues.length = 1");
            assertMessage(() -> kernel.attend(v, f.query, xk, xk, 2, out), "extraRows × kvHeads × headDim = 2 × 2 × 8");
            assertMessage(() -> kernel.attend(v, f.query, xk, xk, -1, out), "extraRows = -1");
            assertThrows(NullPointerException.class, () -> kernel.attend(v, f.query, null, null, 1, out), "extraKeys");
            assertThrows(NullPointerException.class, () -> kernel.attend((KvView) null, f.query, out), "view");
            assertMessage(() -> kernel.attend(xk, xk, 0, f.query, out), "hold no tokens");
            assertMessage(() -> new DecodeAttention(new KvShape(1, 4, 2, 8, DType.BF16)).attend(v, f.query, out),
                    "but this kernel was made for");
            assertMessage(() -> new DecodeAttention(shape, -1), "maxRows");
            v.close();
            IllegalStateException closed = assertThrows(IllegalStateException.class, () -> kernel.attend(v, f.query, out));
            assertTrue(closed.getMessage().contains("closed"), closed.getMessage());
            KvView fetching = f.decoder.prefetch(0, TestEngines.all(39), 39);
            IllegalStateException early = assertThrows(IllegalStateException.class,
                    () -> kernel.attend(fetching, f.query, out));
            assertTrue(early.getMessage().contains("await()"), early.getMessage());
            fetching.close();
        }
    }

    private static void assertMessage(org.junit.jupiter.api.function.Executable call, String part) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        assertTrue(e.getMessage().contains(part), e.getMessage());
    }
}
