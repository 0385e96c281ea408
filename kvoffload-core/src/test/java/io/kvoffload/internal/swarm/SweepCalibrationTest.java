package io.kvoffload.internal.swarm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.attention.ExactAttention;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.strategy.FetchPlan;
import io.kvoffload.strategy.LayerContext;
import io.kvoffload.strategy.LayerKv;
import io.kvoffload.strategy.LayerSelector;
import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.strategy.Strategies;
import io.kvoffload.workload.Workload;
import io.kvoffload.workload.WorkloadFamily;
import java.util.List;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/**
 * {@link SweepCalibration} and {@code mass-auto-cal}: the masses are the exact attention each plan holds,
 * and a layer opened with a query serves the plan of the configuration that holds most of it (another
 * than the default's only by at least {@link SweepCalibration#MIN_GAIN}), while one opened without a
 * query is {@code mass-auto}.
 */
class SweepCalibrationTest {
    static final int SINKS = 4, WINDOW = 256;
    /** Llama-3-8B's layer at 16K tokens: per head group, its sweep has room for parts only with half the rows. */
    static final KvShape LLAMA = new KvShape(1, 32, 8, 128, DType.BF16);
    static final int TOKENS = 16384;
    /** A token's slice of one device as a whole aligned read: every plan of the same rows opens as many reads. */
    static final long WHOLE_READ = 4096;

    /** Layer 0 of {@code family}'s workload on {@link #LLAMA}, and its keys in memory. */
    private record Layer(Workload workload, DenseLayerKv kv) {
        static Layer of(String family, long seed) {
            Workload w = WorkloadFamily.byName(family).create(LLAMA, TOKENS, seed);
            return new Layer(w, DenseLayerKv.materialize(w.layer(0), false));
        }
    }

    /** A plan's mass is each query head's exact softmax weight on the positions planned for its KV head, averaged. */
    @Property(tries = 40)
    void massesAreTheExactAttentionEachPlanHolds(@ForAll @IntRange(min = 1, max = 9000) int tokens,
            @ForAll @IntRange(min = 1, max = 3) int kvHeads, @ForAll @IntRange(min = 1, max = 5) int group,
            @ForAll long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        int d = 8, q = kvHeads * group;
        KvShape shape = new KvShape(1, q, kvHeads, d, DType.F32);
        float[][] k = new float[kvHeads][tokens * d];
        for (float[] head : k) {
            for (int i = 0; i < head.length; i++) {
                head[i] = (float) r.nextGaussian();
            }
            int late = tokens - 1 - r.nextInt(Math.min(tokens, 100)); // a high logit late in the layer
            java.util.Arrays.fill(head, late * d, late * d + d, 3f);
        }
        LayerKv kv = new DenseLayerKv(tokens, d, k, k);
        float[] query = new float[q * d];
        for (int i = 0; i < query.length; i++) {
            query[i] = (float) (r.nextGaussian() * 2);
        }
        FetchPlan[] plans = new FetchPlan[2];
        for (int p = 0; p < 2; p++) {
            plans[p] = new FetchPlan();
            plans[p].heads(kvHeads, kvHeads);
            plans[p].begin(0, tokens, tokens);
            for (int t = 0; t < tokens; t++) {
                if (r.nextInt(4) == 0) {
                    plans[p].add(t, r.nextBoolean() ? FetchPlan.ALL_HEADS : 1L << r.nextInt(kvHeads));
                }
            }
        }
        double[] got = SweepCalibration.masses(ExactAttention.of(shape).headWeights(kv, query), shape, plans);
        for (int p = 0; p < 2; p++) {
            double want = naiveMass(k, tokens, shape, query, plans[p]);
            assertEquals(want, got[p], 1e-5 * Math.max(want, 1e-3), "plan " + p); // float logits against double
        }
    }

