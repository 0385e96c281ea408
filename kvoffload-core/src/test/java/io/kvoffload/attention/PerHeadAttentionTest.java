package io.kvoffload.attention;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.SparseAttention;
import io.kvoffload.internal.util.ElementCodec;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.strategy.FetchPlan;
import io.kvoffload.testing.Allocations;
import io.kvoffload.testing.PerHeadViews;
import io.kvoffload.testing.TestEngines;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Views whose rows hold only some KV heads, made the real way ({@link PerHeadViews}: a head-sharded
 * engine, the default page layout, a per-head strategy): the rows hold exactly the head groups that
 * were read, bit-exact; {@link SparseAttention} attends per query head exactly the rows that hold its
 * KV head (against an independent double-precision reference), never lets the undefined bytes of a
 * head that was not read through (they are NaN here: an earlier step of the same view left them),
 * and {@link DecodeAttention} reproduces it bit for bit, with and without extra rows; the per-head
 * attention-mass recall of {@link QualityMetrics}.
 */
class PerHeadAttentionTest {
    static final int TOKENS = 640;
    static final int SINKS = 4;
    static final int WINDOW = 16;
    /** Layer 0 holds finite K/V; layer 1 only NaN, to poison a view's rows before a per-head step. */
    static final int NAN_LAYER = 1;

    @TempDir
    Path root;

    static KvShape shape(DType dtype) {
        return new KvShape(2, 8, 4, 32, dtype); // 4 KV heads, groups of 2 query heads
    }

    /** {@code n} distinct positions outside the sinks and the window, each for a random non-empty set of KV heads (a tenth for all). */
    static void randomPlan(Random rnd, int n, int[] positions, long[] masks) {
        int[] pool = new int[TOKENS - WINDOW - SINKS];
        for (int i = 0; i < pool.length; i++) {
            pool[i] = SINKS + i;
        }
        for (int i = 0; i < n; i++) {
            int j = i + rnd.nextInt(pool.length - i);
            int t = pool[i];
            pool[i] = pool[j];
            pool[j] = t;
            positions[i] = pool[i];
            masks[i] = rnd.nextInt(10) == 0 ? FetchPlan.ALL_HEADS : 1 + rnd.nextInt(15);
        }
    }

    /** What each position's row must hold: the sinks and the window whole, a planned one the union of its groups. */
    static Map<Integer, Long> expectedHeads(int[] positions, long[] masks, int kvHeads, int groups) {
        Map<Integer, Long> m = new HashMap<>();
        long all = (1L << kvHeads) - 1;
        for (int i = 0; i < positions.length; i++) {
            m.merge(positions[i], PerHeadViews.groupsHolding(masks[i], kvHeads, groups), (a, b) -> a | b);
        }
        for (int t = 0; t < SINKS; t++) {
            m.put(t, all);
        }
        for (int t = TOKENS - WINDOW; t < TOKENS; t++) {
            m.put(t, all);
        }
        return m;
    }

    /** Per KV head, the positions whose expected row holds it, ascending. */
    static int[][] attended(Map<Integer, Long> heads, int kvHeads) {
        int[][] out = new int[kvHeads][];
        for (int h = 0; h < kvHeads; h++) {
            int hh = h;
            out[h] = heads.entrySet().stream().filter(e -> (e.getValue() >>> hh & 1) != 0).mapToInt(Map.Entry::getKey)
                    .sorted().toArray();
        }
        return out;
    }

    static int groups(int devices) {
        return devices >= 4 ? 4 : 2; // the largest divisor of the 4 KV heads not above the device count
    }

    static float[] query(KvShape shape, long seed) {
        return PerHeadViews.rounded(new Random(seed), DType.F32, shape.queryHeads() * shape.headDim(), 1.5f);
    }

    /** Fills the decoder's one view with NaN rows (whole) from the NaN layer, so the next step's unread heads are NaN. */
    static void poison(KvDecoder d, int rows) {
        d.prefetch(NAN_LAYER, TestEngines.all(rows), rows).await().close();
    }

    /** (Row, head) pairs the view does not hold whose K starts with a NaN: the stale bytes the kernels must not read. */
    static int poisonedPairs(KvView v) {
        KvShape s = v.shape();
        long rowBytes = (long) s.headDim() * s.dtype().bytes();
        int n = 0;
        for (int r = 0; r < v.tokenCount(); r++) {
            long held = PerHeadViews.heldHeads(v, r);
            for (int h = 0; h < s.kvHeads(); h++) {
                if ((held >>> h & 1) == 0 && Float.isNaN(ElementCodec.read(s.dtype(), v.keys(h), r * rowBytes))) {
                    n++;
                }
            }
        }
        return n;
    }

