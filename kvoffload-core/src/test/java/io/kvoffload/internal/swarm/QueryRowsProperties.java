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
 * query heads as recomputing every pair's distance from the clusters' means after each merge (every KV
 * head's heads in one pool), each KV head keeps between one row and its group, and a layer keeps half
 * its heads as rows, at least two and at most {@link QueryRows#MAX_CLUSTER_ROWS} a KV head on average.
 */
class QueryRowsProperties {

    @Property(tries = 300)
    void lanceWilliamsMergesWhatRecomputedWardDistancesMerge(@ForAll @IntRange(min = 1, max = 6) int kvHeads,
            @ForAll @IntRange(min = 2, max = 40) int groupSize, @ForAll @IntRange(min = 1, max = 24) int headDim,
            @ForAll long seed) {
        int queryHeads = kvHeads * groupSize;
        float[] query = queries(seed, queryHeads, headDim);
        int count = kvHeads * QueryRows.clusterRows(groupSize); // half of each group, whatever the sweep would afford
        QueryRows rows = new QueryRows(Combination.CLUSTERED_HEAD_MASS, queryHeads, kvHeads, headDim, count);
        rows.build(query);
        assertEquals(count, rows.count());
        float scale = (float) (1.0 / Math.sqrt(headDim));
        float[] sum = query.clone();
        int[] size = recomputedWard(sum, kvHeads, groupSize, headDim, count);
        int row = 0;
        for (int h = 0; h < kvHeads; h++) {
            assertEquals(row, rows.rowStart(h), "KV head " + h + "'s first row");
            for (int c = h * groupSize; c < (h + 1) * groupSize; c++) { // a KV head's clusters in index order are its rows
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
        assertEquals(rows.count(), rows.rowStart(kvHeads));
        for (int h = 0; h < kvHeads; h++) { // pooled: each KV head keeps between one row and its group, weighing 1
            int n = rows.rowStart(h + 1) - rows.rowStart(h);
            assertTrue(n >= 1 && n <= Math.min(groupSize, rows.maxPerHead()), "KV head " + h + ": " + n + " rows");
            double weight = 0;
            for (int w = rows.rowStart(h); w < rows.rowStart(h + 1); w++) {
                weight += rows.weight(w);
            }
            assertEquals(1.0, weight, 1e-6, "KV head " + h + "'s rows weigh its query heads");
        }
    }

    @Example
    void rowsGoToTheKvHeadWhoseQueryHeadsDiffer() {
        // KV head 0: four copies of one query (they attend alike); KV head 1: three queries far apart and a
        // near-copy of one of them. Four rows in all, two a head on average: head 0 needs one, head 1 three.
        int d = 4;
        float[] query = {
                1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0,
                9, 0, 0, 0, 0, 9, 0, 0, 0, 0, 9, 0, 0, 0, 9.1f, 0};
        QueryRows rows = new QueryRows(Combination.CLUSTERED_HEAD_MASS, 8, 2, d, 4);
        rows.build(query);
        assertEquals(4, rows.count());
        assertEquals(0, rows.rowStart(0));
        assertEquals(1, rows.rowStart(1), "KV head 0's alike query heads share one row");
        assertEquals(1f, rows.weight(0), 0f);
        assertEquals(4, rows.rowStart(2), "KV head 1 keeps a row for each query that looks elsewhere");
        assertEquals(0.5f, rows.weight(3), 0f, "the near-copies share a row");
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
        assertEquals(16, QueryRows.layerRows(4, 8, 128), "Llama-3-8B: the reference, half of each group");
        assertEquals(12, QueryRows.layerRows(6, 2, 64), "12 on 2 × 64: every query head its row");
        assertEquals(26, QueryRows.layerRows(4, 8, 64), "32 on 8 × 64: 2560 / 96 rows");
        assertEquals(22, QueryRows.layerRows(4, 8, 80), "32 on 8 × 80: 2560 / 112 rows");
        assertEquals(20, QueryRows.layerRows(7, 4, 96), "28 on 4 × 96: 2560 / 128 rows");
        assertEquals(32, QueryRows.layerRows(8, 8, 128), "Llama-3-70B keeps half of each group");
        assertEquals(32, QueryRows.layerRows(12, 8, 128), "96 on 8 × 128: twice the reference's sweep, not half of each group");
        assertEquals(32, QueryRows.layerRows(16, 8, 128), "Llama-3.1-405B: twice the reference's sweep, not 64 rows");
        assertEquals(QueryRows.MAX_CLUSTER_ROWS, QueryRows.layerRows(71, 1, 64), "multi-query: at most eight");
        assertEquals(32, QueryRows.layerRows(1, 32, 128), "MHA");
        assertEquals(12, new QueryRows(Combination.CLUSTERED_HEAD_MASS, 12, 2, 64).count());
        assertEquals(22, new QueryRows(Combination.CLUSTERED_HEAD_MASS, 32, 8, 80).count());
    }

    @Example
    void aLongNarrowLayerGivesRowsBackToFinerBlocks() {
        Combination c = Combination.CLUSTERED_HEAD_MASS;
        // Llama-3-8B's layer keeps its 16 rows at every length (the reference: nothing to give back).
        assertEquals(16, QueryRows.countFor(c, 32, 8, 128, 8192, BlockSize.sweepBudget(16384)));
        assertEquals(16, QueryRows.countFor(c, 32, 8, 128, 8192, BlockSize.sweepBudget(131072)));
        assertEquals(16, QueryRows.countFor(c, 32, 8, 128, 65536, BlockSize.sweepBudget(1 << 20)));
        // 14 on 2 × 64 (Qwen2.5-0.5B): every head its row on a short layer, and over 16-token blocks at 1M;
        // its 8-token blocks leave room for 13 at 128K (2560 × 8192 / (16,384 × 96)) and at 1M alike.
        assertEquals(14, QueryRows.countFor(c, 14, 2, 64, 4096, BlockSize.sweepBudget(16384)));
        assertEquals(13, QueryRows.countFor(c, 14, 2, 64, 16384, BlockSize.sweepBudget(131072)));
        assertEquals(14, QueryRows.countFor(c, 14, 2, 64, 65536, BlockSize.sweepBudget(1 << 20)));
        assertEquals(13, QueryRows.countFor(c, 14, 2, 64, 131072, BlockSize.sweepBudget(1 << 20)));
        // Never fewer than three quarters of its rows (11 of 14), however many blocks: 12 on 2 × 64 keeps
        // all 12 over 8-token blocks at 128K rather than 6 over 4-token ones.
        assertEquals(11, QueryRows.fewestRows(c, 14, 2, 64));
        assertEquals(11, QueryRows.countFor(c, 14, 2, 64, 1 << 22, BlockSize.sweepBudget(131072)));
        assertEquals(9, QueryRows.fewestRows(c, 12, 2, 64));
        assertEquals(12, QueryRows.countFor(c, 12, 2, 64, 16384, BlockSize.sweepBudget(131072)));
        assertEquals(16, QueryRows.fewestRows(c, 32, 8, 128), "the reference gives nothing up");
        // Other combinations keep their count.
        assertEquals(2, QueryRows.countFor(Combination.HEAD_MASS, 14, 2, 64, 16384, BlockSize.sweepBudget(131072)));
        assertEquals(14, QueryRows.countFor(Combination.QUERY_HEAD_MASS, 14, 2, 64, 1 << 22, 1));
    }

    @Property(tries = 300)
    void rowsForABlockCountStayWithinTheirBoundsAndTheBudget(@ForAll @IntRange(min = 1, max = 64) int groupSize,
            @ForAll @IntRange(min = 1, max = 16) int kvHeads, @ForAll("dims") int headDim,
            @ForAll @IntRange(min = 1, max = 1 << 22) int blocks, @ForAll @IntRange(min = 1, max = 1 << 24) int tokens) {
        long budget = BlockSize.sweepBudget(tokens);
        int rows = QueryRows.countFor(Combination.CLUSTERED_HEAD_MASS, groupSize * kvHeads, kvHeads, headDim, blocks, budget);
        int fewest = QueryRows.fewestRows(Combination.CLUSTERED_HEAD_MASS, groupSize * kvHeads, kvHeads, headDim);
        int most = QueryRows.layerRows(groupSize, kvHeads, headDim);
        assertTrue(rows >= fewest && rows <= most, rows + " rows outside [" + fewest + ", " + most + "]");
        assertTrue(4L * fewest >= 3L * most && fewest >= kvHeads * QueryRows.clusterRows(groupSize) || fewest == most,
                "gives up more than a quarter of " + most + " rows, or half a group: " + fewest);
        assertTrue(rows == fewest || QueryRows.sweepCost(rows, headDim) * blocks <= budget,
                rows + " rows over " + blocks + " blocks sweep more than " + budget);
    }

    @Property(tries = 200)
    void rowsStayWithinTheGroupsAndTheCap(@ForAll @IntRange(min = 1, max = 64) int groupSize,
            @ForAll @IntRange(min = 1, max = 64) int kvHeads, @ForAll("dims") int headDim) {
        int rows = QueryRows.layerRows(groupSize, kvHeads, headDim);
        int half = kvHeads * QueryRows.clusterRows(groupSize);
        long afford = QueryRows.REFERENCE_SWEEP / QueryRows.sweepCost(1, headDim);
        int cap = kvHeads * Math.min(groupSize, QueryRows.MAX_CLUSTER_ROWS);
        String what = groupSize + " heads on " + kvHeads + " × " + headDim + ": " + rows + " rows";
        assertTrue(rows <= cap && rows >= Math.min(cap, Math.max(kvHeads, Math.min(half, 2 * afford))), what);
        assertTrue(rows <= half || QueryRows.sweepCost(rows, headDim) <= QueryRows.REFERENCE_SWEEP,
                "more than half a group where the sweep does not afford it: " + what);
        assertTrue(rows == kvHeads || QueryRows.sweepCost(rows, headDim) <= 2L * QueryRows.REFERENCE_SWEEP,
                "more than twice the reference's sweep: " + what);
    }

    /**
     * Random queries of {@code queryHeads} heads: some heads sharper (larger) than others, and some
     * copies of an earlier head, which merge at cost 0 and tie among themselves.
     */
    static float[] queries(long seed, int queryHeads, int headDim) {
        SplittableRandom r = new SplittableRandom(seed);
        float[] query = new float[queryHeads * headDim];
        for (int q = 0; q < queryHeads; q++) {
            if (q > 0 && r.nextInt(4) == 0) {
                System.arraycopy(query, r.nextInt(q) * headDim, query, q * headDim, headDim);
                continue;
            }
            double spread = r.nextInt(3) == 0 ? 4 : 1;
            for (int j = 0; j < headDim; j++) {
                query[q * headDim + j] = (float) (r.nextGaussian() * spread);
            }
        }
        return query;
    }

    /**
     * Ward's agglomeration as first written, every KV head's query heads in one pool: after each merge
     * every live pair's cost {@code n_a n_b / (n_a + n_b) × ‖μ_a − μ_b‖²} (both of one KV head) is
     * recomputed from the clusters' means; ties to the lowest (KV head, a, b). Merges the query vectors
     * in {@code sum} (KV head h's group at {@code [h × g, (h + 1) × g)}) in place until {@code rows}
     * clusters are left (a merged cluster keeps the lower index) and returns each index's cluster size
     * (0 once merged away).
     */
    static int[] recomputedWard(float[] sum, int kvHeads, int g, int d, int rows) {
        int[] size = new int[kvHeads * g];
        java.util.Arrays.fill(size, 1);
        for (int live = kvHeads * g; live > rows; live--) {
            int bestA = -1, bestB = -1;
            double best = Double.POSITIVE_INFINITY;
            for (int h = 0; h < kvHeads; h++) {
                for (int a = h * g; a < (h + 1) * g; a++) {
                    for (int b = a + 1; b < (h + 1) * g && size[a] > 0; b++) {
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