    /**
     * The rule on real plans: a candidate that holds more of the opening query's attention (the default
     * against InfLLM's representative tokens) replaces the first, never the other way round, and an
     * equal one is not worth a larger index. Llama-3-8B's layer at 16K
     * tokens, per head group, each token's slice a whole read (so reads do not decide).
     */
    @Test
    void anotherCandidateServesOnlyWhenItHoldsMoreOfTheOpeningQuerysAttention() {
        Layer layer = Layer.of("retrieval-heads", 24301);
        DenseLayerKv kv = layer.kv();
        float[] query = layer.workload().query(0, 256);
        try (LayerSelector auto = Strategies.named("mass-auto").openLayer(context(LLAMA, kv, null));
                LayerSelector weak = Strategies.named("infllm").openLayer(context(LLAMA, kv, null))) {
            FetchPlan a = select(auto, LLAMA, TOKENS, query), b = select(weak, LLAMA, TOKENS, query);
            float[][] w = ExactAttention.of(LLAMA).headWeights(kv, query);
            double[] mass = SweepCalibration.masses(w, LLAMA, a, b);
            assertTrue(mass[0] >= mass[1] + SweepCalibration.MIN_GAIN, "the default holds more: " + mass[0] + " " + mass[1]);
            assertEquals(1, SweepCalibration.choose(w, TOKENS, LLAMA, LLAMA.kvHeads(), 0, query, List.of(weak, auto), WHOLE_READ, SINKS, WINDOW));
            assertEquals(0, SweepCalibration.choose(w, TOKENS, LLAMA, LLAMA.kvHeads(), 0, query, List.of(auto, weak), WHOLE_READ, SINKS, WINDOW));
            assertEquals(0, SweepCalibration.choose(w, TOKENS, LLAMA, LLAMA.kvHeads(), 0, query, List.of(auto, auto), WHOLE_READ, SINKS, WINDOW));
            assertEquals(2, SweepCalibration.choose(w, TOKENS, LLAMA, LLAMA.kvHeads(), 0, query, List.of(weak, weak, auto), WHOLE_READ, SINKS, WINDOW));
        }
    }

    /**
     * A candidate that holds more of the opening query's attention but opens more aligned reads than the
     * first's plan, by over {@link SweepCalibration#MAX_EXTRA_READS}, serves only while it opens at most
     * {@link SweepCalibration#EXACT_READ_SHARE} of the exact selection's reads. One strong token in every
     * 64 taken one by one (64 reads of 16 tokens each) against one run of 64 weak tokens (4 reads): the
     * exact selection of 409 rows takes the strong tokens and spreads the rest over the layer's noise
     * (about 190 reads), so the 64 are within that share and the strong tokens serve. Where the strong
     * tokens are one run of 512 instead, the exact selection is 26 reads, and every 8th token of the run
     * (32 reads) does not serve. Where each token is a whole read, the run and the scattered tokens open
     * as many reads and the stronger serves.
     */
    @Test
    void aCandidateThatOpensMoreReadsServesOnlyWithinAShareOfTheExactSelectionsReads() {
        int tokens = 4096, d = 8;
        KvShape shape = new KvShape(1, 1, 1, d, DType.F32);
        float[] query = new float[d];
        java.util.Arrays.fill(query, 1f);
        LayerSelector run = (q, plan) -> plan.addRange(64, 128, FetchPlan.ALL_HEADS);

        LayerKv everySixtyFourth = strongTokens(tokens, d, 0, tokens, 64);
        LayerSelector scattered = (q, plan) -> {
            for (int t = 0; t < tokens; t += 64) {
                plan.add(t, FetchPlan.ALL_HEADS);
            }
        };
        float[][] w = ExactAttention.of(shape).headWeights(everySixtyFourth, query);
        double[] mass = SweepCalibration.masses(w, shape, select(run, shape, tokens, query), select(scattered, shape, tokens, query));
        assertTrue(mass[1] >= mass[0] + SweepCalibration.MIN_GAIN, "the scattered tokens hold more: " + mass[1] + " " + mass[0]);
        assertEquals(4, SweepCalibration.reads(select(run, shape, tokens, query), tokens, 1, 1, 256));
        assertEquals(64, SweepCalibration.reads(select(scattered, shape, tokens, query), tokens, 1, 1, 256));
        long exact = SweepCalibration.exactReads(w, shape, 1, 0, tokens, SINKS, WINDOW, 256);
        assertTrue(exact >= 128 && exact <= 240, "the exact selection spreads over the layer: " + exact);
        assertEquals(1, SweepCalibration.choose(w, tokens, shape, 1, 0, query, List.of(run, scattered), 256, SINKS, WINDOW));
        assertEquals(1, SweepCalibration.choose(w, tokens, shape, 1, 0, query, List.of(run, scattered), WHOLE_READ, SINKS, WINDOW));

        LayerKv oneRun = strongTokens(tokens, d, 1024, 1536, 1);
        LayerSelector everyEighth = (q, plan) -> {
            for (int t = 1024; t < 1536; t += 8) {
                plan.add(t, FetchPlan.ALL_HEADS);
            }
        };
        w = ExactAttention.of(shape).headWeights(oneRun, query);
        mass = SweepCalibration.masses(w, shape, select(run, shape, tokens, query), select(everyEighth, shape, tokens, query));
        assertTrue(mass[1] >= mass[0] + SweepCalibration.MIN_GAIN, "the run's tokens hold more: " + mass[1] + " " + mass[0]);
        assertEquals(32, SweepCalibration.reads(select(everyEighth, shape, tokens, query), tokens, 1, 1, 256));
        assertEquals(26, SweepCalibration.exactReads(w, shape, 1, 0, tokens, SINKS, WINDOW, 256)); // 409 rows from 1024 on
        assertEquals(0, SweepCalibration.choose(w, tokens, shape, 1, 0, query, List.of(run, everyEighth), 256, SINKS, WINDOW));
    }

