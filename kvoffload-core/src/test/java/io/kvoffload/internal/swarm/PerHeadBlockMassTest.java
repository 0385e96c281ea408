package io.kvoffload.internal.swarm;

import static io.kvoffload.internal.swarm.BlockMassStrategyTest.SINKS;
import static io.kvoffload.internal.swarm.BlockMassStrategyTest.WINDOW;
import static io.kvoffload.internal.swarm.BlockMassStrategyTest.context;
import static io.kvoffload.internal.swarm.BlockMassStrategyTest.keys;
import static io.kvoffload.internal.swarm.BlockMassStrategyTest.query;
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
import io.kvoffload.strategy.LayerSelector;
import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.strategy.Strategies;
import io.kvoffload.testing.AdjustedLayerContext;
import java.util.BitSet;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/**
 * The per-head block-mass strategies ({@code head-mass-mix}, {@code head-qmass-mix}; issue #16): one
 * token set per head group of the plan, (group, block) pairs pooled within the budget counted in
 * entries; with one group exactly the shared strategy's blocks.
 */
class PerHeadBlockMassTest {
    /** The per-head strategies (KV-head mean, each query head, clustered query heads) and their shared twins. */
    static final String[] HEAD_VARIANTS = {"head-mass-mix", "head-qmass-mix", "head-cmass-mix"};
    static final String[] SHARED_VARIANTS = {"mass-mix", "qmass-mix", "cmass-mix"};
    /** One pipeline step with {@code groups} head groups: per group, the positions it attends. */
    static BitSet[] step(LayerSelector sel, int tokens, int kvHeads, int groups, float[] q, int total) {
        FetchPlan plan = new FetchPlan();
        plan.heads(kvHeads, groups);
        int windowFrom = Math.max(Math.min(SINKS, tokens), tokens - WINDOW);
        int resident = Math.min(SINKS, tokens) + tokens - windowFrom;
        plan.begin(0, tokens, Math.max(0, total - resident));
        int from = plan.size();
        sel.select(q, plan);
        BitSet[] sets = new BitSet[groups];
        int perGroup = kvHeads / groups;
        for (int g = 0; g < groups; g++) {
            sets[g] = new BitSet();
            for (int t = 0; t < Math.min(SINKS, tokens); t++) {
                sets[g].set(t);
            }
            sets[g].set(windowFrom, tokens);
        }
        for (int i = from; i < plan.size(); i++) {
            long mask = plan.kvHeadMask(i);
            int t = plan.position(i);
            for (int g = 0; g < groups; g++) {
                long bits = ((1L << perGroup) - 1) << (g * perGroup);
                long part = mask & bits;
                assertTrue(mask == FetchPlan.ALL_HEADS || part == 0 || part == bits,
                        "position " + t + ": mask 0x" + Long.toHexString(mask) + " splits head group " + g);
                if (mask == FetchPlan.ALL_HEADS || part != 0) {
                    sets[g].set(t);
                }
            }
        }
        return sets;
    }

    /** Per query head, its KV head's group's set. */
    static int[][] perKvHead(BitSet[] sets, int kvHeads) {
        int[][] out = new int[kvHeads][];
        for (int h = 0; h < kvHeads; h++) {
            out[h] = sets[h / (kvHeads / sets.length)].stream().toArray();
        }
        return out;
    }

    static double headRecall(float[][] w, int[][] perKv, int group) {
        double sum = 0;
        for (int qh = 0; qh < w.length; qh++) {
            double hit = 0, all = 0;
            BitSet in = new BitSet();
            for (int t : perKv[qh / group]) {
                in.set(t);
            }
            for (int t = 0; t < w[qh].length; t++) {
                all += w[qh][t];
                hit += in.get(t) ? w[qh][t] : 0;
            }
            sum += hit / all;
        }
        return sum / w.length;
    }

