package io.kvoffload.internal.swarm;

import static io.kvoffload.internal.swarm.BlockMassStrategyTest.SINKS;
import static io.kvoffload.internal.swarm.BlockMassStrategyTest.WINDOW;
import static io.kvoffload.internal.swarm.BlockMassStrategyTest.keys;
import static io.kvoffload.internal.swarm.BlockMassStrategyTest.query;
import static io.kvoffload.internal.swarm.BlockMassStrategyTest.step;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.internal.swarm.BlockMassIndex.Combination;
import io.kvoffload.internal.swarm.BlockMassIndex.Scoring;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.strategy.FetchPlan;
import io.kvoffload.strategy.LayerContext;
import io.kvoffload.strategy.LayerKv;
import io.kvoffload.strategy.LayerSelector;
import io.kvoffload.strategy.LayoutUnits;
import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.strategy.Strategies;
import io.kvoffload.strategy.StoredUnits;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/**
 * {@code swarm-mass} and {@code swarm-qmass}: {@link BlockMassStrategy} ranking a layout's own units
 * (Swarm's co-activation clusters, with replicas, and positional blocks) instead of fixed blocks.
 */
class LayoutUnitMassTest {
    /** Units given as arrays of positions; the first {@code coActivation} of them co-activation clusters. */
    record Units(int[][] members, int coActivation) implements LayoutUnits {
        @Override public int count() { return members.length; }
        @Override public int size(int unit) { return members[unit].length; }
        @Override public int member(int unit, int i) { return members[unit][i]; }
        @Override public int coActivationUnits() { return coActivation; }
    }

    record Context(KvShape shape, LayerKv keys, int laidOutTokens, LayoutUnits layoutUnits) implements LayerContext {
        @Override public int layer() { return 0; }
        @Override public int tokens() { return keys.tokens(); }
        @Override public int sinkTokens() { return SINKS; }
        @Override public int localWindow() { return WINDOW; }
        @Override public StoredUnits units() { return null; }
    }

    /** {@code clusters} clusters of 2..24 random positions (replicas allowed), then 16-token blocks covering every token. */
    static Units clustered(int tokens, int clusters, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        List<int[]> units = new ArrayList<>();
        for (int c = 0; c < clusters; c++) {
            int[] m = r.ints(0, tokens).distinct().limit(Math.min(tokens, 2 + r.nextInt(23))).toArray();
            units.add(m);
        }
        for (int from = 0; from < tokens; from += 16) {
            int[] m = new int[Math.min(16, tokens - from)];
            for (int i = 0; i < m.length; i++) {
                m[i] = from + i;
            }
            units.add(m);
        }
        return new Units(units.toArray(int[][]::new), clusters);
    }

    static KvShape shape(int queryHeads, int kvHeads, int d) {
        return new KvShape(1, queryHeads, kvHeads, d, DType.F32);
    }

    @Property(tries = 60)
    void wholeUnitsWithinTheBudgetAndNeverTheSinksOrTheWindow(@ForAll @IntRange(min = 40, max = 600) int tokens,
            @ForAll @IntRange(min = 1, max = 30) int clusters, @ForAll @IntRange(min = 0, max = 1000) int permille,
            @ForAll boolean perQueryHead, @ForAll long seed) {
        DenseLayerKv kv = keys(tokens, 2, 16, seed);
        Units units = clustered(tokens, clusters, seed ^ 5);
        SelectionStrategy s = Strategies.named(perQueryHead ? "swarm-qmass" : "swarm-mass");
        LayerSelector sel = s.openLayer(new Context(shape(4, 2, 16), kv, tokens, units));
        int budget = permille * tokens / 1000;
        FetchPlan plan = new FetchPlan();
        plan.begin(0, tokens, budget);
        sel.select(query(4, 16, seed ^ 9), plan);
        int freeFrom = Math.max(0, tokens - WINDOW);
        BitSet got = new BitSet();
        for (int i = 0; i < plan.size(); i++) {
            int t = plan.position(i);
            assertTrue(t >= SINKS && t < freeFrom, "position " + t + " is a sink or in the window");
            assertTrue(!got.get(t), "position " + t + " added twice");
            got.set(t);
        }
        assertTrue(got.cardinality() <= budget, got.cardinality() + " rows > budget " + budget);
        // The rows are a union of whole units (their tokens beyond the sinks and the window).
        BitSet covered = new BitSet();
        for (int[] m : units.members()) {
            BitSet fresh = new BitSet();
            for (int t : m) {
                if (t >= SINKS && t < freeFrom) {
                    fresh.set(t);
                }
            }
            BitSet missing = (BitSet) fresh.clone();
            missing.andNot(got);
            if (missing.isEmpty()) {
                covered.or(fresh);
            }
        }
        assertEquals(got, covered, "every row belongs to a unit taken whole");
        if (budget >= freeFrom - Math.min(SINKS, tokens)) {
            assertEquals(Math.max(0, freeFrom - SINKS), got.cardinality(), "a budget that covers them all takes every token");
        }
    }