    /** Keys of small noise, with every {@code step}-th token of {@code [from, to)} strong. */
    private static LayerKv strongTokens(int tokens, int d, int from, int to, int step) {
        float[] k = new float[tokens * d];
        SplittableRandom r = new SplittableRandom(5);
        for (int i = 0; i < k.length; i++) {
            k[i] = (float) (r.nextGaussian() * 0.1);
        }
        for (int t = from; t < to; t += step) {
            java.util.Arrays.fill(k, t * d, t * d + d, 1.5f); // what the query attends
        }
        return new DenseLayerKv(tokens, d, new float[][] {k}, null);
    }

    /** {@link SweepCalibration#reads}: each (head group, aligned read) a plan touches, once, by the definition. */
    @Property(tries = 60)
    void readsCountEachGroupsAlignedReadOnce(@ForAll @IntRange(min = 1, max = 1500) int tokens,
            @ForAll @IntRange(min = 0, max = 2) int groupsLog, @ForAll @IntRange(min = 50, max = 9000) int sliceBytes,
            @ForAll long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        int kvHeads = 4, groups = 1 << groupsLog, perGroup = kvHeads / groups;
        long slice = sliceBytes; // on and off the 4 KiB alignment, a token over two reads or more
        FetchPlan plan = new FetchPlan();
        plan.heads(kvHeads, groups);
        plan.begin(0, tokens, tokens);
        java.util.Set<Long> want = new java.util.HashSet<>();
        for (int t = 0; t < tokens; t++) {
            if (r.nextInt(5) != 0) {
                continue;
            }
            long mask = groups == 1 || r.nextBoolean() ? FetchPlan.ALL_HEADS
                    : ((1L << perGroup) - 1) << (perGroup * r.nextInt(groups));
            plan.add(t, mask);
            for (int g = 0; g < groups; g++) {
                if (mask == FetchPlan.ALL_HEADS || (mask >>> (g * perGroup) & 1L) != 0) {
                    for (long b = t * slice; b < (t + 1) * slice; b++) { // every byte's 4 KiB read
                        want.add(g * 1_000_000_000L + b / 4096);
                    }
                }
            }
        }
        assertEquals(want.size(), SweepCalibration.reads(plan, tokens, kvHeads, groups, slice));
    }

