package io.kvoffload.internal.swarm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.attention.ExactAttention;
import io.kvoffload.attention.QualityMetrics;
import io.kvoffload.internal.swarm.BlockMassIndex.Combination;
import io.kvoffload.internal.swarm.BlockMassIndex.Scoring;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.strategy.FetchPlan;
import io.kvoffload.strategy.LayerContext;
import io.kvoffload.testing.TestLayerContext;
import io.kvoffload.strategy.LayerKv;
import io.kvoffload.strategy.LayerSelector;
import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.strategy.Strategies;
import java.util.Arrays;
import java.util.BitSet;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/**
 * {@link BlockMassStrategy} and {@link BlockMassIndex} on their own (the pipeline's bit-exact fetch
 * is {@code StrategyPipelineTest}'s): the bound bounds, full budgets attend everything, selection is
 * deterministic and nested in the budget, edge cases and bad input.
 */
class BlockMassStrategyTest {
    static final int SINKS = 4, WINDOW = 32;

    static DenseLayerKv keys(int tokens, int kvHeads, int d, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        float[][] k = new float[kvHeads][tokens * d];
        float[][] v = new float[kvHeads][tokens * d];
        for (int h = 0; h < kvHeads; h++) {
            for (int i = 0; i < k[h].length; i++) {
                // A few large channels, as real keys have (KIVI, KVQuant): they must not flatten the others.
                k[h][i] = (float) (r.nextGaussian() * (i % d == 3 ? 20 : 1));
                v[h][i] = (float) r.nextGaussian();
            }
        }
        return new DenseLayerKv(tokens, d, k, v);
    }

    static float[] query(int heads, int d, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        float[] q = new float[heads * d];
        for (int i = 0; i < q.length; i++) {
            q[i] = (float) r.nextGaussian() * 2;
        }
        return q;
    }

    static LayerContext context(KvShape shape, LayerKv kv, int laidOut) {
        return new TestLayerContext(shape, 0, kv.tokens(), laidOut, SINKS, WINDOW, kv, null);
    }

    /** One pipeline step: sinks, window, then the selector with what is left of {@code total}. */
    static int[] step(LayerSelector sel, int tokens, float[] q, int total) {
        FetchPlan plan = new FetchPlan();
        int windowFrom = Math.max(Math.min(SINKS, tokens), tokens - WINDOW);
        plan.begin(0, tokens, Math.max(0, total - Math.min(SINKS, tokens) - (tokens - windowFrom)));
        for (int t = 0; t < Math.min(SINKS, tokens); t++) {
            plan.add(t);
        }
        for (int t = windowFrom; t < tokens; t++) {
            plan.add(t);
        }
        sel.select(q, plan);
        BitSet set = new BitSet();
        for (int i = 0; i < plan.size(); i++) {
            set.set(plan.position(i));
        }
        return set.stream().toArray();
    }

    @Property(tries = 60)
    void theBoundBoundsEveryMembersLogit(@ForAll @IntRange(min = 1, max = 300) int tokens,
            @ForAll @IntRange(min = 1, max = 3) int kvHeads, @ForAll @IntRange(min = 1, max = 3) int group,
            @ForAll @IntRange(min = 1, max = 40) int blockTokens, @ForAll long seed) {
        int d = 16, qh = kvHeads * group;
        DenseLayerKv kv = keys(tokens, kvHeads, d, seed);
        BlockMassIndex index = new BlockMassIndex(kv, tokens, qh, blockTokens, Scoring.BOUND, Combination.SUM_LOGITS);
        float[] q = query(qh, d, seed + 1);
        float[] scores = new float[index.blocks()];
        index.score(q, scores);
        float scale = (float) (1 / Math.sqrt(d));
        for (int t = 0; t < tokens; t++) {
            double logit = 0; // Σ over KV heads of (mean of its query heads)·k / √d
            for (int h = 0; h < kvHeads; h++) {
                for (int j = 0; j < d; j++) {
                    double qm = 0;
                    for (int g = 0; g < group; g++) {
                        qm += q[(h * group + g) * d + j];
                    }
                    logit += qm / group * kv.keyArray(h)[t * d + j] * scale;
                }
            }
            float bound = scores[t / blockTokens];
            assertTrue(bound >= logit - 1e-3 * (1 + Math.abs(logit)), "token " + t + ": bound " + bound + " < logit " + logit);
        }
    }