    @Property(tries = 60)
    void pairsFitTheBudgetNestAsItGrowsAndRecallNeverFalls(@ForAll @IntRange(min = 40, max = 600) int tokens,
            @ForAll @IntRange(min = 0, max = 3) int log2KvHeads, @ForAll @IntRange(min = 0, max = 3) int log2Groups,
            @ForAll @IntRange(min = 1, max = 1000) int a, @ForAll @IntRange(min = 1, max = 1000) int b,
            @ForAll @IntRange(min = 0, max = 2) int variant, @ForAll long seed) {
        int kvHeads = 1 << log2KvHeads, groups = 1 << Math.min(log2Groups, log2KvHeads);
        int groupSize = variant == 2 ? 4 : 2; // clustered rows: four query heads a KV head, merged into two
        KvShape shape = new KvShape(1, kvHeads * groupSize, kvHeads, 16, DType.F32);
        DenseLayerKv kv = keys(tokens, kvHeads, 16, seed);
        LayerSelector sel = Strategies.named(HEAD_VARIANTS[variant]).openLayer(context(shape, kv, tokens));
        float[] q = query(kvHeads * groupSize, 16, seed ^ 7);
        int small = Math.min(a, b) * tokens / 1000, large = Math.max(a, b) * tokens / 1000;
        BitSet[] s = step(sel, tokens, kvHeads, groups, q, small), l = step(sel, tokens, kvHeads, groups, q, large);
        int windowFrom = Math.max(Math.min(SINKS, tokens), tokens - WINDOW);
        int resident = Math.min(SINKS, tokens) + tokens - windowFrom;
        long fresh = 0, all = (long) (windowFrom - Math.min(SINKS, tokens)) * groups;
        for (BitSet set : s) {
            fresh += set.cardinality() - resident;
        }
        // Within the budget in entries (a (token, group) pair is 1/groups of an entry), or everything.
        assertTrue(fresh <= (long) Math.max(0, small - resident) * groups || fresh == all,
                "pairs " + fresh + " over budget " + Math.max(0, small - resident) + " × " + groups);
        for (int g = 0; g < groups; g++) {
            BitSet extra = (BitSet) s[g].clone();
            extra.andNot(l[g]);
            assertTrue(extra.isEmpty(), "group " + g + ": " + extra + " chosen at budget " + small + " but not " + large);
        }
        float[][] w = ExactAttention.of(shape).headWeights(kv, q);
        assertTrue(headRecall(w, perKvHead(s, kvHeads), groupSize) <= headRecall(w, perKvHead(l, kvHeads), groupSize) + 1e-9);
    }

    @Property(tries = 40)
    void oneGroupTakesExactlyTheSharedStrategysBlocks(@ForAll @IntRange(min = 40, max = 600) int tokens,
            @ForAll @IntRange(min = 1, max = 1000) int share, @ForAll @IntRange(min = 0, max = 2) int variant,
            @ForAll long seed) {
        KvShape shape = new KvShape(1, 16, 4, 16, DType.F32);
        DenseLayerKv kv = keys(tokens, 4, 16, seed);
        LayerSelector head = Strategies.named(HEAD_VARIANTS[variant]).openLayer(context(shape, kv, tokens));
        LayerSelector shared = Strategies.named(SHARED_VARIANTS[variant]).openLayer(context(shape, kv, tokens));
        float[] q = query(16, 16, seed);
        int total = share * tokens / 1000;
        assertArrayEquals(BlockMassStrategyTest.step(shared, tokens, q, total),
                step(head, tokens, 4, 1, q, total)[0].stream().toArray());
    }

    @Test
    void aFullBudgetGivesEveryHeadEveryTokenAndEqualsDenseAttention() {
        int tokens = 500;
        KvShape shape = new KvShape(1, 16, 8, 32, DType.F32);
        DenseLayerKv kv = keys(tokens, 8, 32, 3);
        float[] q = query(16, 32, 4);
        for (String name : HEAD_VARIANTS) {
            for (int groups : new int[] {1, 2, 8}) {
                BitSet[] sets = step(Strategies.named(name).openLayer(context(shape, kv, tokens)), tokens, 8, groups, q,
                        tokens);
                for (BitSet set : sets) {
                    assertEquals(tokens, set.cardinality(), name + " with " + groups + " groups");
                }
                ExactAttention att = ExactAttention.of(shape);
                assertTrue(QualityMetrics.relativeError(att.compute(kv, q).output(),
                        att.sparseOutput(kv, q, perKvHead(sets, 8))) < 1e-6, name);
            }
        }
    }

