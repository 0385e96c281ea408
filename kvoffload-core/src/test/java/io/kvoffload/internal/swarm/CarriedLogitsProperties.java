package io.kvoffload.internal.swarm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.swarm.BlockMassIndex.Combination;
import io.kvoffload.internal.swarm.BlockMassIndex.Scoring;
import io.kvoffload.strategy.DenseLayerKv;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/**
 * {@link CarriedLogits}: a MIX index that carries its rows' logits from step to step estimates every
 * step within the prune bound of the unpruned estimate, as a fresh step does, and never sweeps more
 * terms than a fresh step would.
 */
class CarriedLogitsProperties {
    private static final Combination[] MASSES = {Combination.HEAD_MASS, Combination.QUERY_HEAD_MASS,
            Combination.CLUSTERED_HEAD_MASS};

    /** Queries that drift ({@code drift} of a fresh Gaussian a step), jump (every fifth step when {@code jumps}) or repeat. */
    static float[][] decode(int steps, int heads, int d, double drift, boolean jumps, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        float[][] q = new float[steps][heads * d];
        for (int s = 0; s < steps; s++) {
            boolean jump = s == 0 || jumps && s % 5 == 0;
            for (int i = 0; i < q[s].length; i++) {
                double g = r.nextGaussian() * 2;
                q[s][i] = (float) (jump ? g : q[s - 1][i] + drift * g);
            }
        }
        return q;
    }

    @Property(tries = 80)
    void everyStepIsWithinTheBoundOfTheUnprunedEstimate(@ForAll @IntRange(min = 2, max = 600) int tokens,
            @ForAll @IntRange(min = 1, max = 3) int kvHeads, @ForAll @IntRange(min = 1, max = 4) int group,
            @ForAll @IntRange(min = 0, max = 4) int blockLog, @ForAll @IntRange(min = 0, max = 2) int combination,
            @ForAll @IntRange(min = 0, max = 40) int tenthsOfNats, @ForAll @IntRange(min = 0, max = 20) int driftPercent,
            @ForAll boolean jumps, @ForAll long seed) {
        int d = 16, qh = kvHeads * group, bt = 1 << blockLog;
        float bound = tenthsOfNats / 10f;
        DenseLayerKv kv = BlockMassStrategyTest.keys(tokens, kvHeads, d, seed);
        Combination c = MASSES[combination];
        BlockMassIndex carried = new BlockMassIndex(kv, tokens, qh, bt, Scoring.MIX, c, bound, true);
        float[][] queries = decode(12, qh, d, driftPercent / 100.0, jumps, seed + 1);
        float[] scores = new float[carried.blocks()];
        for (float[] q : queries) {
            carried.score(q, scores);
            // A new index's first step sweeps every term fresh: with no bound, the int8 estimate itself.
            BlockMassIndex exact = new BlockMassIndex(kv, tokens, qh, bt, Scoring.MIX, c, 0f, true);
            exact.score(q, new float[exact.blocks()]);
            assertEquals(exact.queryRowCount(), carried.queryRowCount());
            int rows = exact.queryRowCount(), blocks = exact.blocks();
            float[] e = new float[rows * blocks], p = new float[rows * blocks];
            exact.headShares(e);
            carried.headShares(p);
            for (int r = 0; r < rows; r++) {
                double lo = Double.POSITIVE_INFINITY, hi = Double.NEGATIVE_INFINITY; // log(p / e) over the blocks
                for (int b = r * blocks; b < (r + 1) * blocks; b++) {
                    if (e[b] > 1e-30f && p[b] > 1e-30f) {
                        double x = Math.log(p[b]) - Math.log(e[b]);
                        lo = Math.min(lo, x);
                        hi = Math.max(hi, x);
                    }
                }
                assertTrue(hi - lo <= bound + 2e-3 * (1 + bound), "row " + r + ": blocks moved against each other by "
                        + (hi - lo) + " nats > " + bound);
            }
        }
    }

