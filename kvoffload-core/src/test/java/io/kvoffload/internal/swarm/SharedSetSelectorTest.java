package io.kvoffload.internal.swarm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.swarm.BlockMassIndex.Combination;
import io.kvoffload.internal.swarm.BlockMassIndex.Scoring;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.strategy.FetchPlan;
import java.util.Arrays;
import java.util.BitSet;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.FloatRange;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/**
 * {@link SharedSetSelector}'s peaks: with a peak weight {@code w} a block is ranked by its estimated
 * shares summed over the KV heads plus {@code w} times the largest single KV head's. Each KV head's
 * share is checked against an index over that head's keys alone (one row a KV head, so the two
 * indexes estimate the head's shares alike), not against the selector's own sums.
 */
class SharedSetSelectorTest {
    static final int TOKENS = 2048, BLOCK = 16, SINKS = 4, WINDOW = 64, D = 32;

    @Property(tries = 20)
    void peaksRankByTheSummedSharesPlusTheLargestHeadsShare(@ForAll @IntRange(min = 1, max = 6) int kvHeads,
            @ForAll @FloatRange(min = 0f, max = 4f) float weight, @ForAll @IntRange(min = 1, max = 40) int blocks,
            @ForAll @IntRange(min = 0, max = 1 << 20) int seed) {
        DenseLayerKv kv = BlockMassStrategyTest.keys(TOKENS, kvHeads, D, seed);
        float[] query = BlockMassStrategyTest.query(kvHeads, D, seed + 1L);
        BlockMassIndex index = new BlockMassIndex(kv, TOKENS, kvHeads, BLOCK, Scoring.MIX, Combination.HEAD_MASS);
        SharedSetSelector selector = new SharedSetSelector(index, SINKS, WINDOW, null, weight);
        FetchPlan plan = new FetchPlan();
        plan.begin(0, TOKENS, blocks * BLOCK);
        selector.select(query, plan);

        // Each KV head's shares from an index over its keys alone, summed and maximised per block.
        float[] expected = new float[index.blocks()];
        float[] peak = new float[index.blocks()];
        for (int h = 0; h < kvHeads; h++) {
            BlockMassIndex own = new BlockMassIndex(headOnly(kv, h), TOKENS, 1, BLOCK, Scoring.MIX, Combination.HEAD_MASS);
            float[] share = new float[own.blocks()];
            own.score(Arrays.copyOfRange(query, h * D, (h + 1) * D), share);
            for (int b = 0; b < share.length; b++) {
                expected[b] += share[b];
                peak[b] = Math.max(peak[b], share[b]);
            }
        }
        BitSet chosen = new BitSet();
        for (int i = 0; i < plan.size(); i++) {
            chosen.set(plan.position(i) / BLOCK);
        }
        assertEquals(blocks, chosen.cardinality(), "blocks chosen");
        // Blocks wholly in the sinks or the window are never candidates.
        int lo = SINKS / BLOCK, hi = (TOKENS - WINDOW + BLOCK - 1) / BLOCK;
        float worstChosen = Float.POSITIVE_INFINITY, bestLeft = Float.NEGATIVE_INFINITY;
        for (int b = lo; b < hi; b++) {
            float s = expected[b] + weight * peak[b];
            if (chosen.get(b)) {
                worstChosen = Math.min(worstChosen, s);
            } else {
                bestLeft = Math.max(bestLeft, s);
            }
        }
        assertTrue(chosen.nextSetBit(0) >= lo && chosen.length() <= hi, "a chosen block outside the candidates: " + chosen);
        // The same ranking up to float rounding between the two ways of summing.
        assertTrue(worstChosen >= bestLeft - 1e-5f * Math.max(1f, Math.abs(bestLeft)),
                "chosen down to " + worstChosen + " while a block of " + bestLeft + " was left (w = " + weight + ")");
    }

