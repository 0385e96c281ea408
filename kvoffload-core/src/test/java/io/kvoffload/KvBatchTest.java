package io.kvoffload;

import static io.kvoffload.KvDecoderTest.assertMessage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.testing.BatchRuns;
import io.kvoffload.testing.KvViews;
import io.kvoffload.testing.PoolDamage;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Batched decoding on the portable backend: a batch's views equal the same sequences decoded one
 * by one, a corrupted entry fails only its own sequence's view, and bad use is refused by name.
 */
class KvBatchTest {
    static final KvShape SHAPE = new KvShape(2, 8, 2, 64, DType.BF16);
    static final int TOKENS = 2048;
    static final List<String> IDS = List.of("a", "b", "c", "d");

    @TempDir
    Path root;

    final SyntheticWorkload[] w = new SyntheticWorkload[IDS.size()];
    final byte[][][][] expected = new byte[IDS.size()][][][];

    KvConfig config(int devices) {
        return TestEngines.config(TestEngines.deviceDirs(root, devices), "portable").build();
    }

    void store(KvEngine e, int n) {
        for (int i = 0; i < n; i++) {
            w[i] = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(20 + i).build());
            expected[i] = TestEngines.storeClustered(e, IDS.get(i), w[i], TOKENS, 100, 16);
        }
    }

    @Test
    void aBatchOfFourEqualsTheSequencesDecodedOneByOne() throws Exception {
        try (KvEngine e = KvEngine.open(config(2))) {
            store(e, 4);
            // Eight decoders at once (four batched, four one by one) in a 64 MiB budget: each caches 2 MiB
            // (every strategy now keeps a hot cache; by default an eighth of the budget each).
            DecodeOptions o = DecodeOptions.builder().sparsity(0.2).cacheBytes(2L << 20).build();
            BatchRuns.assertBatchMatchesOneByOne(e, IDS, w, expected, o, 4);
            // Swarm's own path, no cache, no window: every row read from the SSDs through the shared submission.
            DecodeOptions cold = DecodeOptions.builder().strategy(Swarm.defaults()).cacheBytes(0).sinkTokens(0)
                    .localWindow(0).sparsity(0.3).build();
            BatchRuns.assertBatchMatchesOneByOne(e, IDS, w, expected, cold, 2);
        }
    }

    /**
     * Under head sharding the default strategy reads per-head-group sets (over Swarm's clusters with
     * replicas here): a batch's shared submission serves them exactly as decoding one by one does.
     */
    @Test
    void aBatchOfPerHeadViewsEqualsTheSequencesDecodedOneByOne() throws Exception {
        KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(root, 2), "portable")
                .placement(io.kvoffload.Placement.HEAD_SHARDED).build();
        try (KvEngine e = KvEngine.open(cfg)) {
            store(e, 3);
            DecodeOptions o = DecodeOptions.builder().sparsity(0.2).cacheBytes(2L << 20).build();
            byte[][][][] views = BatchRuns.assertBatchMatchesOneByOne(e, IDS.subList(0, 3), w, expected, o, 3);
            boolean partial = false;
            for (byte[][][] step : views) {
                for (byte[][] layer : step) {
                    for (byte[] v : layer) {
                        int rows = v.length / (4 + 2 * SHAPE.kvHeads() * SHAPE.headDim() * 2 + 8);
                        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(v).order(java.nio.ByteOrder.nativeOrder());
                        for (int r = 0; r < rows; r++) {
                            partial |= b.getLong(v.length - 8 * rows + 8 * r) != 3L;
                        }
                    }
                }
            }
            assertTrue(partial, "some rows hold one of the two KV heads");
        }
    }

    @Test
    void aCorruptedEntryFailsOnlyItsSequencesView() throws Exception {
        KvConfig cfg = config(1); // one copy of every entry: no replica to fail over to
        DecodeOptions o = DecodeOptions.builder().strategy(Swarm.defaults()).cacheBytes(0).sinkTokens(0).localWindow(0)
                .sparsity(1.0).build();
        try (KvEngine e = KvEngine.open(cfg)) {
            store(e, 3);
            PoolDamage.damageEntry(e, cfg, "b", 123);
            try (KvSequence a = e.openSequence("a"); KvSequence b = e.openSequence("b");
                    KvSequence c = e.openSequence("c"); KvDecoder da = a.decoder(o); KvDecoder db = b.decoder(o);
                    KvDecoder dc = c.decoder(o)) {
                KvBatch batch = KvBatch.of(da, db, dc);
                KvView[] views = new KvView[3];
                for (int round = 0; round < 3; round++) {
                    batch.prefetch(0, queries(0, round, 3), views);
                    // The healthy sequences are awaited after the failed one: the failure left them intact.
                    KvChecksumException ex = assertThrows(KvChecksumException.class, views[1]::await);
                    assertTrue(ex.getMessage().contains("layer 0"), ex.getMessage());
                    assertFalse(views[1].isReady());
                    for (int i : new int[] {0, 2}) {
                        try (KvView v = views[i].await()) {
                            assertEquals(TOKENS, KvViews.assertBitExact(v, expected[i][0]).cardinality());
                        }
                    }
                    // Layer 1 of every sequence, b included, is intact.
                    batch.prefetch(1, queries(1, round, 3), views);
                    for (int i = 0; i < 3; i++) {
                        try (KvView v = views[i].await()) {
                            assertEquals(TOKENS, KvViews.assertBitExact(v, expected[i][1]).cardinality());
                        }
                    }
                }
                assertTrue(e.stats().checksumFailures() >= 3, "every round's fetch of b failed: "
                        + e.stats().checksumFailures());
            }
        }
    }

    /**
     * Injected read errors and bit flips on the shared submission's reads: each sequence's view is
     * either bit-exact (the failed copy served from a replica or reread, as for one decoder) or its
     * own await fails with the error; the other views are never affected.
     */
    @Test
    void injectedFaultsAreServedOrFailOnlyTheirSequence() throws Exception {
        KvConfig clean = config(2);
        try (KvEngine e = KvEngine.open(clean)) {
            store(e, 3);
        }
        KvConfig faulty = TestEngines.config(clean.ssdDirectories(), "portable")
                .faultInjection(FaultInjection.builder(5).eio(0.003).bitFlipRead(0.003).build()).build();
        DecodeOptions o = DecodeOptions.builder().cacheBytes(0).sinkTokens(0).localWindow(0).sparsity(0.2).build();
        int ok = 0;
        int failed = 0;
        int notStarted = 0;
        try (KvEngine e = KvEngine.open(faulty); KvSequence a = e.openSequence("a"); KvSequence b = e.openSequence("b");
                KvSequence c = e.openSequence("c"); KvDecoder da = a.decoder(o); KvDecoder db = b.decoder(o);
                KvDecoder dc = c.decoder(o)) {
            KvBatch batch = KvBatch.of(da, db, dc);
            KvView[] views = new KvView[3];
            for (int step = 0; step < 6; step++) {
                for (int l = 0; l < 2; l++) {
                    try {
                        batch.prefetch(l, queries(l, step, 3), views);
                    } catch (KvIoException | KvChecksumException ex) {
                        // A layer's first fetch reads its medoid keys: a fault there refuses the start
                        // (the started sequences are closed again) and the next step retries.
                        notStarted++;
                        continue;
                    }
                    for (int i = 0; i < 3; i++) {
                        try (KvView v = views[i].await()) {
                            KvViews.assertBitExact(v, expected[i][l]);
                            ok++;
                        } catch (KvIoException | KvChecksumException ex) {
                            assertFalse(views[i].isReady());
                            failed++;
                        }
                    }
                }
            }
            KvStats st = e.stats();
            assertFalse(st.injectedFaults().isEmpty(), "faults were injected: " + st);
            assertTrue(st.failovers() + st.rereads() + failed > 0, "some fault reached a fetch: " + st);
        }
        assertEquals(36, ok + failed + 3 * notStarted);
        assertTrue(ok > failed, ok + " views served, " + failed + " failed");
    }

    float[][] queries(int layer, int step, int n) {
        float[][] q = new float[n][];
        for (int i = 0; i < n; i++) {
            q[i] = w[i].query(layer, step);
        }
        return q;
    }

    @Test
    void badUseIsRefusedByName() throws Exception {
        try (KvEngine e = KvEngine.open(config(2)); KvEngine other = KvEngine.open(
                TestEngines.config(TestEngines.deviceDirs(root.resolve("other"), 1), "portable").build())) {
            store(e, 2);
            try (KvSequence a = e.openSequence("a"); KvSequence b = e.openSequence("b");
                    KvSequence x = other.createSequence("x", SHAPE); KvDecoder da = a.decoder(DecodeOptions.defaults());
                    KvDecoder db = b.decoder(DecodeOptions.defaults());
                    KvDecoder dx = x.decoder(DecodeOptions.defaults())) {
                assertMessage(IllegalArgumentException.class, () -> KvBatch.of(da, dx), "decoders[1]",
                        "another engine");
                assertMessage(IllegalArgumentException.class, () -> KvBatch.of(da, db, da), "decoders[2] is decoders[0]");
                assertMessage(IllegalArgumentException.class, KvBatch::of, "decoders is empty");
                KvBatch batch = KvBatch.of(List.of(da, db));
                KvView[] views = new KvView[2];
                assertMessage(IllegalArgumentException.class, () -> batch.prefetch(0, queries(0, 0, 1), views),
                        "queries.length = 1", "allowed: 2");
                assertMessage(IllegalArgumentException.class, () -> batch.prefetch(0, queries(0, 0, 2), new KvView[1]),
                        "views.length = 1");
                assertMessage(IllegalArgumentException.class, () -> batch.prefetch(2, queries(0, 0, 2), views),
                        "layer = 2");
                float[][] bad = queries(0, 0, 2);
                bad[1] = new float[3];
                assertMessage(IllegalArgumentException.class, () -> batch.prefetch(0, bad, views), "queries[1].length = 3");
                bad[1] = queries(0, 0, 2)[1];
                bad[1][7] = Float.NaN;
                assertMessage(IllegalArgumentException.class, () -> batch.prefetch(0, bad, views), "queries[1][7] = NaN");
                // b already fetches layer 0: the batch names it and closes a's fetch again.
                KvView held = db.prefetch(0, w[1].query(0, 0));
                assertMessage(IllegalStateException.class, () -> batch.prefetch(0, queries(0, 0, 2), views),
                        "sequence 1 of the batch", "already has a fetch in flight");
                held.await().close();
                batch.prefetch(0, queries(0, 0, 2), views); // both decoders are usable again
                for (int i = 0; i < 2; i++) {
                    try (KvView v = views[i].await()) {
                        KvViews.assertBitExact(v, expected[i][0]);
                    }
                }
                db.close();
                assertMessage(IllegalStateException.class, () -> batch.prefetch(1, queries(1, 0, 2), views),
                        "sequence 1 of the batch", "is closed");
                assertMessage(IllegalStateException.class, () -> KvBatch.of(da, db), "decoders[1]", "is closed");
                // a's fetch was closed again when b refused: a can start layer 1 alone.
                da.prefetch(1, w[0].query(1, 0)).await().close();
            }
        }
    }
}