    @Property(tries = 60)
    void noStepSweepsMoreTermsThanAFreshOne(@ForAll @IntRange(min = 16, max = 600) int tokens,
            @ForAll @IntRange(min = 1, max = 3) int kvHeads, @ForAll @IntRange(min = 1, max = 4) int group,
            @ForAll @IntRange(min = 0, max = 2) int combination, @ForAll @IntRange(min = 0, max = 60) int tenthsOfNats,
            @ForAll @IntRange(min = 0, max = 100) int driftPercent, @ForAll boolean jumps, @ForAll long seed) {
        int d = 16, qh = kvHeads * group, bt = 4;
        float bound = tenthsOfNats / 10f;
        DenseLayerKv kv = BlockMassStrategyTest.keys(tokens, kvHeads, d, seed);
        Combination c = MASSES[combination];
        BlockMassIndex carried = new BlockMassIndex(kv, tokens, qh, bt, Scoring.MIX, c, bound, true);
        float[] scores = new float[carried.blocks()];
        long before = 0;
        for (float[] q : decode(10, qh, d, driftPercent / 100.0, jumps, seed + 1)) {
            carried.score(q, scores);
            BlockMassIndex fresh = new BlockMassIndex(kv, tokens, qh, bt, Scoring.MIX, c, bound, true);
            fresh.score(q, scores);
            long step = carried.sweptTerms() - before;
            before = carried.sweptTerms();
            assertTrue(step <= fresh.sweptTerms(), "swept " + step + " terms, a fresh step " + fresh.sweptTerms());
        }
    }

    @Test
    void aRepeatedQuerySweepsNothingAndScoresTheSame() {
        DenseLayerKv kv = BlockMassStrategyTest.keys(4096, 2, 32, 11);
        BlockMassIndex index = new BlockMassIndex(kv, 4096, 8, 16, Scoring.MIX, Combination.CLUSTERED_HEAD_MASS,
                BlockMassStrategy.AUTO_PRUNE_LOGIT, true);
        float[] q = BlockMassStrategyTest.query(8, 32, 12);
        float[] first = new float[index.blocks()], second = new float[index.blocks()];
        index.score(q, first);
        long swept = index.sweptTerms();
        assertTrue(swept > 0);
        index.score(q, second);
        assertEquals(swept, index.sweptTerms(), "the same query again changes no coefficient");
        assertArrayEquals(first, second);
    }

    @Test
    void carriedLogitsTooLargeForOneArrayAreNamed() {
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> new CarriedLogits(64, 8, 128, 1 << 23));
        assertTrue(e.getMessage().contains("4294967296") && e.getMessage().contains("allowed"), e.getMessage());
    }

    @Test
    void everyRowStartsFreshAfterTheRefreshSteps() {
        DenseLayerKv kv = BlockMassStrategyTest.keys(1024, 2, 16, 31);
        BlockMassIndex index = new BlockMassIndex(kv, 1024, 4, 8, Scoring.MIX, Combination.HEAD_MASS, 2f, true);
        float[] q = BlockMassStrategyTest.query(4, 16, 32), scores = new float[index.blocks()];
        index.score(q, scores);
        long fresh = index.sweptTerms();
        for (int s = 1; s < CarriedLogits.REFRESH_STEPS; s++) {
            index.score(q, scores);
        }
        assertEquals(fresh, index.sweptTerms(), "a repeated query is carried");
        index.score(q, scores);
        assertEquals(2 * fresh, index.sweptTerms(), "then swept fresh again");
    }

    @Test
    void aSlowlyDriftingDecodeSweepsFewerTermsThanFreshSteps() {
        DenseLayerKv kv = BlockMassStrategyTest.keys(8192, 2, 32, 21);
        BlockMassIndex carried = new BlockMassIndex(kv, 8192, 8, 16, Scoring.MIX, Combination.CLUSTERED_HEAD_MASS,
                BlockMassStrategy.AUTO_PRUNE_LOGIT, true);
        float[] scores = new float[carried.blocks()];
        long fresh = 0;
        for (float[] q : decode(16, 8, 32, 0.05, false, 22)) {
            carried.score(q, scores);
            BlockMassIndex f = new BlockMassIndex(kv, 8192, 8, 16, Scoring.MIX, Combination.CLUSTERED_HEAD_MASS,
                    BlockMassStrategy.AUTO_PRUNE_LOGIT, true);
            f.score(q, scores);
            fresh += f.sweptTerms();
        }
        assertTrue(carried.sweptTerms() < 0.6 * fresh, "carried " + carried.sweptTerms() + " terms, fresh " + fresh);
    }
}
