package io.kvoffload.internal.kvswap;

import static io.kvoffload.internal.kvswap.KvSwapFixtures.assertMessage;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.attention.ExactAttention;
import io.kvoffload.attention.QualityMetrics;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.internal.util.TopK;
import io.kvoffload.workload.WorkloadSpec;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class GroupPredictorTest {

    /** One KV head of dimension 2, identity adapter: a token's score is q·k. */
    private static GroupPredictor identity(float[] firstCoordinates, int queryHeads, int groupSize) {
        LowRankAdapter a = LowRankAdapter.of(1, 2, 2, new float[] {1, 0, 0, 1});
        CompressedKCache c = new CompressedKCache(a);
        for (float x : firstCoordinates) {
            c.append(new float[] {x, 0}, 0, 1);
        }
        return new GroupPredictor(c, queryHeads, groupSize);
    }

    @Test
    void handComputedGroupsOfTwo() {
        // Token scores 0 5 | 1 1 | 9 0 | 2 3 → group maxima 5, 1, 9, 3.
        GroupPredictor p = identity(new float[] {0, 5, 1, 1, 9, 0, 2, 3}, 2, 2);
        float[] q = {1, 0, 1, 0}; // two query heads on the one KV head: their mean is (1, 0)
        int[] out = new int[8];
        assertEquals(4, p.select(q, 4, out));
        assertArrayEquals(new int[] {0, 1, 4, 5}, Arrays.copyOf(out, 4));
        assertEquals(2, p.lastGroupCount());
        assertEquals(0, p.lastGroup(0));
        assertEquals(2, p.lastGroup(1));
        assertEquals(9f, p.groupScore(2));
        assertEquals(4, p.select(q, 3, out), "a budget of 3 rounds up to 2 groups");
        assertEquals(2, p.select(q, 1, out));
        assertArrayEquals(new int[] {4, 5}, Arrays.copyOf(out, 2));
        assertEquals(0, p.select(q, 0, out));
        assertEquals(8, p.select(q, 1000, out), "a budget beyond the context selects everything");
        assertEquals(4, p.maxSelected(3));
        assertEquals(2, GroupPredictor.groupsFor(3, 2));
        assertEquals("kvswap", p.name());
        assertEquals(8 * 2 * 4 + 4 * 2 * 2, p.indexBytes());
    }

    @Test
    void tiesGoToTheLowerGroupAndThePartialLastGroupIsClipped() {
        GroupPredictor p = identity(new float[] {1, 1, 1, 1, 1, 1, 1}, 1, 4);
        float[] q = {1, 0};
        int[] groups = new int[2];
        assertEquals(1, p.selectGroups(q, 1, groups));
        assertEquals(0, groups[0], "equal scores: the lower group id wins");
        int[] out = new int[8];
        assertEquals(7, p.select(q, 8, out), "group 1 holds tokens 4..6 only");
        assertArrayEquals(new int[] {0, 1, 2, 3, 4, 5, 6}, Arrays.copyOf(out, 7));
        // A NaN token never wins its group.
        GroupPredictor nan = identity(new float[] {Float.NaN, Float.NaN, 0, -1}, 1, 2);
        nan.selectGroups(q, 1, groups);
        assertEquals(Float.NEGATIVE_INFINITY, nan.groupScore(0));
        assertEquals(1, groups[0]);
    }

    @Test
    void groupsStraddlingChunksAreScoredLikeAnyOther() {
        SplittableRandom rnd = new SplittableRandom(8);
        LowRankAdapter a = KvSwapFixtures.randomAdapter(rnd, 1, 4, 3);
        int tokens = 2 * CompressedKCache.CHUNK_TOKENS + 811;
        CompressedKCache c = KvSwapFixtures.randomCache(rnd, a, tokens);
        float[] q = KvSwapFixtures.gaussian(rnd, 8);
        for (int g : new int[] {1, 3, 4, 5, 16, 100}) {
            GroupPredictor p = new GroupPredictor(c, 2, g);
            p.selectGroups(q, 10, null);
            float[] s = new float[tokens];
            c.scores(p.lowRankQuery(), 0, tokens, s, 0);
            for (int grp = 0; grp < p.groupCount(); grp++) {
                float best = Float.NEGATIVE_INFINITY;
                for (int t = grp * g; t < Math.min(tokens, (grp + 1) * g); t++) {
                    best = Math.max(best, s[t]);
                }
                assertEquals(best, p.groupScore(grp), 0f, "G = " + g + ", group " + grp);
            }
        }
    }

    @Test
    void averagesTheGqaGroupAndThenTheKvHeads() {
        // Two KV heads of dimension 1, A = [1, 1]ᵀ: k_lr = k0 + k1, q_lr = (mean(q of head 0) + mean(q of head 1)) / 2.
        LowRankAdapter a = LowRankAdapter.of(2, 1, 1, new float[] {1, 1});
        CompressedKCache c = new CompressedKCache(a);
        c.append(new float[] {2, 3, -1, 0}, 0, 2); // k_lr = 5, −1
        GroupPredictor p = new GroupPredictor(c, 4, 1);
        float[] q = {1, 3, -2, 6}; // means 2 and 2 → q_lr = 2
        p.selectGroups(q, 2, null);
        assertEquals(10f, p.groupScore(0));
        assertEquals(-2f, p.groupScore(1));
    }

    @Test
    void growsWithTheContextAndAllocatesNothingOnceSized() {
        SplittableRandom rnd = new SplittableRandom(5);
        LowRankAdapter a = KvSwapFixtures.randomAdapter(rnd, 2, 16, 16);
        CompressedKCache c = KvSwapFixtures.randomCache(rnd, a, 100);
        GroupPredictor p = new GroupPredictor(c, 4, 4, 0);
        float[] q = KvSwapFixtures.gaussian(rnd, 4 * 16);
        int[] out = new int[p.maxSelected(400)];
        p.select(q, 400, out); // grows from nothing
        c.append(KvSwapFixtures.gaussian(rnd, 20_000 * 32), 0, 20_000);
        assertEquals(400, p.select(q, 400, out));
        for (int i = 0; i < 200; i++) { // warm-up
            p.select(q, 400, out);
        }
        long allocated = KvSwapFixtures.allocatedBy(() -> {
            for (int i = 0; i < 200; i++) {
                p.select(q, 400, out);
            }
        });
        assertEquals(0, allocated, "bytes allocated by 200 select calls");
    }

    @Test
    void findsMostOfTheAttentionOnTheSyntheticWorkload() {
        KvShape shape = new KvShape(1, 8, 2, 64, DType.BF16);
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(shape, 8192).seed(17).build());
        DenseLayerKv kv = DenseLayerKv.materialize(w.layer(0), false);
        LowRankAdapter a = LowRankAdapter.fit(kv, 64, 4096, 3); // r = headDim: σ = 2
        CompressedKCache c = new CompressedKCache(a, DType.BF16, 8192);
        c.appendFrom(kv, 0, 8192);
        GroupPredictor p = new GroupPredictor(c, 8, 4);
        ExactAttention exact = ExactAttention.of(shape);
        int[] out = new int[p.maxSelected(400)];
        double recall = 0, oracle = 0;
        for (int s = 0; s < 8; s++) {
            float[] q = w.query(0, s);
            float[] weights = exact.weights(kv, q);
            int n = p.select(q, 400, out);
            recall += QualityMetrics.attentionMassRecall(weights, Arrays.copyOf(out, n));
            oracle += QualityMetrics.attentionMassRecall(weights, TopK.indices(weights, 400));
        }
        recall /= 8;
        oracle /= 8;
        // 400 of 8 192 tokens (5%) in groups of 4: most of what exact top-400 gets.
        assertTrue(recall > 0.8 * oracle, "recall " + recall + " vs exact top-400 " + oracle);
    }

    @Test
    void rejectsBadArguments() {
        GroupPredictor p = identity(new float[] {1, 2, 3, 4}, 2, 2);
        assertMessage(() -> p.select(new float[3], 2, new int[4]), "query.length = 3", "queryHeads × headDim = 4");
        assertMessage(() -> p.select(new float[] {Float.NaN, 0, 0, 0}, 2, new int[4]), "non-finite", "KV head 0");
        assertMessage(() -> p.select(new float[4], 4, new int[3]), "out.length = 3", "at least 4");
        assertMessage(() -> p.select(new float[4], -1, new int[3]), "budgetTokens = -1", "allowed: 0..");
        assertMessage(() -> p.selectGroups(new float[4], 2, new int[1]), "out.length = 1", "at least 2");
        assertMessage(() -> p.lastGroup(5), "i = 5");
        CompressedKCache c = p.cache();
        assertMessage(() -> new GroupPredictor(c, 2, 0), "groupSize = 0", "allowed: 1..4096");
        LowRankAdapter two = LowRankAdapter.of(2, 1, 1, new float[] {1, 1});
        assertMessage(() -> new GroupPredictor(new CompressedKCache(two), 3, 1), "queryHeads = 3",
                "multiple of kvHeads = 2");
    }
}