    /**
     * Where the layer has room for more parts only with half the rows (Llama-3-8B's at 16K tokens per head
     * group), the calibrated default builds that index too; what it serves for the opening query holds at
     * least {@code mass-auto}'s mass, and more by {@code MIN_GAIN} wherever the two differ.
     */
    @Test
    void theCalibratedDefaultNeverServesLessOfTheOpeningQuerysAttention() {
        for (String family : new String[] {"default", "mixed-heads"}) {
            Layer layer = Layer.of(family, 99);
            DenseLayerKv kv = layer.kv();
            float[] query = layer.workload().query(0, 256);
            BlockMassIndex rows = new BlockMassIndex(kv, TOKENS, 32, 2, BlockMassIndex.Scoring.MIX,
                    BlockMassIndex.Combination.CLUSTERED_HEAD_MASS, BlockMassStrategy.AUTO_PRUNE_LOGIT, true, false);
            BlockMassIndex parts = new BlockMassIndex(kv, TOKENS, 32, 2, BlockMassIndex.Scoring.MIX,
                    BlockMassIndex.Combination.CLUSTERED_HEAD_MASS, BlockMassStrategy.AUTO_PRUNE_LOGIT, true, true);
            assertEquals(2, rows.scoredTokens(), "no room for parts with the fewest rows");
            assertEquals(1, parts.scoredTokens(), "room for them with half the rows");
            assertTrue(parts.queryRowCount() < rows.queryRowCount(), parts.queryRowCount() + " rows");
            FetchPlan auto = plan(Strategies.named("mass-auto"), LLAMA, kv, null, query);
            FetchPlan cal = plan(Strategies.named("mass-auto-cal"), LLAMA, kv, query, query);
            double[] mass = SweepCalibration.masses(ExactAttention.of(LLAMA).headWeights(kv, query), LLAMA, auto, cal);
            assertTrue(samePlan(auto, cal) || mass[1] >= mass[0] + SweepCalibration.MIN_GAIN,
                    family + ": " + mass[1] + " against " + mass[0]);
        }
    }

    /** Without an opening query the calibrated default is {@code mass-auto}, step for step; with one, it is deterministic. */
    @Test
    void withoutAnOpeningQueryItIsTheDefaultAndWithOneItIsDeterministic() {
        Layer layer = Layer.of("default", 7);
        Workload w = layer.workload();
        DenseLayerKv kv = layer.kv();
        SelectionStrategy auto = Strategies.named("mass-auto"), cal = Strategies.named("mass-auto-cal");
        float[] opening = w.query(0, 256);
        try (LayerSelector a = auto.openLayer(context(LLAMA, kv, null)); LayerSelector c = cal.openLayer(context(LLAMA, kv, null));
                LayerSelector c1 = cal.openLayer(context(LLAMA, kv, opening));
                LayerSelector c2 = cal.openLayer(context(LLAMA, kv, opening.clone()))) {
            for (int step = 256; step < 260; step++) {
                float[] q = w.query(0, step);
                assertTrue(samePlan(select(a, LLAMA, TOKENS, q), select(c, LLAMA, TOKENS, q)), "step " + step);
                assertTrue(samePlan(select(c1, LLAMA, TOKENS, q), select(c2, LLAMA, TOKENS, q)), "step " + step);
            }
        }
        assertNotEquals(auto.name(), cal.name());
    }

