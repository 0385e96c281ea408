package io.kvoffload.internal.swarm;

import io.kvoffload.testing.Allocations;

import static io.kvoffload.internal.swarm.ProfileTest.assertMessage;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.SplittableRandom;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/** {@link ClusterSelection} against a full sort-then-take reference, its errors and its allocations. */
class ClusterSelectionProperties {
    /** Reused across tries, starting small, so the growth path is exercised too. */
    private final ClusterSelection shared = new ClusterSelection(4);

    /** Sort every cluster (score descending by Float.compare, then id), take until the sizes reach the budget. */
    static int[] reference(float[] scores, int[] sizes, int clusters, int budget) {
        Integer[] ids = new Integer[clusters];
        for (int c = 0; c < clusters; c++) {
            ids[c] = c;
        }
        Arrays.sort(ids, (a, b) -> {
            int byScore = Float.compare(scores[b], scores[a]);
            return byScore != 0 ? byScore : Integer.compare(a, b);
        });
        int n = 0;
        long sum = 0;
        while (n < clusters && sum < budget) {
            sum += sizes[ids[n++]];
        }
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = ids[i];
        }
        return out;
    }

    /**
     * The walk (begin/next) yields every cluster exactly once in the full order, whatever the caller
     * first said it misses: asking for more tokens only widens the ranked prefix.
     */
    @Property(tries = 300)
    void walkYieldsTheFullOrderOnce(@ForAll @IntRange(min = 0, max = 2000) int clusters, @ForAll long seed,
            @ForAll @IntRange(min = 0, max = 5000) int missing) {
        SplittableRandom r = new SplittableRandom(seed);
        float[] scores = new float[clusters];
        int[] sizes = new int[clusters];
        long total = 0;
        for (int c = 0; c < clusters; c++) {
            scores[c] = r.nextInt(8) == 0 ? 0.5f : (float) r.nextGaussian(); // some ties
            sizes[c] = r.nextInt(1, 40);
            total += sizes[c];
        }
        int[] expected = reference(scores, sizes, clusters, (int) Math.min(Integer.MAX_VALUE, total + 1));
        shared.begin(scores, sizes, clusters, missing);
        int[] walked = new int[clusters];
        int n = 0;
        for (int c = shared.next(); c >= 0; c = shared.next()) {
            walked[n++] = c;
        }
        assertEquals(clusters, n, "every cluster once");
        assertArrayEquals(expected, walked);
        assertEquals(-1, shared.next(), "the walk stays finished");
    }

    @Property(tries = 1000)
    void equalsFullSortThenTake(@ForAll @IntRange(min = 0, max = 3000) int clusters, @ForAll long seed,
            @ForAll @IntRange(min = 0, max = 3) int scoreKind, @ForAll @IntRange(min = 0, max = 2) int sizeKind,
            @ForAll @IntRange(min = 0, max = 1000) int budgetPermille) {
        SplittableRandom r = new SplittableRandom(seed);
        float[] scores = new float[clusters + r.nextInt(3)]; // longer arrays than `clusters` are allowed
        int[] sizes = new int[scores.length];
        float[] few = {Float.NEGATIVE_INFINITY, -1f, -0f, 0f, 0.5f, 1f, Float.POSITIVE_INFINITY};
        long total = 0;
        for (int c = 0; c < scores.length; c++) {
            scores[c] = switch (scoreKind) {
                case 0 -> (float) r.nextGaussian();
                case 1 -> few[r.nextInt(few.length)];              // many ties, signed zeros, infinities
                case 2 -> (float) (clusters - c);                  // already sorted (adversarial for sorts)
                default -> r.nextInt(4);                           // few distinct values
            };
            sizes[c] = switch (sizeKind) {
                case 0 -> 16;
                case 1 -> r.nextInt(41);                           // zeros included
                default -> r.nextInt(10) == 0 ? 200 + r.nextInt(100) : 1 + r.nextInt(4); // skewed
            };
            if (c < clusters) {
                total += sizes[c];
            }
        }
        int budget = (int) Math.min(Integer.MAX_VALUE, (total + 10) * budgetPermille / 1000);
        int[] out = new int[clusters];
        int n = shared.select(scores, sizes, clusters, budget, out);
        int[] expected = reference(scores, sizes, clusters, budget);
        assertArrayEquals(expected, Arrays.copyOf(out, n), "clusters " + clusters + ", budget " + budget);
        long sum = 0;
        for (int i = 0; i < n; i++) {
            sum += sizes[out[i]];
        }
        assertEquals(sum, shared.selectedTokens());
        if (n > 0) { // never more than needed: without the last cluster the budget was still open
            assertTrue(sum - sizes[out[n - 1]] < budget, "stopped at the first cluster that fills the budget");
        }
        assertTrue(sum >= budget || n == clusters, "the budget is reached unless every cluster is taken");
    }

    @Property(tries = 300)
    void sortOrdersLongsAscending(@ForAll @IntRange(min = 0, max = 5000) int n, @ForAll long seed,
            @ForAll @IntRange(min = 0, max = 2) int kind) {
        SplittableRandom r = new SplittableRandom(seed);
        long[] a = new long[n + 2];
        for (int i = 0; i < a.length; i++) {
            a[i] = switch (kind) {
                case 0 -> r.nextLong();
                case 1 -> i;             // sorted
                default -> -i;           // reversed
            };
        }
        long[] expected = a.clone();
        Arrays.sort(expected, 1, n + 1);
        ClusterSelection.sort(a, 1, n + 1);
        assertArrayEquals(expected, a);
    }

    @Example
    void rejectsBadInputNamingTheArgument() {
        ClusterSelection s = new ClusterSelection(0);
        float[] scores = {1, 2, 3};
        int[] sizes = {1, 1, 1};
        int[] out = new int[3];
        assertMessage(() -> new ClusterSelection(-1), "initialClusters = -1", "0..");
        assertMessage(() -> s.select(scores, sizes, 4, 1, out), "clusters = 4", "0..3");
        assertMessage(() -> s.select(scores, new int[2], 3, 1, out), "clusters = 3", "0..2");
        assertMessage(() -> s.select(scores, sizes, 3, -1, out), "budget = -1", "0..");
        assertMessage(() -> s.select(scores, sizes, 3, 1, new int[2]), "out.length = 2", "at least clusters = 3");
        assertMessage(() -> s.select(scores, new int[] {1, -2, 1}, 3, 1, out), "sizes[1] = -2", "0..");
        assertMessage(() -> s.select(new float[] {0, Float.NaN, 1}, sizes, 3, 1, out), "scores[1] = NaN");
        assertEquals(0, s.select(scores, sizes, 3, 0, out), "a zero budget selects nothing");
        assertEquals(0, s.select(scores, sizes, 0, 5, out), "no clusters, nothing selected");
        assertEquals(3, s.select(scores, sizes, 3, 100, out), "an unreachable budget takes every cluster");
        assertArrayEquals(new int[] {2, 1, 0}, out);
    }

    @Example
    void selectsWithoutAllocatingOnceSized() {
        int clusters = 8192;
        SplittableRandom r = new SplittableRandom(5);
        float[][] scores = new float[4][clusters];
        for (float[] s : scores) {
            for (int c = 0; c < clusters; c++) {
                s[c] = (float) r.nextGaussian();
            }
        }
        int[] sizes = new int[clusters];
        for (int c = 0; c < clusters; c++) {
            sizes[c] = 1 + r.nextInt(31);
        }
        ClusterSelection s = new ClusterSelection(clusters);
        int[] out = new int[clusters];
        int sink = 0;
        for (int i = 0; i < 3000; i++) { // warm-up: compiled code is what the decoder runs
            sink += s.select(scores[i & 3], sizes, clusters, i % 2 == 0 ? 13_107 : 400, out);
        }
        long[] total = {sink};
        long allocated = Allocations.leastOverWindows(() -> {
            for (int i = 0; i < 100; i++) {
                total[0] += s.select(scores[i & 3], sizes, clusters, i % 2 == 0 ? 13_107 : 400, out);
            }
        }, 5);
        assertEquals(0, allocated, "100 selections allocated " + allocated + " bytes (" + total[0] + ")");
        assertEquals(clusters, s.capacity(), "no growth for a size it was built for");
    }
}
