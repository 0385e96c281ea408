package io.kvoffload;

import io.kvoffload.testing.Layouts;
import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.strategy.kvswap.GroupSummary;
import io.kvoffload.strategy.kvswap.GroupOptions;
import io.kvoffload.strategy.kvswap.KvSwap;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.kvswap.CompressedKCache;
import io.kvoffload.internal.kvswap.GroupPredictor;
import io.kvoffload.internal.kvswap.LowRankAdapter;
import io.kvoffload.internal.storage.GroupLayout;
import io.kvoffload.testing.Allocations;
import io.kvoffload.testing.KvViews;
import io.kvoffload.testing.PoolDamage;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.internal.util.ElementCodec;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * KVSwap through the storage and I/O path: groups laid out group-major on real files, predicted
 * from the compressed K cache, fetched through the bucket scheduler and one batched submission,
 * CRC-checked, gathered bit-exact; the reuse buffer; persistence across a restart.
 */
class KvSwapDecoderTest {
    static final KvShape SHAPE = KvDecoderTest.SHAPE;
    static final int TOKENS = KvDecoderTest.TOKENS;

    @TempDir
    Path root;
    // Per test (JUnit makes an instance for each): the workload and its bytes as stored.
    final SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(11).build());
    final byte[][][] expected = SwarmOfflinePhaseTest.expected(w); // [layer][K|V][bytes]

    KvConfig config(int devices) {
        return TestEngines.config(TestEngines.deviceDirs(root, devices), "portable").blockTokens(16).build();
    }

    static DecodeOptions.Builder kvswap() {
        return DecodeOptions.builder().strategy(Swarm.defaults()).strategy(KvSwap.defaults()).budgetTokens(400).sinkTokens(4)
                .localWindow(0);
    }

    void storeGrouped(KvEngine e, String id, int g) {
        try (KvSequence s = e.createSequence(id, SHAPE)) {
            SwarmOfflinePhaseTest.store(s, w);
            for (int l = 0; l < SHAPE.layers(); l++) {
                GroupSummary sum = KvSwap.groupLayer(s, l, GroupOptions.defaults().withGroupSize(g));
                assertEquals(TOKENS / g * g, sum.groupedTokens());
                assertEquals(SHAPE.kvHeads() * SHAPE.headDim() / 8, sum.rank(), "r defaults to kvHeads × headDim / 8");
            }
            s.commit();
        }
    }

    /** Rows are distinct positions holding exactly the stored K and V; returns the positions. */
    BitSet assertBitExact(KvView v) {
        return KvViews.assertBitExact(v, expected[v.layer()]);
    }

    /** An independent compressed K cache: the source keys (as stored, BF16) through the layout's adapter. */
    CompressedKCache referenceCache(LowRankAdapter a, int layer, int tokens) {
        int el = SHAPE.elementsPerToken();
        float[] keys = new float[tokens * el];
        ElementCodec.read(SHAPE.dtype(), MemorySegment.ofArray(expected[layer][0]), 0, keys, 0, tokens * el);
        CompressedKCache c = new CompressedKCache(a, DType.F16, tokens);
        c.append(keys, 0, tokens);
        return c;
    }

    /** Sinks, rolling buffer (tokens past the last full group) and every token of the predicted groups. */
    BitSet expectedView(KvSequence s, int layer, float[] q, int g, int budget, int sinks) {
        GroupLayout gl = Layouts.groupLayout(s, layer);
        CompressedKCache c = referenceCache((LowRankAdapter) gl.state(), layer, gl.groupedTokens());
        GroupPredictor p = new GroupPredictor(c, SHAPE.queryHeads(), g);
        int[] groups = new int[p.groupCount()];
        // Groups between the sinks and the rolling buffer, until their tokens there fill the budget.
        int m = p.selectGroupsBetween(q, budget, sinks, gl.groupedTokens(), groups);
        BitSet want = new BitSet();
        want.set(0, sinks);
        want.set(gl.groupedTokens(), TOKENS);
        for (int i = 0; i < m; i++) {
            want.set(groups[i] * g, groups[i] * g + g);
        }
        return want;
    }

    /**
     * With no explicit budget KVSwap spends the shared one: ⌈sparsity × tokens⌉ rows with sinks and
     * window inside (rounded up to whole groups), not that many groups' tokens on top of them, nor fewer
     * where groups fall in the window (issue #16).
     */
    @Test
    void autoBudgetCountsSinksAndWindowInside() throws Exception {
        int g = 4;
        try (KvEngine e = KvEngine.open(config(2))) {
            storeGrouped(e, "auto", g);
            DecodeOptions o = DecodeOptions.builder().strategy(KvSwap.defaults()).sparsity(0.1).sinkTokens(4)
                    .localWindow(128).build();
            int shared = (int) Math.ceil(0.1 * TOKENS);
            try (KvSequence s = e.openSequence("auto"); KvDecoder d = s.decoder(o)) {
                for (int step = 40; step < 44; step++) {
                    try (KvView v = d.prefetch(0, w.query(0, step)).await()) {
                        // Groups are ranked between the sinks and the window only, so the budget is spent
                        // whole: at least the shared rows, and under one group more.
                        assertTrue(v.tokenCount() >= shared && v.tokenCount() < shared + g,
                                "rows " + v.tokenCount() + " for a shared budget of " + shared);
                    }
                }
            }
        }
    }

    /** The default rank keeps the compression ratio at 8 whatever the KV heads (issue #16: r = headDim made it grow with them). */
    @Test
    void defaultRankKeepsTheCompressionRatioWhateverTheKvHeads() {
        for (int kvHeads : new int[] {1, 4, 8, 16, 32}) {
            for (int headDim : new int[] {64, 80, 128}) {
                KvShape shape = new KvShape(1, 32, kvHeads, headDim, DType.BF16);
                int r = GroupOptions.defaults().rankFor(shape);
                assertEquals(8.0, kvHeads * headDim / (double) r, 1e-9, shape.fingerprint());
            }
        }
        assertEquals(40, GroupOptions.defaults().withRank(40).rankFor(new KvShape(1, 32, 8, 128, DType.BF16)));
    }

    @Test
    void viewHoldsExactlyThePredictedGroupsPlusSinksAndRollingBufferBitExact() throws Exception {
        for (int g : new int[] {4, 3}) { // G = 3 leaves one token in the rolling buffer and an unaligned group
            try (KvEngine e = KvEngine.open(config(3))) {
                storeGrouped(e, "g" + g, g);
                DecodeOptions o = kvswap().build();
                try (KvSequence s = e.openSequence("g" + g); KvDecoder d = s.decoder(o)) {
                    for (int step = 40; step < 44; step++) {
                        float[] q0 = w.query(0, step);
                        float[] q1 = w.query(1, step);
                        KvView v0 = d.prefetch(0, q0);
                        KvView v1 = d.prefetch(1, q1); // layer 1 fetched while layer 0 is consumed
                        assertEquals(expectedView(s, 0, q0, g, 400, 4), assertBitExact(v0.await()), "G " + g);
                        v0.close();
                        assertEquals(expectedView(s, 1, q1, g, 400, 4), assertBitExact(v1.await()), "G " + g);
                        v1.close();
                    }
                    DecodeStats st = d.stats();
                    assertEquals(8, st.steps());
                    assertEquals(8L * GroupPredictor.groupsFor(400, g), st.clustersSelected());
                    assertTrue(st.bytesRead() > 0 && st.readRequests() > 0, st.toString());
                    // Adjacent groups on a device merge: fewer reads than groups fetched.
                    assertTrue(st.readRequests() < st.reuseMisses(), st.toString());
                }
            }
        }
    }

    @Test
    void theTopScoringTokenOfEveryGroupRanksTheSelection() throws Exception {
        int g = 4;
        try (KvEngine e = KvEngine.open(config(2))) {
            storeGrouped(e, "s", g);
            try (KvSequence s = e.openSequence("s")) {
                GroupLayout gl = Layouts.groupLayout(s, 0);
                LowRankAdapter a = (LowRankAdapter) gl.state();
                CompressedKCache c = referenceCache(a, 0, gl.groupedTokens());
                for (int step = 0; step < 8; step++) {
                    float[] q = w.query(0, step);
                    float[] lr = lowRankQuery(a, q);
                    float[] best = new float[gl.groupCount()];
                    int top = -1;
                    float topScore = Float.NEGATIVE_INFINITY;
                    float[] k = new float[a.rank()];
                    java.util.Arrays.fill(best, Float.NEGATIVE_INFINITY);
                    for (int t = 0; t < gl.groupedTokens(); t++) {
                        c.get(t, k, 0);
                        float sc = 0;
                        for (int j = 0; j < k.length; j++) {
                            sc += lr[j] * k[j];
                        }
                        best[t / g] = Math.max(best[t / g], sc);
                        if (sc > topScore) {
                            topScore = sc;
                            top = t;
                        }
                    }
                    BitSet view;
                    try (KvDecoder d = s.decoder(kvswap().sinkTokens(0).build()); KvView v = d.prefetch(0, q).await()) {
                        view = assertBitExact(v);
                    }
                    assertTrue(view.get(top), "the top-scoring token " + top + " is in a selected group");
                    float minIn = Float.POSITIVE_INFINITY;
                    float maxOut = Float.NEGATIVE_INFINITY;
                    for (int grp = 0; grp < best.length; grp++) {
                        if (view.get(grp * g)) {
                            minIn = Math.min(minIn, best[grp]);
                        } else {
                            maxOut = Math.max(maxOut, best[grp]);
                        }
                    }
                    // A group ranks by its best token: every selected group beats every other (up to float rounding).
                    assertTrue(minIn >= maxOut - 1e-3f * Math.abs(topScore), minIn + " < " + maxOut);
                    assertEquals(100, view.cardinality() / g);
                }
            }
        }
    }

    /** (1/Hkv) Σ_h mean over h's query heads · A_h, written out from the definition. */
    static float[] lowRankQuery(LowRankAdapter a, float[] q) {
        int d = SHAPE.headDim();
        int gqa = SHAPE.queryHeads() / SHAPE.kvHeads();
        float[] out = new float[a.rank()];
        for (int h = 0; h < SHAPE.kvHeads(); h++) {
            for (int i = 0; i < d; i++) {
                float mean = 0;
                for (int x = 0; x < gqa; x++) {
                    mean += q[(h * gqa + x) * d + i];
                }
                mean /= gqa;
                for (int j = 0; j < a.rank(); j++) {
                    out[j] += mean * a.at(h * d + i, j) / SHAPE.kvHeads();
                }
            }
        }
        return out;
    }

    @Test
    void reuseHitsSkipIoAndHitsPlusMissesAreTheRequestedGroups() throws Exception {
        try (KvEngine e = KvEngine.open(config(4))) {
            storeGrouped(e, "s", 4);
            long[] bytes = new long[3];
            long[] fetched = new long[3];
            DecodeOptions[] opts = {kvswap().sinkTokens(0).strategy(KvSwap.defaults().withReuseSlots(0)).build(), kvswap().sinkTokens(0).build(),
                kvswap().sinkTokens(0).strategy(KvSwap.defaults().withReusePolicy(KvSwap.ReusePolicy.REPLACE_UNREQUESTED)).build()};
            for (int i = 0; i < opts.length; i++) {
                try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(opts[i])) {
                    long rows = 0;
                    for (int step = 0; step < 30; step++) {
                        // Queries repeat, so later steps find their groups in the reuse buffer.
                        try (KvView v = d.prefetch(0, w.query(0, 50 + step % 3)).await()) {
                            assertEquals(400, assertBitExact(v).cardinality());
                            rows += v.tokenCount();
                        }
                    }
                    DecodeStats st = d.stats();
                    assertEquals(30L * 100, st.clustersSelected());
                    assertEquals(st.clustersSelected(), st.reuseHits() + st.reuseMisses(), "hits + misses = requested");
                    assertEquals(st.reuseMisses() * 4, st.tokensFetched(), "only misses are read");
                    assertEquals(rows, st.tokensFetched() + st.tokensCached() + st.tokensWindow(), st.toString());
                    bytes[i] = st.bytesRead();
                    fetched[i] = st.tokensFetched();
                    if (i == 0) {
                        assertEquals(0, st.reuseHits());
                    } else {
                        assertTrue(st.reuseHitRate() > 0.5, st.toString());
                        assertTrue(st.reuseBytes() > 0);
                    }
                }
            }
            assertEquals(30L * 400, fetched[0]);
            assertTrue(bytes[1] < bytes[0] / 2 && bytes[2] < bytes[0] / 2, java.util.Arrays.toString(bytes));
            // The same query twice in a row: the second step is all hits and reads nothing.
            try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(opts[1])) {
                d.prefetch(1, w.query(1, 9)).await().close();
                long before = d.stats().bytesRead();
                try (KvView v = d.prefetch(1, w.query(1, 9)).await()) {
                    assertBitExact(v);
                }
                assertEquals(before, d.stats().bytesRead());
                assertEquals(100, d.stats().reuseHits());
            }
        }
    }

    @Test
    void reopenAfterRestartGivesTheSamePredictions() throws Exception {
        KvConfig cfg = config(2);
        List<BitSet> first = new ArrayList<>();
        DecodeOptions o = kvswap().build();
        try (KvEngine e = KvEngine.open(cfg)) {
            storeGrouped(e, "s", 8);
            try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(o)) {
                for (int step = 0; step < 6; step++) {
                    try (KvView v = d.prefetch(step % 2, w.query(step % 2, step)).await()) {
                        first.add(assertBitExact(v));
                    }
                }
            }
        }
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(o)) {
            assertEquals(TOKENS / 8, KvSwap.groupCount(s, 0));
            for (int step = 0; step < 6; step++) {
                try (KvView v = d.prefetch(step % 2, w.query(step % 2, step)).await()) {
                    assertEquals(first.get(step), assertBitExact(v), "step " + step);
                }
            }
            // The stored layer still reads back through the ordinary API, from its groups.
            try (Arena a = Arena.ofConfined()) {
                MemorySegment k = a.allocate((long) TOKENS * SHAPE.halfEntryBytes());
                MemorySegment v = a.allocate((long) TOKENS * SHAPE.halfEntryBytes());
                s.read(1, 0, TOKENS, k, v);
                assertArrayEquals(expected[1][0], k.toArray(ValueLayout.JAVA_BYTE));
                assertArrayEquals(expected[1][1], v.toArray(ValueLayout.JAVA_BYTE));
            }
        }
    }

    @Test
    void corruptedGroupFailsTheFetchAndNeverReachesTheView() throws Exception {
        KvConfig cfg = config(1);
        try (KvEngine e = KvEngine.open(cfg)) {
            storeGrouped(e, "s", 4);
            try (KvSequence s = e.openSequence("s"); KvDecoder plain = s.decoder(kvswap().strategy(KvSwap.defaults().withReuseSlots(0)).build());
                    KvDecoder reusing = s.decoder(kvswap().build())) {
                float[] q1 = w.query(0, 0);
                float[] q2 = w.query(0, 77);
                BitSet s1;
                try (KvView v = reusing.prefetch(0, q1).await()) {
                    s1 = assertBitExact(v); // q1's groups now sit in the reuse buffer
                }
                plain.prefetch(0, q1).await().close();
                BitSet s2;
                try (KvView v = plain.prefetch(0, q2).await()) {
                    s2 = assertBitExact(v);
                }
                s2.andNot(s1);
                int bad = s2.nextSetBit(4) / 4; // a group q2 needs that is not in the reuse buffer
                GroupLayout gl = Layouts.groupLayout(s, 0);
                PoolDamage.damage(cfg, gl.groupDevice(bad), gl.groupOffset(bad));
                for (KvDecoder d : List.of(plain, reusing, reusing)) { // twice: the reuse buffer must not serve it later
                    KvView v = d.prefetch(0, q2);
                    KvChecksumException ex = assertThrows(KvChecksumException.class, v::await);
                    assertTrue(ex.getMessage().contains("layer 0"), ex.getMessage());
                    assertEquals(bad * 4, ex.fromToken());
                    assertTrue(!v.isReady());
                    assertThrows(IllegalStateException.class, v::tokenCount);
                }
                try (KvView ok = reusing.prefetch(0, q1).await()) {
                    assertEquals(s1, assertBitExact(ok), "the decoder stays usable");
                }
                try (KvView ok = reusing.prefetch(1, w.query(1, 0)).await()) {
                    assertBitExact(ok);
                }
            }
            try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(kvswap().build())) {
                // A restart rebuilds the compressed K cache from the stored keys: the bad group is caught there.
                assertThrows(KvChecksumException.class, () -> d.prefetch(0, w.query(0, 0)));
                try (KvView ok = d.prefetch(1, w.query(1, 0)).await()) {
                    assertBitExact(ok);
                }
            }
        }
    }

    @Test
    void appendedTokensJoinTheRollingBufferAndThenThePredictor() throws Exception {
        try (KvEngine e = KvEngine.open(config(2))) {
            storeGrouped(e, "s", 4);
            try (KvSequence s = e.openSequenceForAppend("s"); KvDecoder d = s.decoder(kvswap().build());
                    Arena a = Arena.ofConfined()) {
                d.prefetch(0, w.query(0, 1)).await().close();
                MemorySegment k = a.allocate(SHAPE.halfEntryBytes());
                MemorySegment v = a.allocate(SHAPE.halfEntryBytes());
                for (int i = 0; i < 5; i++) {
                    k.fill((byte) (7 + i));
                    v.fill((byte) 9);
                    s.appendTokens(5);
                    d.appendKv(0, k, v);
                    d.appendKv(1, k, v);
                }
                try (KvView view = d.prefetch(0, w.query(0, 2)).await()) {
                    BitSet pos = new BitSet();
                    int rb = SHAPE.headDim() * SHAPE.dtype().bytes();
                    for (int r = 0; r < view.tokenCount(); r++) {
                        int p = view.position(r);
                        pos.set(p);
                        if (p >= TOKENS) {
                            assertEquals(7 + p - TOKENS, view.keys(1).get(ValueLayout.JAVA_BYTE, (long) r * rb));
                            assertEquals(9, view.values(0).get(ValueLayout.JAVA_BYTE, (long) r * rb + rb - 1));
                        }
                    }
                    assertEquals(5, pos.get(TOKENS, TOKENS + 5).cardinality(), "the new tokens are attended");
                }
                s.commit();
            }
        }
    }

    @Test
    void badInputNamesArgumentValueAndRange() throws Exception {
        try (KvEngine e = KvEngine.open(config(1)); KvSequence s = e.createSequence("b", SHAPE)) {
            SwarmOfflinePhaseTest.store(s, w);
            KvDecoderTest.assertMessage(IllegalArgumentException.class,
                    () -> KvSwap.groupLayer(s, 0, GroupOptions.defaults().withGroupSize(4096).withRank(10_000)), "rank = 10000",
                    "allowed: 0 (kvHeads × headDim / 8) or 1..128");
            KvDecoderTest.assertMessage(IllegalArgumentException.class, () -> GroupOptions.defaults().withGroupSize(0),
                    "groupSize = 0", "1..4096");
            KvDecoderTest.assertMessage(IllegalArgumentException.class, () -> KvSwap.groupLayer(s, 2, GroupOptions.defaults()),
                    "layer = 2");
            KvDecoderTest.assertMessage(NullPointerException.class, () -> KvSwap.groupLayer(s, 0, null), "options");
            KvDecoderTest.assertMessage(IllegalArgumentException.class,
                    () -> DecodeOptions.builder().strategy(Swarm.defaults()).budgetTokens(0).build(), "budgetTokens = 0", "1..16777216");
            KvDecoderTest.assertMessage(IllegalArgumentException.class,
                    () -> KvSwap.defaults().withReuseSlots(-7), "reuseSlots = -7", "0..1048576");
            KvDecoderTest.assertMessage(NullPointerException.class,
                    () -> DecodeOptions.builder().strategy(Swarm.defaults()).strategy((io.kvoffload.strategy.SelectionStrategy) null).build(), "strategy");
        }
        try (KvEngine e = KvEngine.open(config(1)); KvSequence s = e.createSequence("tiny", SHAPE)) {
            s.appendTokens(1, 2);
            for (int l = 0; l < SHAPE.layers(); l++) {
                s.appendKv(l, MemorySegment.ofArray(new byte[2 * SHAPE.halfEntryBytes()]),
                        MemorySegment.ofArray(new byte[2 * SHAPE.halfEntryBytes()]));
            }
            KvDecoderTest.assertMessage(IllegalArgumentException.class, () -> KvSwap.groupLayer(s, 0, GroupOptions.defaults()),
                    "options.groupSize() = 4", "holds 2 tokens", "allowed: 1..2");
        }
    }

    static long allocated() {
        return io.kvoffload.testing.Allocations.allocated();
    }

    @Test
    void steadyStateStepsAllocateNothingOnTheCallingThread() throws Exception {
        try (KvEngine e = KvEngine.open(config(4))) {
            storeGrouped(e, "s", 4);
            try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(kvswap().build())) {
                float[][][] q = new float[8][2][];
                for (int i = 0; i < q.length; i++) {
                    q[i][0] = w.query(0, 30 + i);
                    q[i][1] = w.query(1, 30 + i);
                }
                assertTwoLayerStepsAllocateNothing(d, q);
            }
        }
    }

    /**
     * After a warm-up, 200 steps of {@code d} over layers 0 and 1 (queries {@code q[i % q.length]})
     * allocate nothing on the calling thread beyond the portable backend's task per read: the least
     * over 10 windows of 200 steps, so a JIT recompilation inside one window (which can rematerialise
     * a few eliminated objects once) does not count, while an object per step or per read would show
     * in every window ({@link Allocations#leastOverWindows}).
     */
    static void assertTwoLayerStepsAllocateNothing(KvDecoder d, float[][][] q) {
        // Warm-up: buffers reach their size and the JIT compiles the path, C2 included (4,000 prefetches).
        for (int i = 0; i < 2000; i++) {
            step(d, q[i % q.length]);
        }
        long overhead = Allocations.overhead();
        long leastExcess = Long.MAX_VALUE;
        String least = null;
        for (int w = 0; w < 10; w++) {
            long requests = d.stats().readRequests();
            long before = allocated();
            for (int i = 0; i < 200; i++) {
                step(d, q[i % q.length]);
            }
            long bytes = allocated() - before - overhead;
            requests = d.stats().readRequests() - requests;
            assertTrue(requests > 0);
            // The portable backend hands each read to a device worker as a task (a lambda and a queue node,
            // 48 bytes; io_uring allocates nothing); everything else is the decoder's, which must allocate
            // nothing. The reflective counter read costs a few hundred bytes.
            long excess = bytes - 48 * requests;
            if (excess < leastExcess) {
                leastExcess = excess;
                least = bytes + " bytes allocated by 200 steps with " + requests + " reads";
            }
        }
        assertTrue(leastExcess <= 2048, least + " (the least over 10 windows)");
    }

    private static void step(KvDecoder d, float[][] q) {
        KvView a = d.prefetch(0, q[0]);
        KvView b = d.prefetch(1, q[1]);
        a.await().close();
        b.await().close();
    }

    @Test
    void swarmSelectorIgnoresGroupsAndAttendsTheLayerInFull() throws Exception {
        try (KvEngine e = KvEngine.open(config(2))) {
            storeGrouped(e, "s", 4);
            try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(DecodeOptions.builder().strategy(Swarm.defaults()).build());
                    KvView v = d.prefetch(0, w.query(0, 0)).await()) {
                assertEquals(TOKENS, assertBitExact(v).cardinality());
            }
        }
    }
}