    /**
     * Rows that share summary runs (a KV head's query rows paired by the terms they share) get the
     * estimate each gets swept alone: every query head of a per-query-head index against an index of
     * one query head per KV head, up to the summation order's rounding.
     */
    @Property(tries = 40)
    void pairedRowsEstimateWhatEachRowEstimatesAlone(@ForAll @IntRange(min = 2, max = 300) int tokens,
            @ForAll @IntRange(min = 1, max = 3) int kvHeads, @ForAll @IntRange(min = 2, max = 7) int group,
            @ForAll @IntRange(min = 0, max = 40) int tenthsOfNats, @ForAll long seed) {
        int d = 16, qh = kvHeads * group, bt = 4;
        DenseLayerKv kv = keys(tokens, kvHeads, d, seed);
        float[] q = query(qh, d, seed + 1);
        BlockMassIndex paired = new BlockMassIndex(kv, tokens, qh, bt, Scoring.MIX, Combination.QUERY_HEAD_MASS,
                tenthsOfNats / 10f);
        int blocks = paired.blocks();
        paired.score(q, new float[blocks]);
        float[] p = new float[qh * blocks], a = new float[kvHeads * blocks], one = new float[kvHeads * d];
        paired.headShares(p);
        for (int g = 0; g < group; g++) {
            // A new index for each query: one that scored another query first would carry from it (CarriedLogits).
            BlockMassIndex alone = new BlockMassIndex(kv, tokens, kvHeads, bt, Scoring.MIX, Combination.QUERY_HEAD_MASS,
                    tenthsOfNats / 10f);
            for (int h = 0; h < kvHeads; h++) { // KV head h's g-th query head, alone on its KV head
                System.arraycopy(q, (h * group + g) * d, one, h * d, d);
            }
            alone.score(one, new float[blocks]);
            alone.headShares(a);
            for (int h = 0; h < kvHeads; h++) {
                for (int b = 0; b < blocks; b++) {
                    float want = a[h * blocks + b], got = p[(h * group + g) * blocks + b];
                    assertEquals(want, got, 1e-4f * want + 1e-9f, "KV head " + h + ", query head " + g + ", block " + b);
                }
            }
        }
    }

    @Property(tries = 60)
    void pruningMovesNoBlockAgainstAnotherByMoreThanTheBound(@ForAll @IntRange(min = 2, max = 400) int tokens,
            @ForAll @IntRange(min = 1, max = 3) int kvHeads, @ForAll @IntRange(min = 1, max = 3) int group,
            @ForAll @IntRange(min = 0, max = 3) int scoringIndex, @ForAll @IntRange(min = 0, max = 40) int tenthsOfNats,
            @ForAll long seed) {
        int d = 16, qh = kvHeads * group, bt = 8;
        float bound = tenthsOfNats / 10f;
        Scoring scoring = new Scoring[] {Scoring.BOUND, Scoring.MEAN, Scoring.MIX, Scoring.MIX}[scoringIndex];
        DenseLayerKv kv = keys(tokens, kvHeads, d, seed);
        // Summed logits: the per-block estimates themselves, before any softmax.
        BlockMassIndex full = new BlockMassIndex(kv, tokens, qh, bt, scoring, Combination.SUM_LOGITS);
        BlockMassIndex pruned = new BlockMassIndex(kv, tokens, qh, bt, scoring, Combination.SUM_LOGITS, bound);
        float[] q = query(qh, d, seed + 1);
        float[] f = new float[full.blocks()], p = new float[full.blocks()];
        full.score(q, f);
        pruned.score(q, p);
        double lo = Double.POSITIVE_INFINITY, hi = Double.NEGATIVE_INFINITY; // range of p − f over blocks
        for (int b = 0; b < f.length; b++) {
            lo = Math.min(lo, p[b] - f[b]);
            hi = Math.max(hi, p[b] - f[b]);
        }
        // The bound holds per KV head; the summed logits add kvHeads of them.
        double allowed = kvHeads * bound;
        assertTrue(hi - lo <= allowed + 1e-3 * (1 + allowed), "blocks moved against each other by " + (hi - lo) + " > "
                + allowed);
        assertTrue(pruned.sweptShare() <= 1 && pruned.sweptShare() >= 0);
        assertEquals(1.0, full.sweptShare(), 0.0, "no bound, every term swept");
        if (bound == 0) {
            assertArrayEquals(f, p);
        }
    }

