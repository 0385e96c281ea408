package io.kvoffload.internal.kvswap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.util.TopK;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/** Grouped selection (§3.3): ReduceMax per group, top-M groups, whole groups as positions. */
class GroupPredictorProperties {

    /** A random predictor over a random cache, plus a random query for it. */
    private record Case(GroupPredictor predictor, CompressedKCache cache, float[] query, int m, int budget) {}

    private static Case randomCase(long seed, int tokens, int groupSize, int budget) {
        SplittableRandom rnd = new SplittableRandom(seed);
        int kvHeads = 1 + rnd.nextInt(3), gqa = 1 + rnd.nextInt(3), headDim = 1 + rnd.nextInt(8);
        int rank = 1 + rnd.nextInt(Math.min(6, kvHeads * headDim));
        LowRankAdapter a = KvSwapFixtures.randomAdapter(rnd, kvHeads, headDim, rank);
        CompressedKCache cache = KvSwapFixtures.randomCache(rnd, a, tokens);
        if (rnd.nextInt(4) == 0 && tokens > 0) { // ties: repeat one compressed key across the context
            float[] k = new float[rank];
            cache.get(0, k, 0);
            CompressedKCache tied = new CompressedKCache(a);
            for (int t = 0; t < tokens; t++) {
                tied.appendProjected(k, 0, 1);
            }
            cache = tied;
        }
        GroupPredictor p = new GroupPredictor(cache, kvHeads * gqa, groupSize, rnd.nextInt(2) == 0 ? 0 : tokens);
        float[] q = KvSwapFixtures.gaussian(rnd, kvHeads * gqa * headDim);
        return new Case(p, cache, q, GroupPredictor.groupsFor(budget, groupSize), budget);
    }

    /** The token scores the predictor saw: the cache scored against its low-rank query. */
    private static float[] tokenScores(Case c) {
        float[] s = new float[c.cache().tokens()];
        c.cache().scores(c.predictor().lowRankQuery(), 0, s.length, s, 0);
        return s;
    }

    /**
     * Between the pipeline's sinks and window: groups with tokens in the range, best first, just
     * enough for those tokens to reach the budget (the last brings under G more), none scoring below
     * a candidate left out.
     */
    @Property(tries = 300)
    void betweenTheSinksAndTheWindowTheBudgetIsFilledBestFirst(@ForAll long seed,
            @ForAll @IntRange(min = 1, max = 400) int tokens, @ForAll @IntRange(min = 1, max = 17) int groupSize,
            @ForAll @IntRange(min = 1, max = 200) int budget, @ForAll @IntRange(min = 0, max = 40) int sinks,
            @ForAll @IntRange(min = 0, max = 80) int window) {
        Case c = randomCase(seed, tokens, groupSize, budget);
        GroupPredictor p = c.predictor();
        int from = Math.min(sinks, tokens), to = Math.max(from, tokens - window);
        int[] out = new int[GroupPredictor.groupsFor(budget, groupSize) + 2];
        int n = p.selectGroupsBetween(c.query(), budget, from, to, out);
        boolean[] chosen = new boolean[p.groupCount()];
        int fresh = 0, lastRanked = 0;
        float worstChosen = Float.POSITIVE_INFINITY;
        for (int i = 0; i < n; i++) {
            int g = out[i], first = g * groupSize;
            assertTrue(i == 0 || g > out[i - 1], "ascending and distinct");
            int inRange = Math.min(to, first + groupSize) - Math.max(from, first);
            assertTrue(inRange > 0, "group " + g + " has no token in [" + from + ", " + to + ")");
            fresh += inRange;
            chosen[g] = true;
            if (!(p.groupScore(g) > worstChosen)) { // ties rank the higher id lower
                worstChosen = p.groupScore(g);
                lastRanked = inRange;
            }
        }
        assertTrue(fresh >= Math.min(budget, to - from), "tokens in the range " + fresh + " < budget " + budget);
        assertTrue(n == 0 || fresh - lastRanked < budget, "a group more than the budget needs: " + fresh + " for " + budget);
        for (int g = from / groupSize; g * groupSize < to; g++) {
            if (!chosen[g]) {
                assertTrue(!(p.groupScore(g) > worstChosen), "group " + g + " left out outscores a chosen one");
            }
        }
    }