    @Test
    void perHeadSetsBeatTheSharedSetWhenHeadsAttendDifferentTokens() {
        // Each KV head's keys point one way in its own quarter of the context: a shared set must split
        // the budget, per-head sets give each head its quarter.
        int tokens = 2048, d = 16, kvHeads = 4;
        KvShape shape = new KvShape(1, kvHeads, kvHeads, d, DType.F32);
        DenseLayerKv kv = keys(tokens, kvHeads, d, 5);
        float[] q = new float[kvHeads * d];
        for (int h = 0; h < kvHeads; h++) {
            float[] k = kv.keyArray(h);
            for (int t = h * tokens / 4 + 64; t < h * tokens / 4 + 64 + 160; t++) {
                k[t * d + h] = 12; // dimension h: head h's topic
            }
            q[h * d + h] = 3;
        }
        SelectionStrategy head = Strategies.named("head-mass-mix");
        int total = SINKS + WINDOW + 160;
        float[][] w = ExactAttention.of(shape).headWeights(kv, q);
        double shared = headRecall(w, perKvHead(step(head.openLayer(context(shape, kv, tokens)), tokens, kvHeads, 1, q,
                total), kvHeads), 1);
        double perHead = headRecall(w, perKvHead(step(head.openLayer(context(shape, kv, tokens)), tokens, kvHeads,
                kvHeads, q, total), kvHeads), 1);
        assertTrue(perHead > shared + 0.2, "per-head recall " + perHead + " against shared " + shared);
    }

    @Test
    void deterministicAndAllocationFreeAfterWarmUp() {
        int tokens = 4096;
        KvShape shape = new KvShape(1, 8, 4, 64, DType.F32);
        DenseLayerKv kv = keys(tokens, 4, 64, 9);
        LayerSelector one = Strategies.named("head-qmass-mix").openLayer(context(shape, kv, tokens));
        LayerSelector two = Strategies.named("head-qmass-mix").openLayer(context(shape, kv, tokens));
        for (int i = 0; i < 3; i++) {
            float[] q = query(8, 64, 100 + i);
            BitSet[] x = step(one, tokens, 4, 4, q, 400), y = step(two, tokens, 4, 4, q, 400);
            assertArrayEquals(x, y);
        }
        FetchPlan plan = new FetchPlan();
        plan.heads(4, 4);
        BlockMassStrategyTest.assertAllocationFreeAfterWarmUp(Strategies.named("head-qmass-mix").openLayer(context(shape,
                kv, tokens)), tokens, query(8, 64, 5), plan);
    }

