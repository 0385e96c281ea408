package io.kvoffload.strategy;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.DecodeOptions;
import io.kvoffload.DecodeStats;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.testing.AdjustedLayerContext;
import io.kvoffload.testing.TestLayerContext;
import io.kvoffload.testing.KvViews;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.BitSet;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every plug-in strategy — the built-in baselines and a third party's — runs through the decoder's
 * one fetch pipeline: the view holds exactly sinks ∪ window ∪ the positions the strategy chose from
 * the same keys, bit-exact, fetched through the scheduler from the positional layout.
 */
class StrategyPipelineTest {
    static final KvShape SHAPE = new KvShape(2, 8, 2, 64, DType.F32);
    static final int TOKENS = 2048;
    static final int SINKS = 4;
    static final int WINDOW = 64;
    /** One instance per JVM: the registry refuses a second strategy under a taken name. */
    static final SelectionStrategy MINE = new RecentAndTopBlocks(32);

    @TempDir
    Path root;
    SyntheticWorkload w;

    @BeforeEach
    void workload() {
        w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(23).build());
    }

    byte[][] expectedBytes(int layer) {
        return TestEngines.kvBytes(w, layer, TOKENS);
    }

    /** The layer's keys as the pipeline's context decodes them, held in arrays. */
    LayerKv dense(int layer) {
        byte[][] b = expectedBytes(layer);
        int d = SHAPE.headDim();
        float[][] kf = new float[SHAPE.kvHeads()][TOKENS * d];
        float[][] vf = new float[SHAPE.kvHeads()][TOKENS * d];
        MemorySegment k = MemorySegment.ofArray(b[0]);
        MemorySegment v = MemorySegment.ofArray(b[1]);
        for (int t = 0; t < TOKENS; t++) {
            for (int h = 0; h < SHAPE.kvHeads(); h++) {
                for (int i = 0; i < d; i++) {
                    long at = (((long) t * SHAPE.kvHeads() + h) * d + i) * 4;
                    kf[h][t * d + i] = k.get(ValueLayout.JAVA_FLOAT_UNALIGNED, at);
                    vf[h][t * d + i] = v.get(ValueLayout.JAVA_FLOAT_UNALIGNED, at);
                }
            }
        }
        return new DenseLayerKv(TOKENS, d, kf, vf);
    }

    /**
     * The strategy's own selector of each layer, opened over the same keys: it sees the same queries in
     * the same order as the decoder's (a selector may carry what it computed from one step to the next).
     */
    LayerSelector[] expectedSelectors(SelectionStrategy strategy) {
        LayerSelector[] sel = new LayerSelector[SHAPE.layers()];
        for (int l = 0; l < sel.length; l++) {
            sel[l] = strategy.openLayer(new TestLayerContext(SHAPE, l, dense(l), SINKS, WINDOW));
        }
        return sel;
    }

    @ParameterizedTest
    @ValueSource(strings = {"oracle", "quest", "infllm", "pqcache", "clusterkv", "sparq", "sparf-memory", "mass-mix", "mass-auto-8", "mass-bound",
        "mass-mean", "logit-mean", "mass-reps", "mass-reps-bound", "qmass-mix", "qmass-bound"})
    void everyBaselineRunsThroughThePipeline(String name) throws Exception {
        SelectionStrategy strategy = Strategies.named(name);
        assertDecodesAsSelected(strategy, name, BASELINES.contains(name));
    }

    /**
     * Baselines attend exactly the step's budget, sinks and window inside it (issue #16: equal rows).
     * Each keeps its own sinks and window inside its budget; handed the pipeline's whole budget, those
     * overlapped the resident rows and it attended up to 38% fewer rows than the budget.
     */
    static final java.util.Set<String> BASELINES = java.util.Set.of("oracle", "quest", "infllm", "pqcache", "clusterkv",
            "sparq", "sparf-memory");

    @Test
    void aThirdPartyStrategyRegistersAndRunsThroughThePipeline() throws Exception {
        SelectionStrategy mine = MINE;
        Strategies.register(mine);
        assertTrue(Strategies.names().contains("recent-top-blocks"));
        assertEquals(mine, Strategies.named("recent-top-blocks"));
        assertDecodesAsSelected(mine, "mine", false);
    }

    private void assertDecodesAsSelected(SelectionStrategy strategy, String id, boolean exactBudget) throws Exception {
        double sparsity = 0.1;
        try (KvEngine e = KvEngine.open(TestEngines.config(TestEngines.deviceDirs(root, 3), "portable").build())) {
            TestEngines.storeLaidOut(e, id, w, TOKENS, strategy);
            DecodeOptions o = DecodeOptions.builder().strategy(strategy).sparsity(sparsity).sinkTokens(SINKS)
                    .localWindow(WINDOW).build();
            LayerSelector[] expected = expectedSelectors(strategy);
            try (KvSequence s = e.openSequence(id); KvDecoder d = s.decoder(o)) {
                for (int step = 0; step < 3; step++) {
                    for (int l = 0; l < SHAPE.layers(); l++) {
                        float[] q = w.query(l, step);
                        try (KvView v = d.prefetch(l, q).await()) {
                            if (exactBudget) {
                                assertEquals((int) Math.ceil(sparsity * TOKENS), v.tokenCount(), id + " layer " + l);
                            }
                            BitSet got = KvViews.assertBitExact(v, expectedBytes(l));
                            assertEquals(selectedRows(expected[l], l, q, sparsity), got, strategy.name() + " layer " + l
                                    + " step " + step);
                        }
                    }
                }
                DecodeStats st = d.stats();
                assertTrue(st.bytesRead() > 0 && st.tokensFetched() > 0, "fetched from the SSDs: " + st);
            }
        }
    }

    /**
     * {@code swarm-mass} / {@code swarm-qmass} over a layer Swarm's offline phase clustered: the
     * pipeline hands the strategy the layout's clusters, the strategy ranks them, the view holds exactly
     * what it chose over the same clusters, bit-exact, read from the cluster layout (replicas included).
     */
    @ParameterizedTest
    @ValueSource(strings = {"swarm-mass", "swarm-qmass"})
    void swarmsClustersRankedByMassRunThroughThePipeline(String name) throws Exception {
        SelectionStrategy strategy = Strategies.named(name);
        double sparsity = 0.1;
        try (KvEngine e = KvEngine.open(TestEngines.config(TestEngines.deviceDirs(root, 3), "portable").build())) {
            int[][][] clusters = new int[SHAPE.layers()][][];
            int[] coActivation = {0};
            TestEngines.store(e, name, w, TOKENS, (s, l) -> {
                java.util.List<float[]> profile = new java.util.ArrayList<>();
                for (int i = 0; i < 48; i++) {
                    profile.add(w.query(l, 100 + 2 * i));
                }
                coActivation[0] += io.kvoffload.strategy.swarm.Swarm.clusterLayerFromQueries(s, l, profile,
                        io.kvoffload.strategy.swarm.ClusterOptions.defaults()).coActivationClusters();
                clusters[l] = new int[io.kvoffload.strategy.swarm.Swarm.clusterCount(s, l)][];
                for (int c = 0; c < clusters[l].length; c++) {
                    clusters[l][c] = io.kvoffload.strategy.swarm.Swarm.clusterMembers(s, l, c);
                }
            });
            assertTrue(coActivation[0] > 0, "the workload co-activates some tokens");
            DecodeOptions o = DecodeOptions.builder().strategy(strategy).sparsity(sparsity).sinkTokens(SINKS)
                    .localWindow(WINDOW).build();
            LayerSelector[] expected = new LayerSelector[SHAPE.layers()]; // over the same clusters, the same queries
            for (int l = 0; l < SHAPE.layers(); l++) {
                int[][] layerClusters = clusters[l];
                LayoutUnits units = new LayoutUnits() {
                    public int count() { return layerClusters.length; }
                    public int size(int u) { return layerClusters[u].length; }
                    public int member(int u, int i) { return layerClusters[u][i]; }
                    public int coActivationUnits() { return 1; }
                };
                expected[l] = strategy.openLayer(new AdjustedLayerContext(new TestLayerContext(SHAPE, l, dense(l), SINKS,
                        WINDOW), units, 1));
            }
            try (KvSequence s = e.openSequence(name); KvDecoder d = s.decoder(o)) {
                for (int step = 0; step < 3; step++) {
                    for (int l = 0; l < SHAPE.layers(); l++) {
                        float[] q = w.query(l, step);
                        try (KvView view = d.prefetch(l, q).await()) {
                            BitSet got = KvViews.assertBitExact(view, expectedBytes(l));
                            assertEquals(selectedRows(expected[l], l, q, sparsity), got, name + " layer " + l + " step " + step);
                        }
                    }
                }
            }
        }
    }

    /**
     * Under head sharding the default keeps a hot cache per head group, over 16-token pages (Quest's) and
     * over its own 8-token ones: the same query again reads
     * fewer bytes (the group shards it cached come from DRAM), every view stays bit-exact for every head
     * a row holds, and each KV head attends the same rows as the first time.
     */
    @ParameterizedTest
    @ValueSource(strings = {"quest", "mass-auto"})
    void theDefaultCachesHeadGroupShardsUnderHeadSharding(String layout) throws Exception {
        KvShape shape = new KvShape(1, 8, 4, 128, DType.BF16); // 512-byte head-group slices: the default's 8-token pages
        int tokens = 1024;
        try (KvEngine e = KvEngine.open(io.kvoffload.testing.PerHeadViews.config(root, 4).build())) {
            io.kvoffload.testing.PerHeadViews.Layer[] stored = io.kvoffload.testing.PerHeadViews.store(e, "c", shape,
                    tokens, 43, layout);
            DecodeOptions o = DecodeOptions.builder().sparsity(0.1).sinkTokens(SINKS).localWindow(WINDOW).build();
            try (KvSequence s = e.openSequence("c"); KvDecoder d = s.decoder(o)) {
                float[] q = io.kvoffload.testing.PerHeadViews.rounded(new java.util.Random(3), DType.F32,
                        shape.queryHeads() * shape.headDim(), 1f);
                String first = null;
                long[] bytes = new long[4];
                for (int step = 0; step < bytes.length; step++) {
                    long before = d.stats().bytesRead();
                    try (KvView v = d.prefetch(0, q).await()) {
                        io.kvoffload.testing.PerHeadViews.assertHeldHeadsBitExact(v, stored[0]);
                        int[][] got = io.kvoffload.testing.PerHeadViews.attendedPerHead(v);
                        for (int[] h : got) {
                            java.util.Arrays.sort(h);
                        }
                        String rows = java.util.Arrays.deepToString(got);
                        if (first == null) {
                            first = rows;
                        }
                        assertEquals(first, rows, "step " + step);
                    }
                    bytes[step] = d.stats().bytesRead() - before;
                }
                io.kvoffload.DecodeStats st = d.stats();
                assertTrue(st.cacheHits() > 0 && st.tokensCached() > 0, st.toString());
                assertTrue(bytes[3] < bytes[0], java.util.Arrays.toString(bytes));
                // Shrinking the budget to nothing gives every group's units back; the step reads it all again.
                d.setCacheBytes(0);
                assertEquals(0, d.cacheBytes());
                long before = d.stats().bytesRead();
                try (KvView v = d.prefetch(0, q).await()) {
                    io.kvoffload.testing.PerHeadViews.assertHeldHeadsBitExact(v, stored[0]);
                }
                assertEquals(bytes[0], d.stats().bytesRead() - before, "no group cache left");
            }
        }
    }

    /**
     * The default strategy where the layout stores KV-head groups apart (4 heads on 4 devices, one group
     * each): it picks per-group sets as {@code head-cmass-mix} does with the plan's 4 groups, the pipeline
     * reads only those groups (rows hold exactly the groups chosen for them, bit-exact), the reference
     * kernel over such a view matches per-head attention over the same sets, and a full budget attends
     * every token with every head.
     */
    @Test
    void theDefaultReadsPerHeadGroupsUnderHeadSharding() throws Exception {
        // Quest's 16-token pages of 128-byte slices are half a read: the default ranks them in 8-token
        // parts (a quarter read each), and completes the pages it chose in part for the hot cache.
        assertReadsPerHeadGroups(null, "quest", Strategies.named("mass-auto-8"));
    }

    /**
     * A layer opened by a query's prefetch offers the strategy a copy of that query
     * ({@link LayerContext#openingQuery()}), and one opened by a prefetch of given positions none.
     */
    @Test
    void aLayerIsOpenedWithTheQueryOfItsFirstStep() throws Exception {
        java.util.Map<Integer, float[]> opened = new java.util.HashMap<>();
        SelectionStrategy recording = new SelectionStrategy() {
            @Override
            public String name() {
                return "recording";
            }

            @Override
            public LayerSelector openLayer(LayerContext context) {
                opened.put(context.layer(), context.openingQuery());
                return (query, plan) -> { };
            }
        };
        try (KvEngine e = KvEngine.open(TestEngines.config(TestEngines.deviceDirs(root, 3), "portable").build())) {
            TestEngines.storeLaidOut(e, "opening", w, TOKENS, recording);
            DecodeOptions o = DecodeOptions.builder().strategy(recording).sinkTokens(SINKS).localWindow(WINDOW).build();
            try (KvSequence s = e.openSequence("opening"); KvDecoder d = s.decoder(o)) {
                float[] q = w.query(0, 0);
                d.prefetch(0, q).await().close();
                d.prefetch(0, w.query(0, 1)).await().close(); // an open layer is not opened again
                assertArrayEquals(q, opened.get(0));
                assertNotSame(q, opened.get(0), "a copy");
                d.prefetch(1, new int[] {5, 9}, 2).await().close();
                assertTrue(opened.containsKey(1));
                assertNull(opened.get(1));
            }
        }
    }

    /**
     * A short layer the default lays out itself, head sharded in 512-byte slices, is stored in 8-token
     * pages (one aligned read per slice) and ranked in 2-token parts (a quarter read): it reads exactly
     * what the 2-token strategy chooses, bit-exact.
     */
    @Test
    void theDefaultRanksPartsOfItsOwnPagesOfAShortLayer() throws Exception {
        assertReadsPerHeadGroups(new KvShape(2, 8, 4, 128, DType.BF16), null, "mass-auto",
                io.kvoffload.internal.swarm.BlockMassStrategy.auto("two-token", 2), 8);
    }

    /**
     * {@code mass-auto-8} lays its layers out in 8-token pages and, under head sharding, reads per-group
     * sets of 8-token blocks exactly as it chooses them with the layout's groups, bit-exact.
     */
    @Test
    void theFineDefaultReadsPerHeadGroupsOfEightTokenPages() throws Exception {
        assertEquals(8, Strategies.named("mass-auto-8").pageTokens());
        assertReadsPerHeadGroups("mass-auto-8", "mass-auto-8", Strategies.named("mass-auto-8"));
    }

    /**
     * Decodes with {@code strategy} (null: the default) over layers laid out by {@code layout}, and checks
     * every view against what {@code reference} chooses per head group.
     */
    private void assertReadsPerHeadGroups(String strategy, String layout, SelectionStrategy reference) throws Exception {
        assertReadsPerHeadGroups(new KvShape(2, 8, 4, 32, DType.BF16), strategy, layout, reference, 0);
    }

    /** The same over {@code shape}, checking that the layout holds pages of {@code pageTokens} (0: any). */
    private void assertReadsPerHeadGroups(KvShape shape, String strategy, String layout, SelectionStrategy reference,
            int pageTokens)
            throws Exception {
        int tokens = 1024;
        double sparsity = 0.1;
        try (KvEngine e = KvEngine.open(io.kvoffload.testing.PerHeadViews.config(root, 4).build())) {
            io.kvoffload.testing.PerHeadViews.Layer[] stored = io.kvoffload.testing.PerHeadViews.store(e, "h", shape,
                    tokens, 41, layout);
            if (pageTokens > 0) {
                try (KvSequence s = e.openSequence("h")) {
                    var pages = io.kvoffload.internal.sequence.SequenceAccess.of(s).ledger().layer(0).clusters();
                    assertEquals(tokens / pageTokens, pages.clusterCount(), "pages of " + pageTokens + " tokens");
                }
            }
            // The reference ranks over the layout's own pages, as the pipeline's selector does (parts of a
            // page of one read are exchanged by the reads they open).
            LayoutUnits[] layoutPages = new LayoutUnits[shape.layers()];
            try (KvSequence s = e.openSequence("h")) {
                for (int l = 0; l < shape.layers(); l++) {
                    var c = io.kvoffload.internal.sequence.SequenceAccess.of(s).ledger().layer(l).clusters();
                    int[] offsets = c.memberOffsets(), members = c.allMembers();
                    layoutPages[l] = new LayoutUnits() {
                        public int count() { return offsets.length - 1; }
                        public int size(int u) { return offsets[u + 1] - offsets[u]; }
                        public int member(int u, int i) { return members[offsets[u] + i]; }
                        public int coActivationUnits() { return 0; }
                    };
                }
            }
            DecodeOptions.Builder b = DecodeOptions.builder().sparsity(sparsity).sinkTokens(SINKS).localWindow(WINDOW);
            DecodeOptions o = (strategy == null ? b : b.strategy(strategy)).build();
            boolean partial = false;
            try (KvSequence s = e.openSequence("h"); KvDecoder d = s.decoder(o)) {
                io.kvoffload.SparseAttention attention = new io.kvoffload.SparseAttention(shape);
                for (int step = 0; step < 3; step++) {
                    for (int l = 0; l < shape.layers(); l++) {
                        float[] q = io.kvoffload.testing.PerHeadViews.rounded(new java.util.Random(step * 7 + l),
                                DType.F32, shape.queryHeads() * shape.headDim(), 1f);
                        LayerSelector sel = reference.openLayer(new AdjustedLayerContext(new TestLayerContext(shape,
                                l, stored[l].dense(), SINKS, WINDOW), layoutPages[l], shape.kvHeads()));
                        int[][] want = perGroupRows(sel, l, tokens, q, sparsity, shape.kvHeads());
                        try (KvView v = d.prefetch(l, q).await()) {
                            io.kvoffload.testing.PerHeadViews.assertHeldHeadsBitExact(v, stored[l]);
                            int[][] got = io.kvoffload.testing.PerHeadViews.attendedPerHead(v);
                            for (int h = 0; h < shape.kvHeads(); h++) {
                                java.util.Arrays.sort(got[h]);
                                assertEquals(java.util.Arrays.toString(want[h]), java.util.Arrays.toString(got[h]),
                                        "KV head " + h + " layer " + l + " step " + step);
                            }
                            partial |= v.partialRows();
                            float[] out = new float[shape.queryHeads() * shape.headDim()];
                            attention.attend(v, q, out);
                            double[] ref = io.kvoffload.testing.PerHeadViews.reference(stored[l], got, q, null, null, 0);
                            for (int i = 0; i < out.length; i++) {
                                assertEquals(ref[i], out[i], 1e-4 * (1 + Math.abs(ref[i])), "output " + i);
                            }
                        }
                    }
                }
            }
            assertTrue(partial, "heads chose different blocks at least once");
            DecodeOptions.Builder fb = DecodeOptions.builder().sparsity(1.0).sinkTokens(SINKS).localWindow(WINDOW);
            DecodeOptions full = (strategy == null ? fb : fb.strategy(strategy)).build();
            try (KvSequence s = e.openSequence("h"); KvDecoder d = s.decoder(full);
                    KvView v = d.prefetch(0, new float[shape.queryHeads() * shape.headDim()]).await()) {
                assertEquals(tokens, v.tokenCount());
                assertTrue(!v.partialRows(), "a full budget reads every head of every token");
            }
        }
    }

    /** Per KV head (one head a group), the sorted rows: sinks, window and what {@code sel} adds for it. */
    static int[][] perGroupRows(LayerSelector sel, int layer, int tokens, float[] query, double sparsity, int kvHeads) {
        FetchPlan plan = new FetchPlan();
        plan.heads(kvHeads, kvHeads);
        plan.begin(layer, tokens, (int) Math.ceil(sparsity * tokens) - SINKS - WINDOW);
        sel.select(query, plan);
        int[][] out = new int[kvHeads][];
        for (int h = 0; h < kvHeads; h++) {
            BitSet rows = new BitSet();
            rows.set(0, SINKS);
            rows.set(tokens - WINDOW, tokens);
            for (int i = 0; i < plan.size(); i++) {
                if ((plan.kvHeadMask(i) >>> h & 1) != 0) {
                    rows.set(plan.position(i));
                }
            }
            out[h] = rows.stream().toArray();
        }
        return out;
    }

    /** Sinks, window and what {@code sel} adds at {@code sparsity}: the rows a view must hold. */
    static BitSet selectedRows(LayerSelector sel, int layer, float[] query, double sparsity) {
        BitSet rows = new BitSet();
        rows.set(0, SINKS);
        rows.set(TOKENS - WINDOW, TOKENS);
        FetchPlan plan = new FetchPlan();
        plan.begin(layer, TOKENS, (int) Math.ceil(sparsity * TOKENS) - SINKS - WINDOW);
        sel.select(query, plan);
        for (int i = 0; i < plan.size(); i++) {
            rows.set(plan.position(i));
        }
        return rows;
    }

    @Test
    void badInputIsNamed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Strategies.named("nope"));
        assertTrue(e.getMessage().contains("nope") && e.getMessage().contains("quest"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> DecodeOptions.builder().strategy("nope"));
        assertTrue(e.getMessage().contains("nope"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Strategies.register(new SelectionStrategy() {
            public String name() {
                return "quest";
            }

            public LayerSelector openLayer(LayerContext c) {
                return null;
            }
        }));
        assertTrue(e.getMessage().contains("quest") && e.getMessage().contains("taken"), e.getMessage());
        FetchPlan plan = new FetchPlan();
        plan.begin(3, 100, 10);
        e = assertThrows(IllegalArgumentException.class, () -> plan.add(100));
        assertTrue(e.getMessage().contains("position = 100") && e.getMessage().contains("0..99"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> plan.add(-1));
        assertTrue(e.getMessage().contains("layer 3"), e.getMessage());
    }
}