    /**
     * The default makes the calibrated choice where half its rows still pair (16 query heads a KV head)
     * and where its candidates' summaries stream no more bytes than the reference's index (Llama-3.2-1B's
     * 8 KV heads × 64): it is {@code mass-auto-cal} there, step for step; not on Llama-3-8B's layer (4
     * query heads on each of 8 KV heads × 128, whose candidates are twice the reference's: the opening
     * query changes nothing).
     */
    @Test
    void theDefaultChoosesWhereHalfItsRowsPairOrItsCandidatesStreamTheReferencesBytes() {
        assertTrue(BlockSize.halfRowsPair(BlockMassIndex.Combination.CLUSTERED_HEAD_MASS, 32, 2, 128));
        assertTrue(!BlockSize.halfRowsPair(BlockMassIndex.Combination.CLUSTERED_HEAD_MASS, 32, 8, 128));
        assertTrue(!BlockSize.halfRowsPair(BlockMassIndex.Combination.HEAD_MASS, 32, 2, 128));
        assertTrue(!BlockSize.halfRowsPair(BlockMassIndex.Combination.CLUSTERED_HEAD_MASS, 32, 8, 64));
        // The reference's index: 8,192 blocks up to 128K tokens, 16-token ones beyond, of 8 KV heads × 128.
        assertTrue(BlockSize.withinReferenceBytes(16384, 8, 64, 131072), "32q/8kv × 64, two parts a block");
        assertTrue(!BlockSize.withinReferenceBytes(16384, 8, 128, 131072), "Llama-3-8B's layer, two parts a block");
        assertTrue(!BlockSize.withinReferenceBytes(32768, 4, 128, 131072), "12q/4kv × 128, four parts a block");
        assertTrue(BlockSize.withinReferenceBytes(131072, 8, 64, 1 << 20));
        assertTrue(!BlockSize.withinReferenceBytes(131073, 8, 64, 1 << 20));
        assertTrue(BlockSize.withinReferenceBytes(16384, 8, 64, 1000), "short layers: the reference's 8,192 blocks");
        assertEquals(16384, BlockSize.scored(131072, 16, 2));
        assertEquals(3, BlockSize.scored(17, 16, 2), "a short last part");
        assertTheDefaultIsCalibrated(new KvShape(1, 32, 2, 128, DType.BF16), "retrieval-heads", 5150);
        assertTheDefaultIsCalibrated(new KvShape(1, 32, 8, 64, DType.BF16), "default", 7);
        SelectionStrategy auto = Strategies.named("mass-auto");
        Layer llama = Layer.of("default", 7);
        float[] first = llama.workload().query(0, 256);
        try (LayerSelector with = auto.openLayer(context(LLAMA, llama.kv(), first));
                LayerSelector without = auto.openLayer(context(LLAMA, llama.kv(), null))) {
            for (int step = 256; step < 259; step++) {
                float[] q = llama.workload().query(0, step);
                assertTrue(samePlan(select(with, LLAMA, TOKENS, q), select(without, LLAMA, TOKENS, q)), "Llama, step " + step);
            }
        }
    }

    /**
     * Finer blocks that rank more (head group, block) pairs than the reference layer's step are weighed by
     * {@code mass-auto-cal}, not by the default: on 32q/8kv × 64 at 128K tokens ({@code default} keys, where
     * the opening query holds more attention in 8-token blocks), {@code mass-auto-cal} plans runs of 8
     * tokens and the default only whole 16-token blocks.
     */
    @Test
    void theDefaultWeighsFinerBlocksOnlyWithinTheReferencesPairs() {
        int tokens = 131072;
        assertTrue(!BlockSize.withinReferencePairs(16384, 8, tokens), "8-token blocks in 8 head groups at 128K");
        assertTrue(BlockSize.withinReferencePairs(8192, 8, tokens));
        assertTrue(BlockSize.withinReferencePairs(16384, 4, tokens), "8-token blocks in 4 head groups at 128K");
        assertTrue(BlockSize.withinReferencePairs(131072, 4, 1 << 20));
        assertTrue(!BlockSize.withinReferencePairs(131072, 8, 1 << 20));
        assertTrue(BlockSize.withinReferencePairs(16384, 4, 1000), "short layers: the reference's 8,192 blocks");
        KvShape shape = new KvShape(1, 32, 8, 64, DType.BF16);
        Workload w = WorkloadFamily.byName("default").create(shape, tokens, 24301);
        float[] opening = w.query(0, 256), q = w.query(0, 257);
        assertEquals(16, shortestRun(plan(Strategies.named("mass-auto"), shape, w.layer(0), opening, q)));
        assertEquals(8, shortestRun(plan(Strategies.named("mass-auto-cal"), shape, w.layer(0), opening, q)));
    }

    /** The greatest power of two up to 16 that every run of consecutive positions of {@code plan} starts and ends at a multiple of. */
    private static int shortestRun(FetchPlan plan) {
        int align = 16;
        for (int i = 0, n = plan.size(); i < n; i++) {
            int p = plan.position(i);
            boolean starts = i == 0 || plan.position(i - 1) != p - 1, ends = i == n - 1 || plan.position(i + 1) != p + 1;
            while ((starts && p % align != 0) || (ends && (p + 1) % align != 0)) {
                align /= 2;
            }
        }
        return align;
    }

