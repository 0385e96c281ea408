package io.kvoffload.internal.swarm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/**
 * {@link SweepTerms#prune}: the dropped terms are the smallest reaches, they reach at most the bound
 * together, no further value's terms could be dropped with them, and each kept term is swept once
 * with its own coefficient and row; {@link SweepTerms#pairUp} and {@link SweepTerms#sweepPair}: two rows
 * swept as a pair get what each gets swept apart, and every term both sweep is converted once for the two.
 */
class SweepTermsProperties {

    @Property(tries = 500)
    void dropsTheSmallestReachesUpToTheBound(@ForAll @IntRange(min = 1, max = 300) int count,
            @ForAll @IntRange(min = 0, max = 40) int boundTenths, @ForAll @IntRange(min = 0, max = 3) int base,
            @ForAll long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        float bound = boundTenths / 10f;
        SweepTerms terms = new SweepTerms(base + count, bound);
        byte[][] rows = new byte[count][];
        float[] reach = new float[count];
        float[] coefs = new float[count];
        for (int t = 0; t < count; t++) {
            rows[t] = new byte[count]; // one-hot: the sweep puts each kept term's coefficient at its index
            rows[t][t] = 1;
            // Ties (a few distinct values), zeros and a spread of magnitudes.
            float spread = switch (rnd.nextInt(4)) {
                case 0 -> 0f;
                case 1 -> 0.25f * rnd.nextInt(4);
                default -> (float) Math.pow(rnd.nextDouble(), 3) * 2;
            };
            float coef = rnd.nextBoolean() ? -1f - t : 1f + t;
            terms.term(base + t, coef, rows[t], 0, spread);
            reach[t] = Math.abs(coef) * spread;
            coefs[t] = coef;
        }
        int kept = terms.prune(base, count);

        float[] acc = new float[count];
        terms.sweep(acc, 0, count, base, kept, 0);
        List<Integer> keptIdx = new ArrayList<>();
        for (int t = 0; t < count; t++) {
            if (acc[t] != 0) {
                assertEquals(coefs[t], acc[t], 0f, "term " + t + " swept with its own coefficient");
                keptIdx.add(t);
            }
        }
        assertEquals(kept, keptIdx.size(), "each kept term swept once, with its own row");
        double dropped = 0, smallestKept = Double.POSITIVE_INFINITY, largestDropped = Double.NEGATIVE_INFINITY;
        for (int t = 0; t < count; t++) {
            if (keptIdx.contains(t)) {
                smallestKept = Math.min(smallestKept, reach[t]);
            } else {
                dropped += reach[t];
                largestDropped = Math.max(largestDropped, reach[t]);
            }
        }
        assertTrue(dropped <= bound * (1 + 1e-5) + 1e-6, "dropped reaches " + dropped + " within " + bound);
        assertTrue(largestDropped < smallestKept, "only the smallest reaches are dropped");
        if (kept > 0 && bound > 0) {
            double withNext = dropped;
            for (int t = 0; t < count; t++) {
                if (reach[t] == smallestKept) {
                    withNext += reach[t];
                }
            }
            assertTrue(withNext > bound * (1 - 1e-5), "the next value's terms would pass the bound: " + withNext);
        }
        if (bound == 0) {
            assertEquals(count, kept, "no bound: every term is swept");
        }
    }

    /** Reaches that sum exactly to the bound are all dropped; the two larger ones are swept with their rows. */
    @Test
    void keptTermsKeepTheirCoefficientAndRow() {
        SweepTerms terms = new SweepTerms(6, 1f);
        byte[][] rows = {{1}, {2}, {3}, {4}, {5}, {6}};
        float[] spreads = {0.1f, 3f, 0.2f, 2f, 0.3f, 0.4f}; // reaches 0.1, 3, 0.2, 2, 0.3, 0.4 with coef 1
        for (int t = 0; t < 6; t++) {
            terms.term(t, 1f, rows[t], 0, spreads[t]);
        }
        // 0.1 + 0.2 + 0.3 + 0.4 = 1.0 ≤ 1: four dropped, the reaches 3 and 2 kept.
        assertEquals(2, terms.prune(0, 6));
        float[] acc = new float[1];
        terms.sweep(acc, 0, 1, 0, 2, 0);
        assertEquals(2f + 4f, acc[0], 0f, "rows 2 and 4 swept");
    }

    /**
     * Two rows' terms over one head's two summary arrays (a side per dimension each, some dimensions
     * pruned, in ascending offsets or shuffled): the pair's shared terms, then each row's own, sum to
     * exactly what each row sweeps apart (small integers: every sum is exact in float), in both
     * accumulator chunks; in ascending order every dimension both keep on one side is shared.
     */
    @Property(tries = 300)
    void aPairSweepsWhatEachRowSweepsApart(@ForAll @IntRange(min = 1, max = 40) int dims,
            @ForAll @IntRange(min = 1, max = 60) int length, @ForAll boolean shuffled, @ForAll long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        byte[] hi = new byte[dims * length], lo = new byte[dims * length];
        for (int i = 0; i < hi.length; i++) {
            hi[i] = (byte) (rnd.nextInt(17) - 8);
            lo[i] = (byte) (rnd.nextInt(17) - 8);
        }
        int from = rnd.nextInt(length), n = 1 + rnd.nextInt(length - from);
        SweepTerms terms = new SweepTerms(4 * dims, 0f);
        float[][] expected = new float[2][n];
        int[] count = new int[2];
        boolean[][] side = new boolean[2][dims];  // true: hi
        boolean[][] kept = new boolean[2][dims];
        for (int r = 0; r < 2; r++) {
            List<Integer> order = new ArrayList<>();
            for (int j = 0; j < dims; j++) {
                order.add(j);
            }
            if (shuffled) {
                java.util.Collections.shuffle(order, new java.util.Random(rnd.nextLong()));
            }
            for (int j : order) {
                kept[r][j] = rnd.nextInt(4) != 0;
                side[r][j] = rnd.nextBoolean();
                if (!kept[r][j]) {
                    continue;
                }
                float coef = rnd.nextInt(11) - 5;
                byte[] row = side[r][j] ? hi : lo;
                count[r] = terms.term(r * 2 * dims + count[r], coef, row, j * length, 1f) - r * 2 * dims;
                for (int i = 0; i < n; i++) {
                    expected[r][i] += coef * row[j * length + from + i];
                }
            }
        }
        int shared = terms.pairUp(0, count[0], 2 * dims, count[1]);
        if (!shuffled) {
            int both = 0;
            for (int j = 0; j < dims; j++) {
                both += kept[0][j] && kept[1][j] && side[0][j] == side[1][j] ? 1 : 0;
            }
            assertEquals(both, shared, "every dimension both rows keep on one side is shared");
        }
        float[] acc = new float[SweepTerms.CHUNK + n];
        terms.sweepPair(acc, n, 0, 2 * dims, shared, from);
        terms.sweep(acc, 0, n, shared, count[0] - shared, from);
        terms.sweep(acc, SweepTerms.CHUNK, n, 2 * dims + shared, count[1] - shared, from);
        for (int i = 0; i < n; i++) {
            assertEquals(expected[0][i], acc[i], 0f, "first row, block " + i);
            assertEquals(expected[1][i], acc[SweepTerms.CHUNK + i], 0f, "second row, block " + i);
        }
    }
}
