package io.kvoffload.strategy.sparf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.DecodeOptions;
import io.kvoffload.DecodeStats;
import io.kvoffload.KvBatch;
import io.kvoffload.KvChecksumException;
import io.kvoffload.KvConfig;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.internal.sequence.SequenceAccess;
import io.kvoffload.internal.storage.UnitLayout;
import io.kvoffload.internal.util.ElementCodec;
import io.kvoffload.strategy.Strategies;
import io.kvoffload.testing.KvViews;
import io.kvoffload.testing.PoolDamage;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.testing.TestLayerContext;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * InstInfer's SparF from flash through the decoder's pipeline: the dual layout's step-1 reads, the
 * page groups of step 2, bit-exact views, the budget that covers everything, restarts and a damaged
 * dimension slice.
 */
class SparFTest {
    static final KvShape SHAPE = new KvShape(2, 8, 2, 32, DType.F16);
    static final int TOKENS = 2600; // two 2048-token slices, the second partial
    static final int SINKS = 4;
    static final int WINDOW = 64;
    static final SparF SPARF = new SparF();

    @TempDir
    Path root;
    /** The shape and workload of the test: F16 unless a test switches dtype (before it stores). */
    KvShape shape = SHAPE;
    SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(7).build());

    KvConfig config(int devices) {
        return TestEngines.config(TestEngines.deviceDirs(root, devices), "portable").build();
    }

    byte[][][] stored;

    void store(KvEngine e, String id) {
        stored = TestEngines.storeLaidOut(e, id, w, TOKENS, SPARF);
    }

    byte[][] expectedBytes(int layer) {
        return stored[layer];
    }

    DecodeOptions options(double sparsity) {
        return options(sparsity, SPARF);
    }

    DecodeOptions options(double sparsity, SparF strategy) {
        return DecodeOptions.builder().strategy(strategy).sparsity(sparsity).sinkTokens(SINKS).localWindow(WINDOW)
                .build();
    }

    /** The reference: SparQ scores from the stored keys, page groups by their best token, top ⌈budget/G⌉ whole. */
    BitSet expectedRows(int layer, float[] q, double sparsity) {
        return expectedRows(layer, q, sparsity, SparF.Dimensions.PER_KV_HEAD);
    }

    BitSet expectedRows(int layer, float[] q, double sparsity, SparF.Dimensions choice) {
        byte[] kb = expectedBytes(layer)[0];
        MemorySegment k = MemorySegment.ofArray(kb);
        int d = shape.headDim(), heads = shape.kvHeads(), qh = shape.queryHeads(), r = d / 8, g = 16;
        int eb = shape.dtype().bytes();
        double[] score = new double[TOKENS];
        for (int h = 0; h < qh; h++) {
            Integer[] order = new Integer[d];
            for (int i = 0; i < d; i++) {
                order[i] = i;
            }
            int q0 = h * d;
            float[] mag = new float[d];
            int group = qh / heads, first = choice == SparF.Dimensions.PER_KV_HEAD ? h / group * group : h;
            for (int m = 0; m < (choice == SparF.Dimensions.PER_KV_HEAD ? group : 1); m++) {
                for (int i = 0; i < d; i++) {
                    mag[i] += Math.abs(q[(first + m) * d + i]);
                }
            }
            java.util.Arrays.sort(order, (a, b) -> Float.compare(mag[b], mag[a])); // stable: ties keep the lower dimension
            double l1 = 0, kept = 0;
            for (int i = 0; i < d; i++) {
                l1 += Math.abs(q[q0 + i]);
            }
            double[] logit = new double[TOKENS];
            for (int j = 0; j < r; j++) {
                int i = order[j];
                kept += Math.abs(q[q0 + i]);
                for (int t = 0; t < TOKENS; t++) {
                    long at = (((long) t * heads + h / (qh / heads)) * d + i) * eb;
                    logit[t] += q[q0 + i] * ElementCodec.read(shape.dtype(), k, at);
                }
            }
            double temp = 1 / Math.sqrt(d * kept / l1), max = Double.NEGATIVE_INFINITY, sum = 0;
            for (int t = 0; t < TOKENS; t++) {
                max = Math.max(max, logit[t] * temp);
            }
            for (int t = 0; t < TOKENS; t++) {
                sum += Math.exp(logit[t] * temp - max);
            }
            for (int t = 0; t < TOKENS; t++) {
                score[t] += Math.exp(logit[t] * temp - max) / sum / qh;
            }
        }
        int budget = (int) Math.ceil(sparsity * TOKENS) - SINKS - WINDOW;
        List<double[]> pages = new ArrayList<>();
        for (int p = 0; p * g < TOKENS; p++) {
            double best = Double.NEGATIVE_INFINITY;
            for (int t = Math.max(p * g, SINKS); t < Math.min((p + 1) * g, TOKENS - WINDOW); t++) {
                best = Math.max(best, score[t]);
            }
            if (best != Double.NEGATIVE_INFINITY) {
                pages.add(new double[] {best, p});
            }
        }
        pages.sort((a, b) -> a[0] != b[0] ? Double.compare(b[0], a[0]) : Double.compare(a[1], b[1]));
        BitSet rows = new BitSet();
        rows.set(0, SINKS);
        rows.set(TOKENS - WINDOW, TOKENS);
        for (int i = 0; i < (budget + g - 1) / g; i++) {
            int p = (int) pages.get(i)[1];
            rows.set(p * g, Math.min(TOKENS, p * g + g));
        }
        return rows;
    }

    @Test
    void registeredBesideTheInMemoryBaseline() {
        assertTrue(Strategies.named("sparf") instanceof SparF);
        assertEquals("sparf-memory", Strategies.named("sparf-memory").name());
    }

    @ParameterizedTest
    @EnumSource(SparF.Dimensions.class)
    void readsTopDimensionSlicesFromFlashThenWholePageGroupsBitExact(SparF.Dimensions choice) {
        double sparsity = 0.1;
        SparF sparf = SPARF.withDimensions(choice);
        try (KvEngine e = KvEngine.open(config(3))) {
            store(e, "s");
            try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(options(sparsity, sparf));
                    KvDecoder again = s.decoder(options(sparsity, sparf))) {
                for (int step = 0; step < 3; step++) {
                    for (int l = 0; l < SHAPE.layers(); l++) {
                        float[] q = w.query(l, step);
                        BitSet got;
                        try (KvView v = d.prefetch(l, q).await()) {
                            got = KvViews.assertBitExact(v, expectedBytes(l));
                        }
                        assertEquals(expectedRows(l, q, sparsity, choice), got, "layer " + l + " step " + step);
                        try (KvView v = again.prefetch(l, q).await()) { // deterministic: same query, same rows
                            assertEquals(got, KvViews.assertBitExact(v, expectedBytes(l)));
                        }
                    }
                }
                DecodeStats st = d.stats();
                // Step 1: per KV head at most r × GQA dimensions of 4 KiB in each of 2 slices per layer.
                long stepOneMax = 2L * SHAPE.kvHeads() * SHAPE.queryHeads() / SHAPE.kvHeads() * (SHAPE.headDim() / 8)
                        * 4096 * SHAPE.layers() * 3;
                long entries = st.tokensFetched() * SHAPE.entryBytes();
                assertTrue(st.bytesRead() > entries && st.bytesRead() <= entries + stepOneMax + 3L * 2 * 64 * 4096,
                        "both steps are read from the SSDs: " + st);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = DType.class, names = {"F32", "BF16"})
    void scoresTheSlicesOfEveryDtype(DType dtype) {
        shape = new KvShape(1, 8, 2, 32, dtype);
        w = new SyntheticWorkload(WorkloadSpec.builder(shape, TOKENS).seed(11).build());
        try (KvEngine e = KvEngine.open(config(2))) {
            store(e, "s");
            try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(options(0.1))) {
                float[] q = w.query(0, 3);
                try (KvView v = d.prefetch(0, q).await()) {
                    assertEquals(expectedRows(0, q, 0.1), KvViews.assertBitExact(v, expectedBytes(0)));
                }
            }
        }
    }

    @Test
    void aBatchOfDecodersReadsItsStepOneSlicesPerSequence() {
        try (KvEngine e = KvEngine.open(config(2))) {
            store(e, "s");
            try (KvSequence a = e.openSequence("s"); KvSequence b = e.openSequence("s");
                    KvDecoder da = a.decoder(options(0.1)); KvDecoder db = b.decoder(options(0.1))) {
                KvBatch batch = KvBatch.of(da, db);
                KvView[] views = new KvView[2];
                for (int l = 0; l < SHAPE.layers(); l++) {
                    float[][] q = {w.query(l, 1), w.query(l, 2)};
                    batch.prefetch(l, q, views);
                    for (int i = 0; i < 2; i++) {
                        try (KvView v = views[i].await()) {
                            assertEquals(expectedRows(l, q[i], 0.1), KvViews.assertBitExact(v, expectedBytes(l)));
                        }
                    }
                }
            }
        }
    }

    @Test
    void aBudgetCoveringTheLayerIsDenseAttentionWithoutStepOne() {
        try (KvEngine e = KvEngine.open(config(2))) {
            store(e, "s");
            try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(options(1.0))) {
                for (int l = 0; l < SHAPE.layers(); l++) {
                    try (KvView v = d.prefetch(l, w.query(l, 0)).await()) {
                        BitSet all = new BitSet();
                        all.set(0, TOKENS);
                        assertEquals(all, KvViews.assertBitExact(v, expectedBytes(l)));
                    }
                }
                DecodeStats st = d.stats();
                long entryBytes = (long) st.tokensFetched() * SHAPE.entryBytes();
                // Only entries (merged, aligned): no dimension slice was read.
                assertTrue(st.bytesRead() < entryBytes + st.readRequests() * 4096L, st.toString());
            }
        }
    }

    @Test
    void theDualLayoutSurvivesARestartAndItsIndexIsNotK() {
        KvConfig cfg = config(2);
        try (KvEngine e = KvEngine.open(cfg)) {
            store(e, "s");
        }
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(options(0.1))) {
            UnitLayout u = SequenceAccess.of(s).ledger().layer(1).units();
            assertNotNull(u, "the unit layout is in the manifest");
            assertEquals("sparf", u.owner());
            assertEquals(SparF.VERSION, u.version());
            assertEquals(2 * SHAPE.kvHeads() * SHAPE.headDim(), u.unitCount());
            float[] q = w.query(1, 0);
            try (KvView v = d.prefetch(1, q).await()) {
                assertEquals(expectedRows(1, q, 0.1), KvViews.assertBitExact(v, expectedBytes(1)));
            }
            long wholeK = (long) TOKENS * SHAPE.halfEntryBytes() * 2; // as float32, the in-memory baseline's index
            // No keys: SparF builds its index from the stored units, never from K.
            SparFLayer layer = (SparFLayer) SPARF.openLayer(new TestLayerContext(SHAPE, 1, TOKENS, TOKENS, SINKS, WINDOW,
                    null, new io.kvoffload.strategy.StoredUnits(u.owner(), u.version(), u.params(), u.unitCount(),
                    u.unitBytes(), u.memoryBytes())));
            assertTrue(layer.memoryBytes() * 4 < wholeK, layer.memoryBytes() + " B vs whole K " + wholeK + " B");
        }
    }

    @Test
    void aDamagedDimensionSliceIsDetectedNamingTheUnit() throws Exception {
        KvConfig cfg = config(1);
        try (KvEngine e = KvEngine.open(cfg)) {
            store(e, "s");
            try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(options(0.1))) {
                UnitLayout u = SequenceAccess.of(s).ledger().layer(0).units();
                float[] q = w.query(0, 0);
                BitSet before;
                try (KvView v = d.prefetch(0, q).await()) {
                    before = KvViews.assertBitExact(v, expectedBytes(0));
                }
                // Damage every unit of layer 0: whichever dimensions the query picks, one is bad.
                for (int unit = 0; unit < u.unitCount(); unit++) {
                    PoolDamage.damage(cfg, u.unitDevice(unit), u.unitOffset(unit));
                }
                KvChecksumException ex = assertThrows(KvChecksumException.class, () -> d.prefetch(0, q).await());
                assertTrue(ex.getMessage().contains("unit") && ex.getMessage().contains("sparf")
                        && ex.getMessage().contains("layer 0"), ex.getMessage());
                try (KvView v = d.prefetch(1, w.query(1, 0)).await()) { // the decoder stays usable
                    KvViews.assertBitExact(v, expectedBytes(1));
                }
                assertTrue(e.stats().checksumFailures() >= 2, "the first read and the second read both counted");
                assertTrue(!before.isEmpty());
            }
        }
    }

    @Test
    void layingOutAgainOrClosingWithoutACommitLeavesNoSpaceBehind() {
        try (KvEngine e = KvEngine.open(config(2))) {
            long free = free(e);
            try (KvSequence s = e.createSequence("gone", SHAPE); Arena arena = Arena.ofConfined()) {
                s.appendTokens(new int[TOKENS]);
                MemorySegment k = arena.allocate((long) TOKENS * SHAPE.halfEntryBytes());
                MemorySegment v = arena.allocate((long) TOKENS * SHAPE.halfEntryBytes());
                w.writeKv(0, 0, TOKENS, SHAPE.dtype(), k, v);
                s.appendKv(0, k, v);
                SPARF.layOut(s, 0);
                long once = free(e);
                SPARF.layOut(s, 0); // the first dual layout (uncommitted) is freed when replaced
                assertEquals(once, free(e));
            } // closed without a commit: everything it wrote is freed
            assertEquals(free, free(e));
            store(e, "kept");
            long committed = free(e);
            try (KvSequence s = e.openSequenceForAppend("kept", SHAPE)) {
                SPARF.layOut(s, 1); // the committed layout stays until a commit no longer names it
                s.commit();
            }
            assertEquals(committed, free(e), "the superseded dual layout was freed at the commit");
        }
    }

    private static long free(KvEngine e) {
        return e.stats().devices().stream().mapToLong(d -> d.freeBytes()).sum();
    }

    @Test
    void aLayerWithoutTheDualLayoutIsRefusedByName() {
        try (KvEngine e = KvEngine.open(config(1))) {
            TestEngines.storeLaidOut(e, "plain", w, TOKENS, Strategies.named("quest"));
            try (KvSequence s = e.openSequence("plain"); KvDecoder d = s.decoder(options(0.1))) {
                IllegalStateException ex = assertThrows(IllegalStateException.class,
                        () -> d.prefetch(0, w.query(0, 0)).await());
                assertTrue(ex.getMessage().contains("layer 0") && ex.getMessage().contains("SparF"), ex.getMessage());
            }
        }
    }
}
