package io.kvoffload.internal.kvswap;

import static io.kvoffload.internal.kvswap.KvSwapFixtures.assertMessage;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class CompressedKCacheTest {

    @Test
    void handComputedProjectionAndScore() {
        // A = [[1, 0], [0, 2], [1, 1]] (3 × 2): key (1, 2, 3) → (1·1 + 3·1, 2·2 + 3·1) = (4, 7).
        LowRankAdapter a = LowRankAdapter.of(1, 3, 2, new float[] {1, 0, 0, 2, 1, 1});
        CompressedKCache c = new CompressedKCache(a);
        c.append(new float[] {1, 2, 3, 0, 0, 1}, 0, 2);
        float[] k = new float[2];
        c.get(0, k, 0);
        assertArrayEquals(new float[] {4, 7}, k);
        c.get(1, k, 0);
        assertArrayEquals(new float[] {1, 1}, k);
        float[] s = new float[2];
        c.scores(new float[] {1, -1}, 0, 2, s, 0);
        assertArrayEquals(new float[] {-3, 0}, s);
        assertEquals(2 * 2 * 4, c.bytes());
        assertEquals(2 * 3 * 2, c.fullKBytes(DType.BF16));
        assertEquals(0.75, c.compressionRatio(DType.BF16), 1e-12);
    }

    @Test
    void scoresMatchTheDefinitionAcrossChunksForEveryElementType() {
        SplittableRandom rnd = new SplittableRandom(11);
        LowRankAdapter a = KvSwapFixtures.randomAdapter(rnd, 2, 4, 3);
        int tokens = CompressedKCache.CHUNK_TOKENS + 300;
        float[] keys = KvSwapFixtures.gaussian(rnd, tokens * 8);
        float[] q = KvSwapFixtures.gaussian(rnd, 3);
        for (DType dt : DType.values()) {
            CompressedKCache c = new CompressedKCache(a, dt, 100);
            c.append(keys, 0, 1000);
            c.append(keys, 1000 * 8, tokens - 1000);
            assertEquals(tokens, c.tokens());
            float[] s = new float[tokens];
            c.scores(q, 0, tokens, s, 0);
            float[] lr = new float[3];
            for (int t = 0; t < tokens; t += 37) {
                a.project(keys, t * 8, lr, 0);
                double expect = q[0] * lr[0] + q[1] * lr[1] + q[2] * lr[2];
                double tol = dt == DType.F32 ? 1e-4 : 2e-2 * (Math.abs(q[0] * lr[0]) + Math.abs(q[1] * lr[1]) + Math.abs(q[2] * lr[2]));
                assertEquals(expect, s[t], Math.max(1e-4, tol), dt + " token " + t);
            }
            // A window that straddles the chunk boundary equals the same slice of the full pass.
            float[] part = new float[500];
            c.scores(q, CompressedKCache.CHUNK_TOKENS - 250, 500, part, 0);
            for (int i = 0; i < 500; i++) {
                assertEquals(s[CompressedKCache.CHUNK_TOKENS - 250 + i], part[i], 0f);
            }
            assertEquals((long) tokens * 3 * dt.bytes(), c.bytes());
            assertEquals(2L * CompressedKCache.CHUNK_TOKENS * 3 * dt.bytes(), c.reservedBytes());
            assertEquals(8.0 / 3 * 2 / dt.bytes(), c.compressionRatio(DType.BF16), 1e-9);
        }
    }

    @Test
    void appendFromALayerEqualsAppendingItsTokenMajorKeys() {
        KvShape shape = new KvShape(1, 4, 2, 16, DType.BF16);
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(shape, 700).build());
        LowRankAdapter a = LowRankAdapter.fit(w.layer(0), 8, 700, 1);
        CompressedKCache fromLayer = new CompressedKCache(a);
        fromLayer.appendFrom(w.layer(0), 0, 300);
        fromLayer.appendFrom(w.layer(0), 300, 400);
        float[] rows = new float[700 * 32];
        for (int t = 0; t < 700; t++) {
            for (int h = 0; h < 2; h++) {
                w.layer(0).keys(h, t, 1, rows, t * 32 + h * 16);
            }
        }
        CompressedKCache fromRows = new CompressedKCache(a);
        fromRows.append(rows, 0, 700);
        float[] x = new float[8], y = new float[8];
        for (int t = 0; t < 700; t++) {
            fromLayer.get(t, x, 0);
            fromRows.get(t, y, 0);
            assertArrayEquals(y, x);
        }
        CompressedKCache restored = new CompressedKCache(a);
        float[] lr = new float[700 * 8];
        for (int t = 0; t < 700; t++) {
            fromRows.get(t, lr, t * 8);
        }
        restored.appendProjected(lr, 0, 700);
        restored.get(699, x, 0);
        assertArrayEquals(y, x);
        restored.clear();
        assertEquals(0, restored.tokens());
        assertTrue(Double.isNaN(restored.compressionRatio(DType.BF16)));
    }

    @Test
    void f16ClampsOutliersInsteadOfOverflowing() {
        LowRankAdapter a = LowRankAdapter.of(1, 1, 1, new float[] {1});
        CompressedKCache c = new CompressedKCache(a, DType.F16, 0);
        c.append(new float[] {1e6f, -1e6f, 1.5f}, 0, 3);
        float[] k = new float[1];
        c.get(0, k, 0);
        assertEquals(65504f, k[0]);
        c.get(1, k, 0);
        assertEquals(-65504f, k[0]);
        float[] s = new float[3];
        c.scores(new float[] {1}, 0, 3, s, 0);
        assertArrayEquals(new float[] {65504f, -65504f, 1.5f}, s, "the outlier still ranks first");
    }

    @Test
    void rejectsBadArguments() {
        LowRankAdapter a = LowRankAdapter.of(1, 4, 2, new float[8]);
        CompressedKCache c = new CompressedKCache(a);
        c.append(new float[8], 0, 2);
        assertMessage(() -> c.append(new float[7], 0, 2), "keys: offset 0 + length 8", "allowed: 0..7");
        assertMessage(() -> c.scores(new float[2], 1, 2, new float[2], 0), "tokens [1, 3)", "within [0, 2)");
        assertMessage(() -> c.scores(new float[1], 0, 1, new float[2], 0), "lowRankQuery.length = 1", "at least rank = 2");
        assertMessage(() -> c.scores(new float[2], 0, 2, new float[1], 0), "out: offset 0 + length 2", "allowed: 0..1");
        assertMessage(() -> c.get(2, new float[2], 0), "token = 2", "allowed: 0..1");
        assertMessage(() -> new CompressedKCache(a, DType.F32, -1), "expectedTokens = -1", "allowed: 0..1073741824");
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(new KvShape(1, 2, 2, 8, DType.BF16), 10).build());
        assertMessage(() -> c.appendFrom(w.layer(0), 0, 1), "layer has kvHeads = 2, headDim = 8", "kvHeads = 1, headDim = 4");
    }
}