    @ParameterizedTest
    @ValueSource(ints = {2, 4})
    void rowsHoldExactlyTheHeadGroupsReadBitExact(int devices) {
        KvShape shape = shape(DType.BF16);
        try (KvEngine e = KvEngine.open(PerHeadViews.config(root, devices).build())) {
            PerHeadViews.Layer[] stored = PerHeadViews.store(e, "s", shape, TOKENS, 3);
            PerHeadViews.Script script = new PerHeadViews.Script();
            try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(PerHeadViews.options(script, SINKS, WINDOW))) {
                int[] pos = new int[60];
                long[] masks = new long[60];
                randomPlan(new Random(devices), 60, pos, masks);
                // A position twice (for heads 0 and 3: two groups), a sink and a window token for one head only.
                int[] p = Arrays.copyOf(pos, 63);
                long[] m = Arrays.copyOf(masks, 63);
                p[60] = pos[0];
                m[0] = 0b0001;
                m[60] = 0b1000;
                p[61] = 1;
                m[61] = 0b0010;
                p[62] = TOKENS - 3;
                m[62] = 0b0100;
                script.next(p, m);
                Map<Integer, Long> expected = expectedHeads(p, m, 4, groups(devices));
                assertEquals(groups(devices) == 4 ? 0b1001L : 0b1111L, (long) expected.get(pos[0]), "two groups united");
                try (KvView v = d.prefetch(0, query(shape, 1)).await()) {
                    assertTrue(v.partialRows(), "a per-head plan under HEAD_SHARDED gives partial rows");
                    BitSet seen = PerHeadViews.assertHeldHeadsBitExact(v, stored[0]);
                    BitSet want = new BitSet();
                    expected.keySet().forEach(want::set);
                    assertEquals(want, seen, "sinks ∪ window ∪ the script's positions");
                    int partial = 0;
                    for (int r = 0; r < v.tokenCount(); r++) {
                        int t = v.position(r);
                        assertEquals((long) expected.get(t), PerHeadViews.heldHeads(v, r), "heads of position " + t + " (row " + r
                                + ")");
                        if (t < SINKS || t >= TOKENS - WINDOW) {
                            assertEquals(-1L, v.headMask(r), "sinks and window rows are whole: " + t);
                        }
                        partial += expected.get(t) != 0b1111 ? 1 : 0;
                    }
                    assertTrue(partial > 10, partial + " partial rows");
                    assertThrows(IndexOutOfBoundsException.class, () -> v.headMask(v.tokenCount()));
                }
                // The same decoder, a shared-set step: every row whole again.
                long[] whole = new long[pos.length];
                Arrays.fill(whole, FetchPlan.ALL_HEADS);
                script.next(pos, whole);
                try (KvView v = d.prefetch(0, query(shape, 2)).await()) {
                    assertFalse(v.partialRows());
                    for (int r = 0; r < v.tokenCount(); r++) {
                        assertEquals(-1L, v.headMask(r));
                    }
                    io.kvoffload.testing.KvViews.assertBitExact(v, stored[0].bytes());
                }
            }
        }
    }

    @ParameterizedTest
    @CsvSource({"F32, 4", "F16, 4", "BF16, 4", "BF16, 2"})
    void kernelsAttendEachHeadsRowsOnlyAndNeverTheUnreadBytes(DType dtype, int devices) {
        KvShape shape = shape(dtype);
        int kv = shape.kvHeads(), d = shape.headDim();
        try (KvEngine e = KvEngine.open(PerHeadViews.config(root, devices).build())) {
            PerHeadViews.Layer[] stored = PerHeadViews.store(e, "s", shape, TOKENS, 5, NAN_LAYER);
            PerHeadViews.Script script = new PerHeadViews.Script();
            try (KvSequence s = e.openSequence("s"); KvDecoder dec = s.decoder(PerHeadViews.options(script, SINKS, WINDOW))) {
                int n = 300; // with sinks and window, more than a block of DecodeAttention's 256 rows
                int[] pos = new int[n];
                long[] masks = new long[n];
                randomPlan(new Random(dtype.ordinal() * 10 + devices), n, pos, masks);
                script.next(pos, masks);
                Map<Integer, Long> expected = expectedHeads(pos, masks, kv, groups(devices));
                int[][] attended = attended(expected, kv);
                float[] q = query(shape, 7);
                SparseAttention reference = new SparseAttention(shape);
                DecodeAttention fast = new DecodeAttention(shape);
                poison(dec, 400);
                try (KvView v = dec.prefetch(0, q).await()) {
                    assertTrue(v.partialRows());
                    PerHeadViews.assertHeldHeadsBitExact(v, stored[0]);
                    int[][] got = PerHeadViews.attendedPerHead(v);
                    for (int h = 0; h < kv; h++) {
                        int[] sorted = got[h].clone();
                        Arrays.sort(sorted);
                        assertArrayEquals(attended[h], sorted, "rows holding KV head " + h);
                    }
                    assertTrue(poisonedPairs(v) > 50, "the unread heads hold NaN (else this test proves nothing): "
                            + poisonedPairs(v));
                    for (int extra : new int[] {0, 1, 20}) {
                        Random rnd = new Random(extra);
                        float[] xk = PerHeadViews.rounded(rnd, DType.F32, Math.max(1, extra) * kv * d, 1.5f);
                        float[] xv = PerHeadViews.rounded(rnd, DType.F32, Math.max(1, extra) * kv * d, 1f);
                        float[] ref = new float[q.length];
                        float[] out = new float[q.length];
                        reference.attend(v, q, extra == 0 ? null : xk, extra == 0 ? null : xv, extra, ref);
                        fast.attend(v, q, extra == 0 ? null : xk, extra == 0 ? null : xv, extra, out);
                        double[] exact = PerHeadViews.reference(stored[0], attended, q, xk, xv, extra);
                        assertClose(exact, ref, shape, dtype + ", " + extra + " extra rows");
                        assertArrayEquals(ref, out, "DecodeAttention is SparseAttention bit for bit, " + extra + " extra rows");
                    }
                }
            }
        }
    }

    /** Per query head, {@code ‖got − exact‖ ≤ 1e-5 ‖exact‖}, and nothing is NaN. */
    static void assertClose(double[] exact, float[] got, KvShape shape, String what) {
        int d = shape.headDim();
        for (int h = 0; h < shape.queryHeads(); h++) {
            double diff = 0, norm = 0;
            for (int j = 0; j < d; j++) {
                assertTrue(Float.isFinite(got[h * d + j]), what + ": head " + h + " output " + got[h * d + j]);
                double x = got[h * d + j] - exact[h * d + j];
                diff += x * x;
                norm += exact[h * d + j] * exact[h * d + j];
            }
            assertTrue(Math.sqrt(diff) <= 1e-5 * Math.sqrt(norm), what + ": head " + h + " relative error "
                    + Math.sqrt(diff / norm));
        }
    }

    @Test
    void aHeadNoRowHoldsGetsZerosOrOnlyItsExtraRows() {
        KvShape shape = shape(DType.F16);
        int kv = shape.kvHeads(), d = shape.headDim();
        try (KvEngine e = KvEngine.open(PerHeadViews.config(root, 4).build())) {
            PerHeadViews.Layer[] stored = PerHeadViews.store(e, "s", shape, TOKENS, 9, NAN_LAYER);
            PerHeadViews.Script script = new PerHeadViews.Script();
            try (KvSequence s = e.openSequence("s"); KvDecoder dec = s.decoder(PerHeadViews.options(script, 0, 0))) {
                int[] pos = {10, 20, 30, 333, 500};
                long[] masks = new long[pos.length];
                Arrays.fill(masks, 0b0001); // KV head 0 only: heads 1..3 are in no row
                script.next(pos, masks);
                float[] q = query(shape, 11);
                poison(dec, 64);
                try (KvView v = dec.prefetch(0, q).await()) {
                    assertTrue(v.partialRows());
                    for (int r = 0; r < v.tokenCount(); r++) {
                        assertEquals(0b0001, PerHeadViews.heldHeads(v, r));
                    }
                    assertTrue(poisonedPairs(v) == 15, "3 unread heads of 5 rows are NaN: " + poisonedPairs(v));
                    int[][] attended = {pos, new int[0], new int[0], new int[0]};
                    float[] ref = new float[q.length];
                    float[] out = new float[q.length];
                    new SparseAttention(shape).attend(v, q, ref);
                    new DecodeAttention(shape).attend(v, q, out);
                    assertArrayEquals(ref, out);
                    for (int i = 2 * d; i < q.length; i++) {
                        assertEquals(0f, ref[i], "query heads of KV heads 1..3 attend nothing: zeros (" + i + ")");
                        assertEquals(0, Float.floatToRawIntBits(ref[i]), "+0");
                    }
                    assertClose(PerHeadViews.reference(stored[0], attended, q, null, null, 0), ref, shape, "no extra rows");
                    // With an extra row every head has one: heads 1..3 attend it alone, weight 1.
                    float[] xk = PerHeadViews.rounded(new Random(1), DType.F32, kv * d, 1.5f);
                    float[] xv = PerHeadViews.rounded(new Random(2), DType.F32, kv * d, 1f);
                    new SparseAttention(shape).attend(v, q, xk, xv, 1, ref);
                    new DecodeAttention(shape).attend(v, q, xk, xv, 1, out);
                    assertArrayEquals(ref, out);
                    for (int h = 2; h < shape.queryHeads(); h++) {
                        assertArrayEquals(Arrays.copyOfRange(xv, h / 2 * d, h / 2 * d + d),
                                Arrays.copyOfRange(ref, h * d, h * d + d), "query head " + h);
                    }
                    assertClose(PerHeadViews.reference(stored[0], attended, q, xk, xv, 1), ref, shape, "one extra row");
                }
            }
        }
    }

    @Test
    void kernelsAllocateNothingOverPartialViewsInSteadyState() {
        KvShape shape = shape(DType.BF16);
        try (KvEngine e = KvEngine.open(PerHeadViews.config(root, 4).build())) {
            PerHeadViews.store(e, "s", shape, TOKENS, 13);
            PerHeadViews.Script script = new PerHeadViews.Script();
            try (KvSequence s = e.openSequence("s"); KvDecoder dec = s.decoder(PerHeadViews.options(script, SINKS, WINDOW))) {
                int[] pos = new int[280];
                long[] masks = new long[280];
                randomPlan(new Random(13), 280, pos, masks);
                script.next(pos, masks);
                float[] q = query(shape, 13);
                float[] xk = PerHeadViews.rounded(new Random(3), DType.F32, shape.kvHeads() * shape.headDim(), 1f);
                float[] out = new float[q.length];
                DecodeAttention fast = new DecodeAttention(shape, 600);
                SparseAttention reference = new SparseAttention(shape);
                try (KvView v = dec.prefetch(0, q).await()) {
                    assertTrue(v.partialRows());
                    long bytes = Allocations.leastOverWindows(() -> {
                        for (int i = 0; i < 100; i++) {
                            fast.attend(v, q, xk, xk, 1, out);
                        }
                    }, 5);
                    assertEquals(0, bytes, "bytes DecodeAttention allocated in 100 calls");
                    bytes = Allocations.leastOverWindows(() -> {
                        for (int i = 0; i < 20; i++) {
                            reference.attend(v, q, xk, xk, 1, out);
                        }
                    }, 5);
                    assertEquals(0, bytes, "bytes SparseAttention allocated in 20 calls");
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {2, 4})
    void perHeadMassRecallCountsEachHeadsOwnRows(int devices) {
        KvShape shape = shape(DType.F32);
        int kv = shape.kvHeads(), qh = shape.queryHeads();
        try (KvEngine e = KvEngine.open(PerHeadViews.config(root, devices).build())) {
            PerHeadViews.Layer layer = PerHeadViews.store(e, "s", shape, TOKENS, 21)[0];
            DenseLayerKv dense = layer.dense();
            float[] q = query(shape, 23);
            ExactAttention exact = ExactAttention.of(shape);
            float[][] headWeights = exact.headWeights(dense, q);
            float[] mean = exact.weights(dense, q);
            PerHeadViews.Script script = new PerHeadViews.Script();
            try (KvSequence s = e.openSequence("s"); KvDecoder dec = s.decoder(PerHeadViews.options(script, SINKS, WINDOW))) {
                int[] pos = new int[120];
                long[] masks = new long[120];
                randomPlan(new Random(devices + 40), 120, pos, masks);
                script.next(pos, masks);
                Map<Integer, Long> expected = expectedHeads(pos, masks, kv, groups(devices));
                int[][] attended = attended(expected, kv);
                double want = 0;
                for (int h = 0; h < qh; h++) {
                    double hit = 0, total = 0;
                    for (float w : headWeights[h]) {
                        total += w;
                    }
                    for (int t : attended[h / shape.groupSize()]) {
                        hit += headWeights[h][t];
                    }
                    want += hit / total / qh;
                }
                double wholeRecall;
                try (KvView v = dec.prefetch(0, q).await()) {
                    assertTrue(v.partialRows());
                    double got = QualityMetrics.attentionMassRecall(headWeights, shape.groupSize(), v);
                    assertEquals(want, got, 1e-12);
                    int[] positions = new int[v.tokenCount()];
                    for (int r = 0; r < positions.length; r++) {
                        positions[r] = v.position(r);
                    }
                    wholeRecall = QualityMetrics.attentionMassRecall(mean, positions);
                    assertTrue(got < wholeRecall, "per-head rows hold less mass than whole rows: " + got + " vs "
                            + wholeRecall);
                    // Bad arguments name themselves.
                    assertMessage(() -> QualityMetrics.attentionMassRecall(headWeights, 4, v), "groupSize = 4");
                    assertMessage(() -> QualityMetrics.attentionMassRecall(Arrays.copyOf(headWeights, 4), 2, v),
                            "headWeights.length = 4");
                    float[][] bad = headWeights.clone();
                    bad[3] = bad[3].clone();
                    bad[3][5] = -1f;
                    assertMessage(() -> QualityMetrics.attentionMassRecall(bad, 2, v), "headWeights[3] contains -1.0");
                    bad[3] = new float[7];
                    assertMessage(() -> QualityMetrics.attentionMassRecall(bad, 2, v), "headWeights[3].length = 7");
                }
                // The same positions for every head: the per-head recall is the mean-weight recall (linearity).
                long[] whole = new long[pos.length];
                Arrays.fill(whole, FetchPlan.ALL_HEADS);
                script.next(pos, whole);
                try (KvView v = dec.prefetch(0, q).await()) {
                    assertFalse(v.partialRows());
                    assertEquals(wholeRecall, QualityMetrics.attentionMassRecall(headWeights, shape.groupSize(), v), 1e-6);
                }
            }
        }
    }

    @Test
    void perHeadMassRecallOverArrays() {
        float[][] w = {{1, 1, 2}, {0, 3, 1}, {4, 0, 0}, {1, 1, 1}}; // 4 query heads, 2 KV heads of 2
        // Token 0 for KV head 0, token 1 for KV head 1, token 2 for both (listed twice, counted once).
        double got = QualityMetrics.attentionMassRecall(w, 2, new int[] {0, 1, 2, 2}, new long[] {0b01, 0b10, 0b01, -1});
        double want = ((1 + 2) / 4.0 + (0 + 1) / 4.0 + (0 + 0) / 4.0 + (1 + 1) / 3.0) / 4;
        assertEquals(want, got, 1e-12);
        assertEquals((2 / 4.0 + 3 / 4.0 + 4 / 4.0 + 2 / 3.0) / 4,
                QualityMetrics.attentionMassRecall(w, 2, new int[] {1, 0}, null), 1e-12);
        assertMessage(() -> QualityMetrics.attentionMassRecall(w, 3, new int[] {0}, null), "groupSize = 3");
        assertMessage(() -> QualityMetrics.attentionMassRecall(w, 2, new int[] {3}, null), "positions[0] = 3");
        assertMessage(() -> QualityMetrics.attentionMassRecall(w, 2, new int[] {0}, new long[2]), "headMasks.length = 2");
        assertMessage(() -> QualityMetrics.attentionMassRecall(new float[0][], 1, new int[] {0}, null),
                "headWeights.length = 0");
        assertMessage(() -> QualityMetrics.attentionMassRecall(new float[][] {{0, 0}}, 1, new int[] {0}, null),
                "headWeights[0] sums to 0");
        assertMessage(() -> QualityMetrics.attentionMassRecall(new float[][] {{Float.NaN}}, 1, new int[] {0}, null),
                "headWeights[0] contains NaN");
    }

    private static void assertMessage(org.junit.jupiter.api.function.Executable call, String part) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        assertTrue(e.getMessage().contains(part), e.getMessage());
    }
}