    /**
     * Head sharding of more than 64 KV heads (an MHA layer of 96): per-head masks cannot name them, so
     * the default ranks one shared set, the blocks {@code cmass-mix} takes (over the layer's finer blocks),
     * for every head; the
     * explicitly per-head variant refuses the layer by name.
     */
    @Test
    void theDefaultRanksOneSharedSetBeyondSixtyFourKvHeads() {
        KvShape wide = new KvShape(1, 96, 96, 8, DType.F32);
        int tokens = 600, total = 160;
        DenseLayerKv kv = keys(tokens, 96, 8, 3);
        float[] q = query(96, 8, 4);
        LayerSelector auto = Strategies.named("mass-auto").openLayer(new AdjustedLayerContext(context(wide, kv, tokens), null, 4));
        // A 600-token layer of 1.5 KiB head-group slices: the default's 4-token pages, ranked in 1-token
        // parts as one set.
        long slice = wide.entryBytes() / 4;
        long cost = BlockSize.sweepCost(wide, BlockMassIndex.Combination.CLUSTERED_HEAD_MASS);
        assertEquals(4, BlockSize.adaptive(tokens, slice, BlockSize.READ_ALIGNMENT, 16, cost, 4));
        int bt = BlockSize.ranked(tokens, slice, BlockSize.READ_ALIGNMENT, 4, cost, 4);
        assertEquals(1, bt);
        LayerSelector shared = BlockMassStrategy.auto("fixed", bt).openLayer(context(wide, kv, tokens));
        BitSet[] sets = step(auto, tokens, 96, 4, q, total);
        BitSet expected = new BitSet();
        for (int t : BlockMassStrategyTest.step(shared, tokens, q, total)) {
            expected.set(t);
        }
        for (BitSet set : sets) {
            assertEquals(expected, set, "every head group attends the shared set");
        }
        assertTrue(expected.cardinality() > SINKS + WINDOW, "the selector added blocks");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Strategies.named("head-cmass-mix").openLayer(new AdjustedLayerContext(context(wide, kv, tokens), null, 4)));
        assertTrue(e.getMessage().contains("kvHeads = 96"), e.getMessage());
    }

    @Test
    void badInputIsNamed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new BlockMassStrategy("x", Scoring.MIX, Combination.HEAD_MASS, 16, 0f, true, true));
        assertTrue(e.getMessage().contains("layoutUnits = true"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> new BlockMassStrategy("x", Scoring.MIX, Combination.SUM_LOGITS, 16, 0f, false, true));
        assertTrue(e.getMessage().contains("SUM_LOGITS"), e.getMessage());
        KvShape wide = new KvShape(1, 65, 65, 8, DType.F32);
        DenseLayerKv kv = keys(64, 65, 8, 1);
        e = assertThrows(IllegalArgumentException.class,
                () -> Strategies.named("head-mass-mix").openLayer(context(wide, kv, 64)));
        assertTrue(e.getMessage().contains("kvHeads = 65"), e.getMessage());
        FetchPlan plan = new FetchPlan();
        plan.heads(4, 2);
        plan.begin(0, 100, 10);
        e = assertThrows(IllegalArgumentException.class, () -> plan.add(5, 0L));
        assertTrue(e.getMessage().contains("kvHeadMask = 0x0"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> plan.add(5, 0x10L));
        assertTrue(e.getMessage().contains("kvHeadMask = 0x10") && e.getMessage().contains("0..3"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> plan.heads(4, 3));
        assertTrue(e.getMessage().contains("headGroups = 3"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> plan.add(100, 1L));
        assertTrue(e.getMessage().contains("position = 100"), e.getMessage());
        FetchPlan many = new FetchPlan();
        many.heads(128, 1);
        many.begin(0, 100, 10);
        e = assertThrows(IllegalArgumentException.class, () -> many.add(5, 1L));
        assertTrue(e.getMessage().contains("128 KV heads") && e.getMessage().contains("ALL_HEADS"), e.getMessage());
        many.add(5, FetchPlan.ALL_HEADS);
        assertEquals(1, many.size());
        e = assertThrows(IllegalArgumentException.class, () -> plan.addRange(90, 101, 1L));
        assertTrue(e.getMessage().contains("[90, 101)") && e.getMessage().contains("[0, 100)"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> plan.addRange(-1, 3, 1L));
        assertTrue(e.getMessage().contains("[-1, 3)"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> plan.addRange(7, 3, 1L));
        assertTrue(e.getMessage().contains("[7, 3)"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> plan.addRange(3, 7, 0x10L));
        assertTrue(e.getMessage().contains("kvHeadMask = 0x10"), e.getMessage());
        assertEquals(0, plan.size(), "a refused range adds nothing");
    }

    @Property(tries = 60)
    void aRangeAddsWhatItsPositionsAddOneByOne(@ForAll @IntRange(min = 0, max = 100) int a,
            @ForAll @IntRange(min = 0, max = 100) int b, @ForAll @IntRange(min = 0, max = 16) int mask) {
        long heads = mask == 0 ? FetchPlan.ALL_HEADS : mask & 0xF;
        if (heads == 0) {
            heads = 1;
        }
        FetchPlan one = new FetchPlan(), range = new FetchPlan();
        for (FetchPlan p : new FetchPlan[] {one, range}) {
            p.heads(4, 4);
            p.begin(0, 100, 10);
            p.add(0);
        }
        int from = Math.min(a, b), to = Math.max(a, b);
        for (int t = from; t < to; t++) {
            one.add(t, heads);
        }
        range.addRange(from, to, heads);
        assertEquals(one.size(), range.size());
        assertEquals(one.perHead(), range.perHead());
        for (int i = 0; i < one.size(); i++) {
            assertEquals(one.position(i), range.position(i));
            assertEquals(one.kvHeadMask(i), range.kvHeadMask(i));
        }
    }
}