    @Property(tries = 300)
    void selectsTheTopMGroupsByTheirBestToken(@ForAll long seed, @ForAll @IntRange(min = 0, max = 400) int tokens,
            @ForAll @IntRange(min = 1, max = 17) int groupSize, @ForAll @IntRange(min = 0, max = 200) int budget) {
        Case c = randomCase(seed, tokens, groupSize, budget);
        GroupPredictor p = c.predictor();
        int total = (tokens + groupSize - 1) / groupSize;
        int[] out = new int[Math.max(1, c.m())];
        int n = p.selectGroups(c.query(), c.m(), out);
        assertEquals(Math.min(c.m(), total), n);
        assertEquals(total, p.groupCount());
        float[] tokenScores = tokenScores(c);
        float[] groupScores = new float[total];
        for (int g = 0; g < total; g++) {
            float best = Float.NEGATIVE_INFINITY;
            for (int t = g * groupSize; t < Math.min(tokens, (g + 1) * groupSize); t++) {
                best = Math.max(best, tokenScores[t]);
            }
            assertEquals(best, p.groupScore(g), 0f, "group " + g + " is represented by its best token");
            groupScores[g] = best;
        }
        // No group twice (strictly ascending), every id valid, and the ids are exactly TopK's.
        for (int i = 0; i < n; i++) {
            assertTrue(out[i] >= 0 && out[i] < total);
            assertTrue(i == 0 || out[i] > out[i - 1], "ascending and distinct");
            assertEquals(out[i], p.lastGroup(i));
        }
        int[] expected = TopK.indices(groupScores, n);
        assertArrayEquals(expected, java.util.Arrays.copyOf(out, n));
        // Every selected group scores at least as high as every group left out.
        boolean[] chosen = new boolean[total];
        float worstChosen = Float.POSITIVE_INFINITY;
        for (int i = 0; i < n; i++) {
            chosen[out[i]] = true;
            worstChosen = Math.min(worstChosen, groupScores[out[i]]);
        }
        for (int g = 0; g < total; g++) {
            if (!chosen[g]) {
                assertTrue(groupScores[g] <= worstChosen, "group " + g + " beats a selected group");
            }
        }
        // The best token of the whole context lies in a selected group.
        if (n > 0) {
            int bestToken = TopK.ranked(tokenScores, 1)[0];
            assertTrue(chosen[bestToken / groupSize], "the top token's group is selected");
        }
    }

    @Property(tries = 300)
    void positionsAreExactlyTheSelectedGroupsTokens(@ForAll long seed, @ForAll @IntRange(min = 0, max = 400) int tokens,
            @ForAll @IntRange(min = 1, max = 17) int groupSize, @ForAll @IntRange(min = 0, max = 200) int budget) {
        Case c = randomCase(seed, tokens, groupSize, budget);
        GroupPredictor p = c.predictor();
        int[] out = new int[p.maxSelected(budget)];
        int n = p.select(c.query(), budget, out);
        assertTrue(n <= p.maxSelected(budget));
        List<Integer> expected = new ArrayList<>();
        for (int i = 0; i < p.lastGroupCount(); i++) {
            int g = p.lastGroup(i);
            for (int t = g * groupSize; t < Math.min(tokens, (g + 1) * groupSize); t++) {
                expected.add(t);
            }
        }
        assertEquals(expected.size(), n);
        for (int i = 0; i < n; i++) {
            assertEquals(expected.get(i), out[i], "position " + i);
        }
        // select and selectGroups agree.
        int[] groups = new int[Math.max(1, c.m())];
        int m = p.selectGroups(c.query(), c.m(), groups);
        assertEquals(p.lastGroupCount(), m);
    }
}