    @Test
    void pruningSkipsTermsThatCannotMatter() {
        DenseLayerKv kv = keys(512, 2, 16, 5);
        BlockMassIndex pruned = new BlockMassIndex(kv, 512, 4, 16, Scoring.MIX, Combination.HEAD_MASS, 1e6f);
        float[] scores = new float[pruned.blocks()];
        pruned.score(query(4, 16, 6), scores);
        assertEquals(0.0, pruned.sweptShare(), 0.0, "a bound above every reach sweeps nothing");
        double sum = 0;
        for (float x : scores) {
            sum += x;
        }
        assertEquals(2.0, sum, 1e-4, "each head's shares still sum to 1: blocks weighted by their tokens alone");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new BlockMassIndex(kv, 512, 4, 16, Scoring.MIX, Combination.HEAD_MASS, -1f));
        assertTrue(e.getMessage().contains("pruneLogit = -1.0"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> new BlockMassStrategy("x", Scoring.MIX, Combination.HEAD_MASS, 16, Float.NaN));
        assertTrue(e.getMessage().contains("pruneLogit = NaN"), e.getMessage());
    }

    /**
     * Scored in parts, a block's share is the sum of its parts' shares: what an index over blocks of a
     * part's size estimates for them (a short layer's budget affords one-token parts).
     */
    @Property(tries = 40)
    void aBlockScoredInPartsHasTheSumOfItsPartsShares(@ForAll @IntRange(min = 1, max = 300) int tokens,
            @ForAll @IntRange(min = 1, max = 2) int kvHeads, @ForAll @IntRange(min = 1, max = 4) int blockLog,
            @ForAll @IntRange(min = 0, max = 40) int tenthsOfNats, @ForAll long seed) {
        int d = 16, qh = 2 * kvHeads, bt = 1 << blockLog;
        DenseLayerKv kv = keys(tokens, kvHeads, d, seed);
        float[] q = query(qh, d, seed + 1);
        BlockMassIndex parts = new BlockMassIndex(kv, tokens, qh, bt, Scoring.MIX, Combination.QUERY_HEAD_MASS,
                tenthsOfNats / 10f, true);
        assertEquals(1, parts.scoredTokens(), "a short layer scores single tokens");
        BlockMassIndex single = new BlockMassIndex(kv, tokens, qh, 1, Scoring.MIX, Combination.QUERY_HEAD_MASS,
                tenthsOfNats / 10f);
        int blocks = parts.blocks();
        assertEquals((tokens + bt - 1) / bt, blocks);
        float[] scores = new float[blocks], ps = new float[qh * blocks], ss = new float[qh * tokens];
        parts.score(q, scores);
        parts.headShares(ps);
        single.score(q, new float[tokens]);
        single.headShares(ss);
        for (int r = 0; r < qh; r++) {
            double total = 0;
            for (int b = 0; b < blocks; b++) {
                float want = 0;
                for (int t = b * bt; t < Math.min(tokens, b * bt + bt); t++) {
                    want += ss[r * tokens + t];
                }
                float got = ps[r * blocks + b];
                assertEquals(want, got, 1e-4f * want + 1e-6f, "row " + r + ", block " + b);
                total += got;
            }
            assertEquals(1.0, total, 1e-4, "row " + r + " sums to 1");
        }
        float[] summed = new float[blocks];
        for (int r = 0; r < qh; r++) {
            for (int b = 0; b < blocks; b++) {
                summed[b] += ps[r * blocks + b];
            }
        }
        assertArrayEquals(summed, scores, 1e-5f, "the scores sum the rows' shares");
        // A one-token block's MIX rows are its key: one int8 row, MEAN's, with MEAN's estimates.
        BlockMassIndex mean = new BlockMassIndex(kv, tokens, qh, 1, Scoring.MEAN, Combination.QUERY_HEAD_MASS,
                tenthsOfNats / 10f);
        assertEquals(mean.summaryBytes(), single.summaryBytes(), "one int8 row");
        float[] ms = new float[qh * tokens];
        mean.score(q, new float[tokens]);
        mean.headShares(ms);
        assertArrayEquals(ms, ss, 1e-6f, "MEAN's estimates");
    }

