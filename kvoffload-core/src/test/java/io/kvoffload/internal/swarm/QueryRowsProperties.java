package io.kvoffload.internal.swarm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.swarm.BlockMassIndex.Combination;
import java.util.SplittableRandom;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;

/**
 * {@link QueryRows}' clustered rows: the Lance–Williams update of Ward's merge costs merges the same
 * query heads as recomputing every pair's distance from the clusters' means after each merge, and a
 * group keeps half its heads as rows, at least two and at most {@link QueryRows#MAX_CLUSTER_ROWS}.
 */
class QueryRowsProperties {

    @Property(tries = 300)
    void lanceWilliamsMergesWhatRecomputedWardDistancesMerge(@ForAll @IntRange(min = 1, max = 3) int kvHeads,
            @ForAll @IntRange(min = 2, max = 40) int groupSize, @ForAll @IntRange(min = 1, max = 24) int headDim,
            @ForAll long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        int queryHeads = kvHeads * groupSize;
        float[] query = new float[queryHeads * headDim];
        for (int q = 0; q < queryHeads; q++) {
            if (q > 0 && r.nextInt(4) == 0) { // a copy of an earlier head: merges at cost 0, ties among them
                System.arraycopy(query, r.nextInt(q) * headDim, query, q * headDim, headDim);
                continue;
            }
            double spread = r.nextInt(3) == 0 ? 4 : 1; // some heads sharper (larger queries) than others
            for (int j = 0; j < headDim; j++) {
                query[q * headDim + j] = (float) (r.nextGaussian() * spread);
            }
        }
        int perHead = QueryRows.clusterRows(groupSize); // half the group, whatever the sweep would afford: merges to check
        QueryRows rows = new QueryRows(Combination.CLUSTERED_HEAD_MASS, queryHeads, kvHeads, headDim, perHead);
        rows.build(query);
        assertEquals(kvHeads * perHead, rows.count());
        float scale = (float) (1.0 / Math.sqrt(headDim));
        for (int h = 0; h < kvHeads; h++) {
            float[] sum = java.util.Arrays.copyOfRange(query, h * groupSize * headDim, (h + 1) * groupSize * headDim);
            int[] size = recomputedWard(sum, groupSize, headDim, perHead);
            int row = h * perHead; // the clusters in index order are the KV head's rows
            for (int c = 0; c < groupSize; c++) {
                if (size[c] == 0) {
                    continue;
                }
                assertEquals((float) size[c] / groupSize, rows.weight(row), 0f, "weight of row " + row);
                for (int j = 0; j < headDim; j++) {
                    assertEquals(sum[c * headDim + j] * (scale / size[c]), rows.rows()[row * headDim + j], 1e-6f,
                            "row " + row + ", dimension " + j + " of groups of " + groupSize + " × " + headDim);
                }
                row++;
            }
        }
    }

    @Example
    void aGroupKeepsHalfItsHeadsAsRowsBetweenTwoAndEight() {
        assertEquals(1, QueryRows.clusterRows(1));
        assertEquals(2, QueryRows.clusterRows(2));
        assertEquals(2, QueryRows.clusterRows(4));
        assertEquals(4, QueryRows.clusterRows(7));
        assertEquals(8, QueryRows.clusterRows(16));
        for (int g = 2; g <= 128; g++) {
            int rows = QueryRows.clusterRows(g);
            assertTrue(rows >= 2 && rows <= QueryRows.MAX_CLUSTER_ROWS && rows <= g, g + " heads: " + rows + " rows");
        }
        assertEquals(QueryRows.MAX_CLUSTER_ROWS, new QueryRows(Combination.CLUSTERED_HEAD_MASS, 71, 1, 64).count(),
                "71 query heads on one KV head (multi-query attention)");
    }

    @Example
    void aNarrowShapeSpendsTheReferenceSweepOnMoreRows() {
        assertEquals(2, QueryRows.clusterRows(4, 8, 128), "Llama-3-8B: the reference, half the group");
        assertEquals(6, QueryRows.clusterRows(6, 2, 64), "12 on 2 × 64: every query head its row");
        assertEquals(3, QueryRows.clusterRows(4, 8, 64), "32 on 8 × 64: 2560 / (8 × 96) rows");
        assertEquals(5, QueryRows.clusterRows(7, 4, 96), "28 on 4 × 96: 2560 / (4 × 128) rows");
        assertEquals(4, QueryRows.clusterRows(8, 8, 128), "Llama-3-70B keeps half its group");
        assertEquals(QueryRows.MAX_CLUSTER_ROWS, QueryRows.clusterRows(71, 1, 64), "multi-query: at most eight");
        assertEquals(1, QueryRows.clusterRows(1, 32, 128), "MHA");
        assertEquals(12, new QueryRows(Combination.CLUSTERED_HEAD_MASS, 12, 2, 64).count());
    }

    @Property(tries = 200)
    void rowsStayWithinTheGroupAndTheCap(@ForAll @IntRange(min = 1, max = 64) int groupSize,
            @ForAll @IntRange(min = 1, max = 64) int kvHeads, @ForAll("dims") int headDim) {
        int rows = QueryRows.clusterRows(groupSize, kvHeads, headDim);
        assertTrue(rows >= QueryRows.clusterRows(groupSize) && rows <= Math.min(groupSize, QueryRows.MAX_CLUSTER_ROWS),
                groupSize + " heads on " + kvHeads + " × " + headDim + ": " + rows + " rows");
        assertTrue(rows == QueryRows.clusterRows(groupSize)
                || QueryRows.sweepCost(kvHeads, rows, headDim) <= QueryRows.REFERENCE_SWEEP, "more rows than the sweep affords");
    }

    /**
     * Ward's agglomeration as first written: after each merge every live pair's cost {@code n_a n_b /
     * (n_a + n_b) × ‖μ_a − μ_b‖²} is recomputed from the clusters' means; ties to the lowest pair. Merges
     * the group's query vectors in {@code sum} in place (a merged cluster keeps the lower index) and
     * returns each index's cluster size (0 once merged away).
     */
    static int[] recomputedWard(float[] sum, int g, int d, int perHead) {
        int[] size = new int[g];
        java.util.Arrays.fill(size, 1);
        for (int live = g; live > perHead; live--) {
            int bestA = -1, bestB = -1;
            double best = Double.POSITIVE_INFINITY;
            for (int a = 0; a < g; a++) {
                for (int b = a + 1; b < g && size[a] > 0; b++) {
                    if (size[b] == 0) {
                        continue;
                    }
                    double dist = 0;
                    for (int j = 0; j < d; j++) {
                        double diff = (double) sum[a * d + j] / size[a] - (double) sum[b * d + j] / size[b];
                        dist += diff * diff;
                    }
                    double cost = (double) size[a] * size[b] / (size[a] + size[b]) * dist;
                    if (bestA < 0 || cost < best - 1e-9 * Math.max(1, best)) { // rounding apart, the first lowest pair
                        best = cost;
                        bestA = a;
                        bestB = b;
                    }
                }
            }
            for (int j = 0; j < d; j++) {
                sum[bestA * d + j] += sum[bestB * d + j];
            }
            size[bestA] += size[bestB];
            size[bestB] = 0;
        }
        return size;
    }

    @Provide
    Arbitrary<Integer> dims() {
        return Arbitraries.of(64, 80, 96, 128, 256);
    }
}
