package io.kvoffload;

import io.kvoffload.testing.Layouts;
import io.kvoffload.strategy.swarm.ClusterOptions;
import io.kvoffload.strategy.swarm.Swarm;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.swarm.MedoidIndex;
import io.kvoffload.testing.KvViews;
import io.kvoffload.testing.PoolDamage;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.attention.ExactAttention;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Swarm's online phase end to end on real files: selection by medoid score until the budget,
 * scheduling, one batched submission, CRC-checked gathering into a view, hot-cluster cache, window.
 */
class KvDecoderTest {
    static final KvShape SHAPE = new KvShape(2, 8, 2, 64, DType.BF16);
    static final int TOKENS = 4096;

    @TempDir
    Path root;
    // Per test (JUnit makes an instance for each): the workload and its bytes as stored.
    SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(11).build());
    final byte[][][] expected = SwarmOfflinePhaseTest.expected(w); // [layer][K|V][bytes]

    KvConfig config(int devices) {
        return TestEngines.config(TestEngines.deviceDirs(root, devices), "portable").blockTokens(16).build();
    }

    /** Stores the workload and clusters both layers from 32 profiled queries. */
    void storeClustered(KvEngine e, String id) {
        try (KvSequence s = e.createSequence(id, SHAPE)) {
            SwarmOfflinePhaseTest.store(s, w);
            for (int l = 0; l < SHAPE.layers(); l++) {
                List<float[]> queries = new ArrayList<>();
                for (int step = 0; step < 32; step++) {
                    queries.add(w.query(l, step));
                }
                Swarm.clusterLayerFromQueries(s, l, queries, ClusterOptions.defaults());
            }
            s.commit();
        }
    }

    /** Every row of the view holds its position's K and V exactly as stored; positions are distinct. */
    BitSet assertBitExact(KvView v) {
        return KvViews.assertBitExact(v, expected[v.layer()]);
    }

    /** The tokens selection must produce: sinks, window, then whole clusters by medoid score until the budget. */
    static BitSet expectedSelection(KvSequence s, int layer, float[] q, DecodeOptions o) {
        int tokens = s.tokenCount(layer);
        BitSet want = new BitSet();
        want.set(0, Math.min(o.sinkTokens(), tokens));
        want.set(Math.max(0, tokens - o.localWindow()), tokens);
        long budget = (long) Math.ceil(o.sparsity() * tokens);
        MedoidIndex index = Layouts.medoidIndex(s, layer);
        for (int c : index.top(q, index.clusterCount())) {
            if (want.cardinality() >= budget) {
                break;
            }
            for (int t : Swarm.clusterMembers(s, layer, c)) {
                want.set(t);
            }
        }
        return want;
    }

    @Test
    void twoLayersInFlightGatherExactlyTheSelectedTokensBitExact() throws Exception {
        DecodeOptions o = DecodeOptions.builder().strategy(Swarm.defaults()).cacheBytes(0).build();
        try (KvEngine e = KvEngine.open(config(4))) {
            storeClustered(e, "s");
            try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(o)) {
                for (int step = 40; step < 44; step++) {
                    float[] q0 = w.query(0, step);
                    float[] q1 = w.query(1, step);
                    KvView v0 = d.prefetch(0, q0);
                    KvView v1 = d.prefetch(1, q1); // layer 1 fetched while layer 0 is consumed
                    assertEquals(expectedSelection(s, 0, q0, o), assertBitExact(v0.await()));
                    v0.close();
                    assertEquals(expectedSelection(s, 1, q1, o), assertBitExact(v1.await()));
                    assertTrue(v1.tokenCount() >= Math.ceil(0.1 * TOKENS), "budget filled: " + v1.tokenCount());
                    v1.close();
                }
                DecodeStats st = d.stats();
                assertEquals(8, st.steps());
                assertTrue(st.bytesRead() > 0 && st.readRequests() > 0, st.toString());
                assertEquals(0, st.tokensCached());
            }
        }
    }

    @Test
    void everyRowComesFromExactlyOnePlaceAndNothingIsReadTwice() throws Exception {
        try (KvEngine e = KvEngine.open(config(4))) {
            storeClustered(e, "s");
            try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(DecodeOptions.builder().strategy(Swarm.defaults()).build())) {
                long rows = 0;
                for (int step = 0; step < 30; step++) {
                    // Queries repeat, so hot clusters get cached and later steps read less.
                    try (KvView v = d.prefetch(0, w.query(0, 50 + step % 3)).await()) {
                        assertBitExact(v);
                        rows += v.tokenCount();
                    }
                }
                DecodeStats st = d.stats();
                // Swarm scheduling reads each entry once and never one DRAM holds (Eq. 8).
                assertEquals(rows, st.tokensFetched() + st.tokensCached() + st.tokensWindow(), st.toString());
                assertTrue(st.tokensCached() > 0 && st.cacheHitRate() > 0.3, st.toString());
                long budget = e.config().dramBudgetBytes() / 8 / SHAPE.layers();
                assertTrue(st.cacheBytes() <= budget, st.cacheBytes() + " > " + budget);
            }
        }
    }

    @Test
    void staticAndNoDedupAblationsReadMoreThanSwarm() throws Exception {
        try (KvEngine e = KvEngine.open(config(4))) {
            storeClustered(e, "s");
            long[] bytes = new long[DecodeOptions.Scheduling.values().length];
            for (DecodeOptions.Scheduling m : DecodeOptions.Scheduling.values()) {
                DecodeOptions o = DecodeOptions.builder().strategy(Swarm.defaults()).cacheBytes(0).scheduling(m).sparsity(0.2).build();
                try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(o)) {
                    for (int step = 0; step < 5; step++) {
                        try (KvView v = d.prefetch(1, w.query(1, step)).await()) {
                            assertBitExact(v);
                        }
                    }
                    bytes[m.ordinal()] = d.stats().tokensFetched();
                }
            }
            long swarm = bytes[DecodeOptions.Scheduling.BALANCED.ordinal()];
            assertEquals(swarm, bytes[DecodeOptions.Scheduling.NO_BALANCE.ordinal()], "dedup reads the same entries");
            assertTrue(bytes[DecodeOptions.Scheduling.NO_DEDUP.ordinal()] >= swarm);
            assertTrue(bytes[DecodeOptions.Scheduling.STATIC.ordinal()] >= swarm);
        }
    }

    @Test
    void fullBudgetViewReproducesDenseAttention() throws Exception {
        DecodeOptions o = DecodeOptions.builder().strategy(Swarm.defaults()).sparsity(1.0).build();
        try (KvEngine e = KvEngine.open(config(2))) {
            storeClustered(e, "s");
            try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(o)) {
                float[] q = w.query(0, 7);
                SparseAttention kernel = new SparseAttention(SHAPE);
                float[] out = new float[q.length];
                try (KvView v = d.prefetch(0, q).await()) {
                    assertEquals(TOKENS, v.tokenCount());
                    kernel.attend(v, q, out);
                }
                float[] dense = ExactAttention.of(SHAPE).compute(w.layer(0), q).output();
                // The stored KV is BF16, the reference float: they agree to BF16 precision.
                assertTrue(relativeError(out, dense) < 2e-2, "relative error " + relativeError(out, dense));

                DecodeOptions sparse = DecodeOptions.builder().strategy(Swarm.defaults()).build();
                try (KvDecoder d2 = s.decoder(sparse); KvView v = d2.prefetch(0, q).await()) {
                    kernel.attend(v, q, out);
                    double err = relativeError(out, dense);
                    assertTrue(err > 0 && err < 1, "10% sparse attention error " + err);
                }
            }
        }
    }

    static double relativeError(float[] a, float[] b) {
        double num = 0, den = 0;
        for (int i = 0; i < a.length; i++) {
            num += (a[i] - b[i]) * (double) (a[i] - b[i]);
            den += b[i] * (double) b[i];
        }
        return Math.sqrt(num / den);
    }

    @Test
    void appendedTokensJoinTheWindowAndTheView() throws Exception {
        DecodeOptions o = DecodeOptions.builder().strategy(Swarm.defaults()).strategy(Swarm.builder().maintenance(Swarm.Maintenance.OFF).build()).build();
        try (KvEngine e = KvEngine.open(config(2))) {
            storeClustered(e, "s");
            try (KvSequence s = e.openSequenceForAppend("s"); KvDecoder d = s.decoder(o); Arena a = Arena.ofConfined()) {
                d.prefetch(0, w.query(0, 1)).await().close();
                MemorySegment k = a.allocate(SHAPE.halfEntryBytes());
                MemorySegment v = a.allocate(SHAPE.halfEntryBytes());
                k.fill((byte) 7);
                v.fill((byte) 9);
                s.appendTokens(5);
                d.appendKv(0, k, v);
                d.appendKv(1, k, v);
                try (KvView view = d.prefetch(0, w.query(0, 2)).await()) {
                    int row = -1;
                    for (int r = 0; r < view.tokenCount(); r++) {
                        if (view.position(r) == TOKENS) {
                            row = r;
                        }
                    }
                    assertTrue(row >= 0, "the new token is in the view");
                    int rb = SHAPE.headDim() * SHAPE.dtype().bytes();
                    for (int h = 0; h < SHAPE.kvHeads(); h++) {
                        assertEquals(7, view.keys(h).get(ValueLayout.JAVA_BYTE, (long) row * rb));
                        assertEquals(9, view.values(h).get(ValueLayout.JAVA_BYTE, (long) row * rb + rb - 1));
                    }
                }
                s.commit();
            }
        }
    }

    @Test
    void tokensLeavingTheWindowJoinClustersOnTheSsdsAndPersist() throws Exception {
        int extra = 200;
        SyntheticWorkload longer = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS + extra).seed(11).build());
        w = longer; // the stored prefix and the appended tokens come from one workload
        for (int l = 0; l < SHAPE.layers(); l++) {
            expected[l] = TestEngines.kvBytes(longer, l, TOKENS + extra);
        }
        for (Swarm.Maintenance m : List.of(Swarm.Maintenance.SWARM, Swarm.Maintenance.MIN_SIZE,
                Swarm.Maintenance.MIN_DIFF)) {
            Path dir = root.resolve(m.name());
            KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(dir, 2), "portable").blockTokens(16).build();
            DecodeOptions o = DecodeOptions.builder().strategy(Swarm.defaults()).localWindow(64).strategy(Swarm.builder().maintenance(m).build()).build();
            int clustersBefore;
            try (KvEngine e = KvEngine.open(cfg)) {
                storeClustered(e, "s");
                try (KvSequence s = e.openSequenceForAppend("s"); KvDecoder d = s.decoder(o); Arena a = Arena.ofConfined()) {
                    clustersBefore = Swarm.clusterCount(s, 0);
                    MemorySegment k = a.allocate(SHAPE.halfEntryBytes());
                    MemorySegment v = a.allocate(SHAPE.halfEntryBytes());
                    for (int t = TOKENS; t < TOKENS + extra; t++) {
                        for (int l = 0; l < SHAPE.layers(); l++) {
                            try (KvView view = d.prefetch(l, longer.query(l, t)).await()) {
                                assertBitExact(view);
                            }
                        }
                        s.appendTokens(1);
                        for (int l = 0; l < SHAPE.layers(); l++) {
                            longer.writeKv(l, t, 1, SHAPE.dtype(), k, v);
                            d.appendKv(l, k, v);
                        }
                    }
                    ClusterLayout cl = Layouts.clusterLayout(s, 0);
                    // 200 tokens appended, a 64-token window, written every 16 evictions.
                    assertTrue(cl.clusteredTokens() >= TOKENS + extra - 64 - 16, m + ": " + cl.clusteredTokens());
                    assertTrue(m != Swarm.Maintenance.MIN_SIZE || Swarm.clusterCount(s, 0) == clustersBefore,
                            "Min-Size joins existing clusters only");
                    for (int l = 0; l < SHAPE.layers(); l++) {
                        try (KvView view = d.prefetch(l, longer.query(l, 999)).await()) {
                            assertBitExact(view);
                        }
                    }
                    s.commit();
                }
            }
            try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.openSequence("s")) {
                assertTrue(Layouts.clusterLayout(s, 0).clusteredTokens() > TOKENS, "the grown clusters persist");
                byte[][] exp = expected[0];
                int half = SHAPE.halfEntryBytes();
                BitSet covered = new BitSet();
                try (Arena a = Arena.ofConfined()) {
                    for (int c = 0; c < Swarm.clusterCount(s, 0); c++) {
                        int[] members = Swarm.clusterMembers(s, 0, c);
                        MemorySegment k = a.allocate((long) members.length * half);
                        MemorySegment v = a.allocate((long) members.length * half);
                        s.read(0, members, k, v);
                        for (int i = 0; i < members.length; i++) {
                            assertEquals(-1, k.asSlice((long) i * half, half).mismatch(
                                    MemorySegment.ofArray(exp[0]).asSlice((long) members[i] * half, half)));
                            covered.set(members[i]);
                        }
                    }
                }
                assertEquals(Layouts.clusterLayout(s, 0).clusteredTokens(), covered.cardinality());
                try (KvDecoder d = s.decoder(DecodeOptions.builder().strategy(Swarm.defaults()).build()); KvView view = d.prefetch(0, longer.query(0, 5))
                        .await()) {
                    assertBitExact(view);
                }
            }
        }
    }

    @Test
    void concurrentSequencesDecodeOnDifferentThreads() throws Exception {
        try (KvEngine e = KvEngine.open(config(4))) {
            storeClustered(e, "a");
            storeClustered(e, "b");
            ExecutorService pool = Executors.newFixedThreadPool(2);
            try {
                List<Future<Long>> results = new ArrayList<>();
                for (String id : List.of("a", "b")) {
                    results.add(pool.submit(() -> {
                        long rows = 0;
                        try (KvSequence s = e.openSequence(id); KvDecoder d = s.decoder(DecodeOptions.builder().strategy(Swarm.defaults()).build())) {
                            for (int step = 0; step < 20; step++) {
                                KvView v0 = d.prefetch(0, w.query(0, step));
                                KvView v1 = d.prefetch(1, w.query(1, step));
                                rows += assertBitExact(v0.await()).cardinality();
                                v0.close();
                                rows += assertBitExact(v1.await()).cardinality();
                                v1.close();
                            }
                        }
                        return rows;
                    }));
                }
                for (Future<Long> f : results) {
                    assertTrue(f.get() >= 40L * 410);
                }
            } finally {
                pool.shutdownNow();
            }
        }
    }

    @Test
    void callerChosenPositionsGoThroughTheSamePathBitExact() throws Exception {
        try (KvEngine e = KvEngine.open(config(4))) {
            storeClustered(e, "s");
            try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(DecodeOptions.builder().strategy(Swarm.defaults()).build())) {
                java.util.SplittableRandom rnd = new java.util.SplittableRandom(3);
                for (int step = 0; step < 10; step++) {
                    int n = 1 + rnd.nextInt(600);
                    int[] positions = new int[n + 3];
                    BitSet want = new BitSet();
                    for (int i = 0; i < n; i++) {
                        positions[i] = rnd.nextInt(TOKENS);
                        want.set(positions[i]);
                    }
                    try (KvView v = d.prefetch(step % 2, positions, n).await()) {
                        assertEquals(want, assertBitExact(v), "exactly the given positions, each once");
                    }
                }
                assertMessage(IllegalArgumentException.class, () -> d.prefetch(0, new int[] {5, TOKENS}, 2),
                        "positions[1] = " + TOKENS, "0.." + (TOKENS - 1));
                assertMessage(IllegalArgumentException.class, () -> d.prefetch(0, new int[] {5}, 2), "count = 2");
            }
        }
    }

    @Test
    void unclusteredLayerIsAttendedInFullFromDram() throws Exception {
        try (KvEngine e = KvEngine.open(config(1)); KvSequence s = e.createSequence("u", SHAPE)) {
            SwarmOfflinePhaseTest.store(s, w);
            s.commit();
            try (KvDecoder d = s.decoder(DecodeOptions.builder().strategy(Swarm.defaults()).build()); KvView v = d.prefetch(1, w.query(1, 0)).await()) {
                assertEquals(TOKENS, assertBitExact(v).cardinality());
            }
        }
    }

    @Test
    void corruptedEntryFailsTheFetchAndNeverReachesTheView() throws Exception {
        KvConfig cfg = config(1);
        DecodeOptions o = DecodeOptions.builder().strategy(Swarm.defaults()).cacheBytes(0).sinkTokens(0).localWindow(0).sparsity(1.0).build();
        try (KvEngine e = KvEngine.open(cfg)) {
            storeClustered(e, "s");
            PoolDamage.damageEntry(e, cfg, "s", 123);
            try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(o)) {
                KvView v = d.prefetch(0, w.query(0, 0));
                KvChecksumException ex = assertThrows(KvChecksumException.class, v::await);
                assertTrue(ex.getMessage().contains("layer 0"), ex.getMessage());
                assertTrue(!v.isReady());
                assertThrows(IllegalStateException.class, v::tokenCount);
                // The decoder stays usable for other layers.
                try (KvView ok = d.prefetch(1, w.query(1, 0)).await()) {
                    assertBitExact(ok);
                }
                // The failed fetch waited for its remaining reads (gathering stops at the first bad
                // entry), so its staging is free: the layer can be fetched again, failing the same way.
                for (int i = 0; i < 3; i++) {
                    KvView again = d.prefetch(0, w.query(0, 0));
                    assertThrows(KvChecksumException.class, again::await);
                }
            }
        }
    }

    @Test
    void badUseIsRejectedWithItsReason() throws Exception {
        try (KvEngine e = KvEngine.open(config(2))) {
            storeClustered(e, "s");
            try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(DecodeOptions.builder().strategy(Swarm.defaults()).build())) {
                float[] q = w.query(0, 0);
                assertMessage(IllegalArgumentException.class, () -> d.prefetch(2, q), "layer = 2");
                assertMessage(IllegalArgumentException.class, () -> d.prefetch(0, new float[3]), "query.length = 3",
                        "512");
                float[] nan = q.clone();
                nan[5] = Float.NaN;
                assertMessage(IllegalArgumentException.class, () -> d.prefetch(0, nan), "query[5] = NaN");
                KvView v = d.prefetch(0, q);
                assertMessage(IllegalStateException.class, () -> d.prefetch(0, q), "already has a fetch in flight");
                assertMessage(IllegalStateException.class, v::tokenCount, "still fetching");
                KvView v1 = d.prefetch(1, w.query(1, 0));
                v.await(); // held, not closed: still occupies its pipeline slot
                assertMessage(IllegalStateException.class, () -> d.prefetch(0, q), "all 2 views");
                v.close();
                v1.await().close();
                assertMessage(IllegalStateException.class, v::tokenCount, "closed");
            }
            assertMessage(IllegalArgumentException.class, () -> DecodeOptions.builder().strategy(Swarm.defaults()).sparsity(0).build(),
                    "sparsity = 0.0", "(0, 1]");
            assertMessage(IllegalArgumentException.class, () -> DecodeOptions.builder().strategy(Swarm.defaults()).pipelineDepth(0).build(),
                    "pipelineDepth");
            try (KvSequence s = e.openSequence("s")) {
                KvDecoder d = s.decoder(DecodeOptions.builder().strategy(Swarm.defaults()).build());
                d.close();
                assertMessage(IllegalStateException.class, () -> d.prefetch(0, w.query(0, 0)), "closed");
            }
        }
    }

    static <T extends Throwable> void assertMessage(Class<T> type, org.junit.jupiter.api.function.Executable ex,
            String... parts) {
        T t = assertThrows(type, ex);
        for (String p : parts) {
            assertTrue(t.getMessage().contains(p), "'" + t.getMessage() + "' lacks '" + p + "'");
        }
    }
}