    @Test
    void aBlockOneHeadConcentratesOnOutranksDiffuseMassWithPeaks() {
        // Two KV heads of one query head each. Block 40 holds a key that head 0's query finds (a passkey);
        // block 80 holds keys both heads find a little. Summed, block 80 draws more; with peaks, block 40.
        int kvHeads = 2;
        float[][] keys = new float[kvHeads][TOKENS * D];
        float[][] values = new float[kvHeads][TOKENS * D];
        java.util.SplittableRandom r = new java.util.SplittableRandom(5);
        for (int h = 0; h < kvHeads; h++) {
            for (int i = 0; i < keys[h].length; i++) {
                keys[h][i] = (float) r.nextGaussian() * 0.05f;
            }
        }
        keys[0][(40 * BLOCK + 3) * D] = 1.8f;          // head 0's passkey: one token along its query
        for (int t = 80 * BLOCK; t < 81 * BLOCK; t++) { // both heads' mild block
            keys[0][t * D] = 0.8f;
            keys[1][t * D + 1] = 0.8f;
        }
        DenseLayerKv kv = new DenseLayerKv(TOKENS, D, keys, values);
        float[] query = new float[kvHeads * D];
        query[0] = 24f;     // head 0 looks along dimension 0
        query[D + 1] = 24f; // head 1 along dimension 1
        BlockMassIndex index = new BlockMassIndex(kv, TOKENS, kvHeads, BLOCK, Scoring.MIX, Combination.HEAD_MASS);
        float[] summed = new float[index.blocks()];
        index.score(query, summed);
        // Estimated shares (head 0, head 1): block 40 about (0.24, 0.01), block 80 about (0.12, 0.16).
        assertTrue(summed[80] > summed[40], "the scenario: summed, block 80 (" + summed[80] + ") draws more than 40 ("
                + summed[40] + ")");
        assertEquals(80, firstChosen(new SharedSetSelector(index, SINKS, WINDOW, null, 0f), query));
        assertEquals(40, firstChosen(new SharedSetSelector(index, SINKS, WINDOW, null, BlockMassStrategy.PEAK_WEIGHT), query));
    }

    @Test
    void badPeakWeightsNameThemselves() {
        DenseLayerKv kv = BlockMassStrategyTest.keys(256, 2, D, 3);
        BlockMassIndex mass = new BlockMassIndex(kv, 256, 2, BLOCK, Scoring.MIX, Combination.HEAD_MASS);
        BlockMassIndex logits = new BlockMassIndex(kv, 256, 2, BLOCK, Scoring.MIX, Combination.SUM_LOGITS);
        for (float w : new float[] {-1f, Float.NaN, Float.POSITIVE_INFINITY}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new SharedSetSelector(mass, SINKS, WINDOW, null, w));
            assertTrue(e.getMessage().contains("peakWeight = " + w), e.getMessage());
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new SharedSetSelector(logits, SINKS, WINDOW, null, 1f));
        assertTrue(e.getMessage().contains("SUM_LOGITS"), e.getMessage());
        new SharedSetSelector(logits, SINKS, WINDOW, null, 0f); // summed logits rank without peaks
    }

    private static int firstChosen(SharedSetSelector selector, float[] query) {
        FetchPlan plan = new FetchPlan();
        plan.begin(0, TOKENS, BLOCK); // room for one block
        selector.select(query, plan);
        assertEquals(BLOCK, plan.size(), "one block chosen");
        return plan.position(0) / BLOCK;
    }

    /** KV head {@code h} of {@code kv} as a layer of one head. */
    private static DenseLayerKv headOnly(DenseLayerKv kv, int h) {
        float[] k = new float[TOKENS * D];
        float[] v = new float[TOKENS * D];
        kv.keys(h, 0, TOKENS, k, 0);
        kv.values(h, 0, TOKENS, v, 0);
        return new DenseLayerKv(TOKENS, D, new float[][] {k}, new float[][] {v});
    }
}