    /** On layer 0 of {@code family}'s workload, the opening query chooses another index and the default serves as {@code mass-auto-cal}. */
    private static void assertTheDefaultIsCalibrated(KvShape shape, String family, long seed) {
        SelectionStrategy auto = Strategies.named("mass-auto"), cal = Strategies.named("mass-auto-cal");
        Workload w = WorkloadFamily.byName(family).create(shape, TOKENS, seed);
        DenseLayerKv kv = DenseLayerKv.materialize(w.layer(0), false);
        float[] opening = w.query(0, 256);
        try (LayerSelector a = auto.openLayer(context(shape, kv, opening)); LayerSelector c = cal.openLayer(context(shape, kv, opening));
                LayerSelector plain = auto.openLayer(context(shape, kv, null))) {
            assertNotEquals(plain.memoryBytes(), a.memoryBytes(), "the opening query chose another index on " + shape);
            for (int step = 256; step < 259; step++) {
                float[] q = w.query(0, step);
                assertTrue(samePlan(select(a, shape, TOKENS, q), select(c, shape, TOKENS, q)), shape + ", step " + step);
            }
        }
    }

    private static FetchPlan plan(SelectionStrategy s, KvShape shape, LayerKv kv, float[] opening, float[] query) {
        try (LayerSelector sel = s.openLayer(context(shape, kv, opening))) {
            return select(sel, shape, kv.tokens(), query);
        }
    }

    private static FetchPlan select(LayerSelector sel, KvShape shape, int tokens, float[] query) {
        FetchPlan p = new FetchPlan();
        p.heads(shape.kvHeads(), shape.kvHeads());
        p.begin(0, tokens, tokens / 10 - SINKS - WINDOW);
        sel.select(query, p);
        return p;
    }

    /** A context over {@code kv} whose every KV head is stored apart, opened by {@code opening} (may be null). */
    static LayerContext context(KvShape shape, LayerKv kv, float[] opening) {
        return new LayerContext() {
            @Override public KvShape shape() { return shape; }
            @Override public int layer() { return 0; }
            @Override public int tokens() { return kv.tokens(); }
            @Override public int laidOutTokens() { return kv.tokens(); }
            @Override public int sinkTokens() { return SINKS; }
            @Override public int localWindow() { return WINDOW; }
            @Override public LayerKv keys() { return kv; }
            @Override public int headGroups() { return shape.kvHeads(); }
            @Override public float[] openingQuery() { return opening; }
        };
    }

    private static boolean samePlan(FetchPlan a, FetchPlan b) {
        if (a.size() != b.size()) {
            return false;
        }
        for (int i = 0; i < a.size(); i++) {
            if (a.position(i) != b.position(i) || a.kvHeadMask(i) != b.kvHeadMask(i)) {
                return false;
            }
        }
        return true;
    }

    private static double naiveMass(float[][] k, int tokens, KvShape shape, float[] query, FetchPlan plan) {
        int d = shape.headDim(), group = shape.queryHeads() / shape.kvHeads();
        double total = 0;
        for (int h = 0; h < shape.kvHeads(); h++) {
            boolean[] in = new boolean[tokens];
            for (int i = 0; i < plan.size(); i++) {
                long m = plan.kvHeadMask(i);
                if (m == FetchPlan.ALL_HEADS || (m >>> h & 1L) != 0) {
                    in[plan.position(i)] = true;
                }
            }
            for (int g = 0; g < group; g++) {
                double[] l = new double[tokens];
                double max = Double.NEGATIVE_INFINITY;
                for (int t = 0; t < tokens; t++) {
                    double s = 0;
                    for (int j = 0; j < d; j++) {
                        s += (double) query[(h * group + g) * d + j] * k[h][t * d + j];
                    }
                    l[t] = s / Math.sqrt(d);
                    max = Math.max(max, l[t]);
                }
                double z = 0, held = 0;
                for (int t = 0; t < tokens; t++) {
                    double e = Math.exp(l[t] - max);
                    z += e;
                    held += in[t] ? e : 0;
                }
                total += held / z;
            }
        }
        return total / shape.queryHeads();
    }
}