    @Test
    void headSharesAreEachHeadsSoftmaxAndAddUpToTheScores() {
        DenseLayerKv kv = keys(300, 2, 16, 11);
        for (Combination c : new Combination[] {Combination.HEAD_MASS, Combination.QUERY_HEAD_MASS,
                Combination.CLUSTERED_HEAD_MASS}) {
            BlockMassIndex index = new BlockMassIndex(kv, 300, 4, 16, Scoring.MIX, c);
            float[] scores = new float[index.blocks()];
            index.score(query(4, 16, 12), scores);
            int rows = c == Combination.HEAD_MASS ? 2 : 4;
            // Two query heads a KV head: clustered, each keeps its row, and a row weighs half its KV head.
            float weight = c == Combination.CLUSTERED_HEAD_MASS ? 0.5f : 1f;
            float[] shares = new float[rows * index.blocks()];
            index.headShares(shares);
            float[] summed = new float[index.blocks()];
            for (int r = 0; r < rows; r++) {
                double row = 0;
                for (int b = 0; b < index.blocks(); b++) {
                    row += shares[r * index.blocks() + b];
                    summed[b] += weight * shares[r * index.blocks() + b];
                }
                assertEquals(1.0, row, 1e-4, c + " row " + r);
            }
            assertArrayEquals(scores, summed, 1e-6f, c.toString());
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> index.headShares(new float[3]));
            assertTrue(e.getMessage().contains("dst.length = 3"), e.getMessage());
        }
        BlockMassIndex logits = new BlockMassIndex(kv, 300, 4, 16, Scoring.MIX, Combination.SUM_LOGITS);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> logits.headShares(new float[1000]));
        assertTrue(e.getMessage().contains("SUM_LOGITS"), e.getMessage());
    }

    @Test
    void clusteredRowsKeepAnOutlyingQueryHeadApartAndWeighEachRowByItsHeads() {
        int d = 128, kvHeads = 8, queryHeads = 32; // Llama-3-8B's groups: 4 query heads, two rows each
        DenseLayerKv kv = keys(300, kvHeads, d, 21);
        float[] q = query(queryHeads, d, 22);
        System.arraycopy(q, 0, q, d, d); // KV head 0: heads 0–2 alike, head 3 apart
        System.arraycopy(q, 0, q, 2 * d, d);
        for (int j = 0; j < d; j++) {
            q[3 * d + j] = 5 * q[3 * d + j];
        }
        BlockMassIndex clustered = new BlockMassIndex(kv, 300, queryHeads, 16, Scoring.MIX, Combination.CLUSTERED_HEAD_MASS);
        BlockMassIndex perHead = new BlockMassIndex(kv, 300, queryHeads, 16, Scoring.MIX, Combination.QUERY_HEAD_MASS);
        assertEquals(2, clustered.rowsPerHead());
        int blocks = clustered.blocks();
        float[] c = new float[2 * kvHeads * blocks], p = new float[queryHeads * blocks], scores = new float[blocks];
        clustered.score(q, scores);
        clustered.headShares(c);
        perHead.score(q, new float[blocks]);
        perHead.headShares(p);
        for (int b = 0; b < blocks; b++) {
            assertEquals(p[b], c[b], 1e-5f, "row 0: heads 0–2, whose mean is head 0's query");
            assertEquals(p[3 * blocks + b], c[blocks + b], 0f, "row 1: head 3 alone, exactly its own shares");
        }
        for (int r = 2; r < 2 * kvHeads; r++) { // the other KV heads' rows: clusters of their four heads
            double mass = 0;
            for (int b = 0; b < blocks; b++) {
                mass += c[r * blocks + b];
            }
            assertEquals(1.0, mass, 1e-4);
        }
        double kvHead0 = 0, total = 0;
        for (int b = 0; b < blocks; b++) {
            kvHead0 += 0.75f * c[b] + 0.25f * c[blocks + b];
            total += scores[b];
        }
        assertEquals(1.0, kvHead0, 1e-4, "KV head 0's rows weigh 3/4 and 1/4");
        assertEquals(kvHeads, total, 1e-3, "each KV head's weighted rows sum to 1");
    }

    /** Where the sweep affords it (a narrow shape), every query head keeps its own row: exactly its own shares. */
    @Test
    void aNarrowShapeGivesEveryQueryHeadItsRow() {
        DenseLayerKv kv = keys(300, 2, 16, 21);
        float[] q = query(8, 16, 22);
        BlockMassIndex clustered = new BlockMassIndex(kv, 300, 8, 16, Scoring.MIX, Combination.CLUSTERED_HEAD_MASS);
        BlockMassIndex perHead = new BlockMassIndex(kv, 300, 8, 16, Scoring.MIX, Combination.QUERY_HEAD_MASS);
        assertEquals(4, clustered.rowsPerHead());
        int blocks = clustered.blocks();
        float[] c = new float[8 * blocks], p = new float[8 * blocks];
        clustered.score(q, new float[blocks]);
        clustered.headShares(c);
        perHead.score(q, new float[blocks]);
        perHead.headShares(p);
        assertArrayEquals(p, c, 1e-6f);
    }

    @Property(tries = 40)
    void aLargerBudgetSelectsASupersetAndRecallNeverFalls(@ForAll @IntRange(min = 40, max = 600) int tokens,
            @ForAll @IntRange(min = 1, max = 1000) int a, @ForAll @IntRange(min = 1, max = 1000) int b, @ForAll long seed,
            @ForAll @IntRange(min = 0, max = 2) int variant) {
        KvShape shape = new KvShape(1, 8, 2, 16, DType.F32);
        DenseLayerKv kv = keys(tokens, 2, 16, seed);
        // The mean query per KV head, each query head's own shares, and the default's clustered query heads.
        LayerSelector sel = Strategies.named(PerHeadBlockMassTest.SHARED_VARIANTS[variant])
                .openLayer(context(shape, kv, tokens));
        float[] q = query(8, 16, seed ^ 7);
        int small = Math.min(a, b) * tokens / 1000, large = Math.max(a, b) * tokens / 1000;
        int[] s = step(sel, tokens, q, small), l = step(sel, tokens, q, large);
        BitSet big = new BitSet();
        Arrays.stream(l).forEach(big::set);
        for (int t : s) {
            assertTrue(big.get(t), "token " + t + " chosen at budget " + small + " but not at " + large);
        }
        float[] w = ExactAttention.of(shape).weights(kv, q);
        assertTrue(QualityMetrics.attentionMassRecall(w, s) <= QualityMetrics.attentionMassRecall(w, l) + 1e-9);
    }

    @Test
    void aFullBudgetAttendsEveryTokenAndEqualsDenseAttention() {
        int tokens = 500;
        KvShape shape = new KvShape(1, 8, 2, 32, DType.F32);
        DenseLayerKv kv = keys(tokens, 2, 32, 3);
        for (SelectionStrategy s : BlockMassStrategy.variants()) {
            LayerSelector sel = s.openLayer(context(shape, kv, tokens));
            float[] q = query(8, 32, 4);
            int[] set = step(sel, tokens, q, tokens);
            assertEquals(tokens, set.length, s.name());
            ExactAttention att = ExactAttention.of(shape);
            float[] exact = att.compute(kv, q).output();
            assertTrue(QualityMetrics.relativeError(exact, att.sparseOutput(kv, q, set)) < 1e-6, s.name());
        }
    }

    @Test
    void selectionIsDeterministicAndAllocationFreeAfterWarmUp() {
        int tokens = 4096;
        KvShape shape = new KvShape(1, 8, 2, 64, DType.F32);
        DenseLayerKv kv = keys(tokens, 2, 64, 9);
        LayerSelector one = Strategies.defaultStrategy().openLayer(context(shape, kv, tokens));
        LayerSelector two = Strategies.defaultStrategy().openLayer(context(shape, kv, tokens));
        for (int i = 0; i < 5; i++) {
            float[] q = query(8, 64, 100 + i);
            assertArrayEquals(step(one, tokens, q, 400), step(two, tokens, q, 400));
            assertArrayEquals(step(one, tokens, q, 400), step(one, tokens, q, 400));
        }
        assertAllocationFreeAfterWarmUp(one, tokens, query(8, 64, 5));
    }

    /** 50 steps of {@code sel} at a budget of 400 allocate nothing once the JIT has compiled them. */
    static void assertAllocationFreeAfterWarmUp(LayerSelector sel, int tokens, float[] q) {
        assertAllocationFreeAfterWarmUp(sel, tokens, q, new FetchPlan());
    }

    /** The same with {@code plan} (its head groups set by the caller). */
    static void assertAllocationFreeAfterWarmUp(LayerSelector sel, int tokens, float[] q, FetchPlan plan) {
        plan.ensureCapacity(4096);
        // Steps alternate between q and a query drifted from it, so that a selector that carries its
        // estimates from step to step (CarriedLogits) sweeps changes, not only repeats or fresh rows.
        float[][] queries = {q, q.clone()};
        SplittableRandom r = new SplittableRandom(q.length);
        for (int i = 0; i < q.length; i++) {
            queries[1][i] += (float) (0.05 * r.nextGaussian());
        }
        // The JIT compiles the step before it is measured (rows this short stay off the Vector API path,
        // whose code allocates until C2 has compiled it: Softmax.VECTOR_MIN).
        for (int i = 0; i < 6000; i++) {
            plan.begin(0, tokens, 400);
            sel.select(queries[i & 1], plan);
        }
        // The least over 100 windows: a JIT deoptimisation in one window does not count; a per-step object
        // would show in every window.
        long allocated = io.kvoffload.testing.Allocations.leastOverWindows(() -> {
            for (int i = 0; i < 50; i++) {
                plan.begin(0, tokens, 400);
                sel.select(queries[i & 1], plan);
            }
        }, 100);
        assertEquals(0, allocated, "bytes allocated by 50 steps");
    }

    @Test
    void edgeCases() {
        KvShape shape = new KvShape(1, 2, 1, 8, DType.F32);
        SelectionStrategy s = Strategies.named("mass-mix");
        // Fewer tokens than one block; a budget of 0; nothing laid out; everything in sinks and window.
        DenseLayerKv tiny = keys(5, 1, 8, 1);
        assertEquals(5, step(s.openLayer(context(shape, tiny, 5)), 5, query(2, 8, 1), 5).length);
        DenseLayerKv kv = keys(200, 1, 8, 2);
        LayerSelector sel = s.openLayer(context(shape, kv, 200));
        assertEquals(SINKS + WINDOW, step(sel, 200, query(2, 8, 2), SINKS + WINDOW).length, "budget 0 adds nothing");
        assertEquals(SINKS + WINDOW, step(s.openLayer(context(shape, kv, 0)), 200, query(2, 8, 2), 100).length,
                "nothing laid out: the window serves the layer");
        DenseLayerKv small = keys(30, 1, 8, 3);
        assertEquals(30, step(s.openLayer(context(shape, small, 30)), 30, query(2, 8, 3), 30).length);
        // A budget below one block takes no block (never more than the budget).
        assertEquals(SINKS + WINDOW, step(sel, 200, query(2, 8, 2), SINKS + WINDOW + 15).length);
        // A budget of one block takes one block: 16 new rows, fewer if it overlaps the sinks or the window.
        int added = step(sel, 200, query(2, 8, 2), SINKS + WINDOW + 16).length - (SINKS + WINDOW);
        assertTrue(added > 0 && added <= 16, "one block adds 1..16 rows, added " + added);
    }

    /**
     * The default ranks parts of the layer's adaptive pages: exactly what the fixed-size strategy of the
     * part's size selects, whole parts, at several lengths (1 KiB entries: 4-token pages fill a read, and
     * a part holds at least a quarter read, one token; on this narrow shape, one KV head × 128 scored with
     * two rows, the layer may have 65,536 parts before they grow: {@link BlockSize#maxBlocks}).
     */
    @Test
    void theDefaultRanksPartsOfTheLayersAdaptivePages() {
        SelectionStrategy auto = Strategies.named("mass-auto");
        KvShape shape = new KvShape(1, 2, 1, 128, DType.F32); // 1 KiB entries
        long cost = BlockSize.sweepCost(shape, BlockMassIndex.Combination.CLUSTERED_HEAD_MASS);
        int[][] cases = {{4000, 1}, {70000, 2}};
        for (int[] c : cases) {
            int tokens = c[0], bt = c[1];
            assertEquals(4, BlockSize.adaptive(tokens, shape.entryBytes(), BlockSize.READ_ALIGNMENT, 16, cost, 1));
            assertEquals(bt, BlockSize.ranked(tokens, shape.entryBytes(), BlockSize.READ_ALIGNMENT, 4, cost, 1));
            DenseLayerKv kv = keys(tokens, 1, 128, tokens);
            LayerSelector a = auto.openLayer(context(shape, kv, tokens));
            LayerSelector b = BlockMassStrategy.auto("fixed", bt).openLayer(context(shape, kv, tokens));
            int budget = tokens / 10;
            for (int seed = 0; seed < 2; seed++) {
                float[] q = query(2, 128, seed);
                int[] got = step(a, tokens, q, budget);
                assertArrayEquals(step(b, tokens, q, budget), got, tokens + " tokens: the " + bt + "-token selection");
                int windowFrom = tokens - WINDOW;
                java.util.BitSet set = new java.util.BitSet();
                for (int t : got) {
                    set.set(t);
                }
                for (int t : got) {
                    if (t >= SINKS && t < windowFrom) { // the rest of t's block between the sinks and the window
                        int from = Math.max(SINKS, t / bt * bt), to = Math.min(windowFrom, t / bt * bt + bt);
                        assertEquals(to - from, set.get(from, to).cardinality(),
                                tokens + " tokens: whole " + bt + "-token blocks, position " + t);
                    }
                }
            }
        }
    }

    @Test
    void badInputIsNamed() {
        DenseLayerKv kv = keys(64, 2, 8, 1);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new BlockMassIndex(kv, 64, 3, 16, Scoring.MIX, Combination.HEAD_MASS));
        assertTrue(e.getMessage().contains("queryHeads = 3"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> new BlockMassIndex(kv, 64, 4, 0, Scoring.MIX, Combination.HEAD_MASS));
        assertTrue(e.getMessage().contains("blockTokens"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> new BlockMassIndex(kv, 65, 4, 16, Scoring.MIX, Combination.HEAD_MASS));
        assertTrue(e.getMessage().contains("tokens"), e.getMessage());
        BlockMassIndex index = new BlockMassIndex(kv, 64, 4, 16, Scoring.MIX, Combination.HEAD_MASS);
        e = assertThrows(IllegalArgumentException.class, () -> index.score(new float[5], new float[4]));
        assertTrue(e.getMessage().contains("query.length = 5"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> index.score(new float[32], new float[3]));
        assertTrue(e.getMessage().contains("scores.length = 3"), e.getMessage());
        float[] nan = new float[32];
        nan[7] = Float.NaN;
        e = assertThrows(IllegalArgumentException.class, () -> index.score(nan, new float[4]));
        assertTrue(e.getMessage().contains("query[7] = NaN"), e.getMessage());
        kv.keyArray(1)[8 * 10 + 2] = Float.POSITIVE_INFINITY;
        e = assertThrows(IllegalArgumentException.class,
                () -> new BlockMassIndex(kv, 64, 4, 16, Scoring.MEAN, Combination.HEAD_MASS));
        assertTrue(e.getMessage().contains("token 10, KV head 1, dimension 2"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> new BlockMassStrategy("x", Scoring.MIX, Combination.HEAD_MASS, 70000));
        assertTrue(e.getMessage().contains("blockTokens = 70000"), e.getMessage());
    }

    /**
     * A non-finite key is named wherever it lies, also in a layer long enough for the vectorised
     * summaries (whose bounds do not check each element) and in the short last block.
     */
    @Test
    void aNonFiniteKeyInALongLayerIsNamed() {
        int tokens = 16 * 2048 + 5, d = 12; // 2 KV heads × 2,049 blocks: KeyBounds' vector path; 12 dims: its tail
        for (int[] at : new int[][] {{0, 1, 0}, {1, 16 * 700 + 9, 11}, {1, tokens - 1, 8}, {0, 16 * 64, 3}}) {
            for (float bad : new float[] {Float.NaN, Float.NEGATIVE_INFINITY}) {
                DenseLayerKv kv = keys(tokens, 2, d, 3);
                kv.keyArray(at[0])[at[1] * d + at[2]] = bad;
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> new BlockMassIndex(kv, tokens, 8, 16, Scoring.MIX, Combination.CLUSTERED_HEAD_MASS));
                assertTrue(e.getMessage().contains("key of token " + at[1] + ", KV head " + at[0] + ", dimension " + at[2]
                        + " = " + bad), e.getMessage());
            }
        }
    }
}