    @Test
    void positionalUnitsScoreAsPositionalBlocks() {
        DenseLayerKv kv = keys(500, 2, 16, 3);
        Units pages = clustered(500, 0, 1);
        for (Combination c : new Combination[] {Combination.HEAD_MASS, Combination.QUERY_HEAD_MASS}) {
            BlockMassIndex blocks = new BlockMassIndex(kv, 500, 4, 16, Scoring.MIX, c, 4f);
            BlockMassIndex units = new BlockMassIndex(kv, 500, 4, pages, Scoring.MIX, c, 4f);
            assertEquals(blocks.blocks(), units.blocks());
            float[] a = new float[blocks.blocks()], b = new float[units.blocks()];
            float[] q = query(4, 16, 8);
            blocks.score(q, a);
            units.score(q, b);
            assertArrayEquals(a, b, c.toString());
        }
    }

    @Test
    void withoutCoActivationClustersItIsMassMix() {
        int tokens = 700;
        DenseLayerKv kv = keys(tokens, 2, 16, 4);
        KvShape shape = shape(4, 2, 16);
        LayerSelector units = Strategies.named("swarm-mass").openLayer(new Context(shape, kv, tokens, clustered(tokens, 0, 2)));
        LayerSelector blocks = Strategies.named("mass-mix").openLayer(new Context(shape, kv, tokens, null));
        for (int i = 0; i < 4; i++) {
            float[] q = query(4, 16, 20 + i);
            assertArrayEquals(step(blocks, tokens, q, 200), step(units, tokens, q, 200));
        }
    }

    @Test
    void deterministicAndAllocationFreeAfterWarmUp() {
        int tokens = 4096;
        DenseLayerKv kv = keys(tokens, 2, 64, 9);
        Units units = clustered(tokens, 40, 9);
        KvShape shape = shape(8, 2, 64);
        LayerSelector one = Strategies.named("swarm-mass").openLayer(new Context(shape, kv, tokens, units));
        LayerSelector two = Strategies.named("swarm-mass").openLayer(new Context(shape, kv, tokens, units));
        for (int i = 0; i < 5; i++) {
            float[] q = query(8, 64, 100 + i);
            assertArrayEquals(step(one, tokens, q, 400), step(two, tokens, q, 400));
        }
        BlockMassStrategyTest.assertAllocationFreeAfterWarmUp(one, tokens, query(8, 64, 5));
    }

    @Test
    void badUnitsAreNamed() {
        DenseLayerKv kv = keys(64, 2, 8, 1);
        Units outside = new Units(new int[][] {{0, 1, 70}, {2}}, 1);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new BlockMassIndex(kv, 64, 4, outside, Scoring.MIX, Combination.HEAD_MASS, 0f));
        assertTrue(e.getMessage().contains("units.member(0, 2) = 70") && e.getMessage().contains("0..63"), e.getMessage());
        Units empty = new Units(new int[][] {{0}, {}}, 1);
        e = assertThrows(IllegalArgumentException.class,
                () -> new BlockMassIndex(kv, 64, 4, empty, Scoring.MIX, Combination.HEAD_MASS, 0f));
        assertTrue(e.getMessage().contains("units.size(1) = 0"), e.getMessage());
        Units fine = clustered(64, 2, 3);
        e = assertThrows(IllegalArgumentException.class,
                () -> new BlockMassIndex(kv, 64, 4, fine, Scoring.REPS, Combination.HEAD_MASS, 0f));
        assertTrue(e.getMessage().contains("scoring = REPS"), e.getMessage());
    }
}
