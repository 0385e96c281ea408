package io.kvoffload.internal.swarm;

import io.kvoffload.internal.swarm.BlockMassIndex.Combination;
import io.kvoffload.internal.util.Checks;

/**
 * The query rows a {@link BlockMassIndex} step scores each KV head with, and what each row weighs:
 * the mean of the KV head's query heads ({@link Combination#HEAD_MASS}, {@link
 * Combination#SUM_LOGITS}), each query head ({@link Combination#QUERY_HEAD_MASS}), or the query heads
 * merged, step by step, into half as many clusters or as many as the sweep affords, at most eight a
 * KV head on average ({@link Combination#CLUSTERED_HEAD_MASS}, {@link #layerRows}),
 * pooled over the layer so that a KV head whose query heads differ keeps more rows than one whose heads
 * agree. Rows are scaled by {@code 1/√d}; KV head {@code h}'s rows are {@code [rowStart(h),
 * rowStart(h + 1))}. Allocation-free after construction.
 */
final class QueryRows {
    private final Combination combination;
    private final int queryHeads;
    private final int kvHeads;
    private final int headDim;
    private final int groupSize;
    private final int perHead;
    private final float scale;
    private final float[] rows;       // rows × headDim, scaled
    private final float[] weight;     // per row: 1, or (clustered) its cluster's share of the KV head's query heads
    private final float[] clusterSum; // every KV head's query clusters, summed vectors, head h's at [h × groupSize × headDim …]
    private final int[] clusterSize;  // head h's cluster c at [h × groupSize + c]; 0: merged away
    private final double[] mergeCost; // head h's Ward merge costs, pair (a < b) at [h × groupSize² + a × groupSize + b]
    private final int[] rowStart;     // KV head h's rows: [rowStart[h], rowStart[h + 1])
    private final double[] headBest;  // KV head h's cheapest merge cost (cluster), its pair a << 16 | b in headPair
    private final int[] headPair;
    private final int maxPerHead;

    QueryRows(Combination combination, int queryHeads, int kvHeads, int headDim) {
        this(combination, queryHeads, kvHeads, headDim, count(combination, queryHeads, kvHeads, headDim));
    }

    /**
     * With {@code count} rows in all: with {@link Combination#CLUSTERED_HEAD_MASS} one per KV head up to
     * one per query head (tests pin the clustering this way); otherwise the combination's own count.
     */
    QueryRows(Combination combination, int queryHeads, int kvHeads, int headDim, int count) {
        this.combination = combination;
        this.queryHeads = queryHeads;
        this.kvHeads = kvHeads;
        this.headDim = headDim;
        this.groupSize = queryHeads / kvHeads;
        boolean clustered = combination == Combination.CLUSTERED_HEAD_MASS;
        int own = count(combination, queryHeads, kvHeads, headDim);
        Checks.inRange("count", count, clustered ? kvHeads : own, clustered ? queryHeads : own);
        this.perHead = count / kvHeads;
        this.scale = (float) (1.0 / Math.sqrt(headDim));
        this.rows = new float[count * headDim];
        this.weight = new float[count];
        java.util.Arrays.fill(weight, 1f);
        this.clusterSum = new float[clustered ? kvHeads * groupSize * headDim : 0];
        this.clusterSize = new int[clustered ? kvHeads * groupSize : 0];
        this.mergeCost = new double[clustered && queryHeads > count ? kvHeads * groupSize * groupSize : 0];
        this.rowStart = new int[kvHeads + 1];
        this.headBest = new double[clustered ? kvHeads : 0];
        this.headPair = new int[clustered ? kvHeads : 0];
        for (int h = 0; h <= kvHeads; h++) {
            rowStart[h] = (int) ((long) h * count / kvHeads); // until the first clustering
        }
        this.maxPerHead = clustered ? Math.min(groupSize, count - (kvHeads - 1)) : perHead;
    }

    /**
     * Rows per KV head with {@link Combination#CLUSTERED_HEAD_MASS} at most: past eight clusters the
     * rows stop buying recall while the sweep grows with them. On multi-query shapes (71, 48 and 64
     * query heads on one KV head, 64 on two) eight rows instead of half the group are within ±0.002 ×
     * the oracle's recall and take 0.42 instead of 0.98 ms a step at 128K tokens (docs/benchmarks.md,
     * "Large query-head groups").
     */
    static final int MAX_CLUSTER_ROWS = 8;

    /**
     * Rows per KV head with {@link Combination#CLUSTERED_HEAD_MASS} for a group of {@code groupSize}
     * query heads: half of them, at least two (at most the group) and at most {@link
     * #MAX_CLUSTER_ROWS}: each row stands for two heads on average, which recovers most of what one row
     * per query head gains over the group's mean query at half its sweep (docs/benchmarks.md,
     * "Clustered query heads").
     */
    static int clusterRows(int groupSize) {
        return Math.min(groupSize, Math.max(2, Math.min(MAX_CLUSTER_ROWS, (groupSize + 1) / 2)));
    }

    /**
     * What scoring one block costs per query row beyond its {@code headDim} multiply-adds, in the same
     * units: the row's exponential, share and normaliser terms. Fitted on JMH's {@code blockMass} at 1M
     * tokens (docs/benchmarks.md, "Query rows by the sweep's cost"): four rows of 64 dimensions per KV
     * head cost 1.19 × two of 128, although both sweep 2,048 dimensions.
     */
    static final int ROW_OVERHEAD = 32;

    /**
     * What one block's scoring may cost ({@link #sweepCost}) where a shape leaves room: Llama-3-8B's
     * layer (8 KV heads × 128) with its two clustered rows per KV head, the shape issue #16's time targets
     * were met on. A layer with fewer KV heads or smaller heads spends what it saves on rows, up to one
     * per query head ({@link #layerRows}), and on finer blocks ({@link BlockSize#adaptive}).
     */
    static final int REFERENCE_SWEEP = BlockSize.REFERENCE_KV_HEADS * 2 * (BlockSize.REFERENCE_HEAD_DIM + ROW_OVERHEAD);

    /** What scoring one block costs with {@code rows} rows of {@code headDim}. */
    static long sweepCost(int rows, int headDim) {
        return (long) rows * (headDim + ROW_OVERHEAD);
    }

    /**
     * Rows of a layer with {@link Combination#CLUSTERED_HEAD_MASS} for {@code kvHeads} groups of {@code
     * groupSize} query heads of {@code headDim} dimensions: {@link #clusterRows(int) half of each group},
     * or as many as {@link #REFERENCE_SWEEP} affords, at most each group and {@link #MAX_CLUSTER_ROWS} a
     * KV head; half of each group only up to twice what the reference affords, and at least one row a KV
     * head. The largest groups on many KV heads (96 and 128 query heads on 8 × 128) kept 48 and 64 rows,
     * 1.8–2.9 ms a step at 128K tokens; at 32 rows, what Llama-3-70B's groups of 8 keep, they take 1.0–1.3
     * ms within 0.012 × the oracle's recall (docs/benchmarks.md, "Rows of the largest query-head groups").
     * Fewer than half a group where the reference affords more costs retrieval heads: 16 rows on
     * Llama-3-70B's layer gave them 0.93 × the oracle's recall and 9 × its output error per head at 16K.
     * The rows are the layer's, pooled over its KV heads ({@link #cluster}), so the sweep's room counts in
     * whole rows of the layer, not of each KV head. Merging heads blurs a sharp retrieval
     * head into its neighbours; on narrow shapes (12 query heads on 2 KV heads × 64, 32 on 8 × 64, 16 on
     * 4 × 64) more rows lifted retrieval-heads recall by up to 0.08 × the oracle's and cut its output
     * error up to 3.7-fold, within noise of half the rows elsewhere (docs/benchmarks.md, "Query rows by
     * the sweep's cost").
     */
    static int layerRows(int groupSize, int kvHeads, int headDim) {
        long afford = REFERENCE_SWEEP / sweepCost(1, headDim);
        long cap = (long) kvHeads * Math.min(groupSize, MAX_CLUSTER_ROWS);
        long half = (long) kvHeads * clusterRows(groupSize);
        long rows = Math.max(afford, Math.min(half, 2 * afford)); // half of each group, within twice the reference
        return (int) Math.min(cap, Math.max(kvHeads, rows));
    }

    /**
     * The fewest rows {@code combination} keeps on a layer of this shape however long it is: with {@link
     * Combination#CLUSTERED_HEAD_MASS} three quarters of what {@link #layerRows} affords, at least half of
     * each group ({@link #clusterRows}); the others their {@link #count}. The blocks are sized by these
     * rows ({@link BlockSize#sweepCost}) and the rows then take the room the blocks leave ({@link
     * #countFor}): a long layer gives up to a quarter of its rows for blocks half as long. Giving up half
     * (12 query heads on 2 KV heads × 64 at 128K: 6 rows over 4-token blocks instead of 12 over 8) cost
     * retrieval heads 0.008 × the oracle's recall and 1.5 × the output error (docs/benchmarks.md, "Rows
     * give way to finer blocks").
     */
    static int fewestRows(Combination combination, int queryHeads, int kvHeads, int headDim) {
        int most = count(combination, queryHeads, kvHeads, headDim);
        if (combination != Combination.CLUSTERED_HEAD_MASS) {
            return most;
        }
        int threeQuarters = (3 * most + 3) / 4;
        return Math.min(most, Math.max(kvHeads * clusterRows(queryHeads / kvHeads), threeQuarters));
    }

    /**
     * Rows {@code combination} scores a layer of this shape with when it has {@code blocks} blocks and
     * a step may sweep {@code budget} ({@link #sweepCost} × blocks): as many as the budget affords
     * between {@link #fewestRows} and {@link #count}. On two-KV-head layers at 128K tokens the rows
     * {@link #layerRows} affords left only 16-token blocks, 0.87–0.95 × the oracle's recall per head; 13
     * and 8 rows over 8-token blocks, at the same sweep, gave 0.955–0.99 × (docs/benchmarks.md, "Rows give
     * way to finer blocks").
     */
    static int countFor(Combination combination, int queryHeads, int kvHeads, int headDim, long blocks, long budget) {
        return countFor(combination, queryHeads, kvHeads, headDim, blocks, budget,
                fewestRows(combination, queryHeads, kvHeads, headDim));
    }

    /** {@link #countFor(Combination, int, int, int, long, long)} with at least {@code fewest} rows instead of {@link #fewestRows}. */
    static int countFor(Combination combination, int queryHeads, int kvHeads, int headDim, long blocks, long budget,
            int fewest) {
        int most = count(combination, queryHeads, kvHeads, headDim);
        long afford = budget / Math.max(1, blocks * sweepCost(1, headDim));
        return (int) Math.max(Math.min(fewest, most), Math.min(most, afford));
    }

    /** Rows {@code combination} scores a layer of this shape with, in all, where its blocks leave room. */
    static int count(Combination combination, int queryHeads, int kvHeads, int headDim) {
        return switch (combination) {
            case QUERY_HEAD_MASS -> queryHeads;
            case CLUSTERED_HEAD_MASS -> layerRows(queryHeads / kvHeads, kvHeads, headDim);
            default -> kvHeads;
        };
    }

    /** Rows per KV head on average: {@link #count()} / KV heads. */
    int perHead() {
        return perHead;
    }

    /** The most rows one KV head can have. */
    int maxPerHead() {
        return maxPerHead;
    }

    /** KV head {@code h}'s first row; its rows end at {@code rowStart(h + 1)} (valid after {@link #build}). */
    int rowStart(int h) {
        return rowStart[h];
    }

    /** All rows. */
    int count() {
        return weight.length;
    }

    /** The rows of the last {@link #build}, row {@code r} at {@code [r × headDim, (r + 1) × headDim)}. */
    float[] rows() {
        return rows;
    }

    /** Row {@code r}'s weight: 1, or with clustered rows its cluster's share of its KV head's query heads. */
    float weight(int r) {
        return weight[r];
    }

    /**
     * KV head {@code h}'s cheapest merge of two live clusters into {@link #headBest} and {@link
     * #headPair} (the lowest {@code (a, b)} on ties; infinite where one cluster is left), so that each
     * merge of {@link #cluster} scans one value a KV head, not every pair of the layer.
     */
    private void cheapest(int h) {
        int g = groupSize, s0 = h * g, c0 = h * g * g;
        double best = Double.POSITIVE_INFINITY;
        int pair = 0;
        for (int a = 0; a < g; a++) {
            if (clusterSize[s0 + a] == 0) {
                continue;
            }
            for (int b = a + 1; b < g; b++) {
                if (clusterSize[s0 + b] != 0 && mergeCost[c0 + a * g + b] < best) {
                    best = mergeCost[c0 + a * g + b];
                    pair = a << 16 | b;
                }
            }
        }
        headBest[h] = best;
        headPair[h] = pair;
    }

    /** DRAM the rows and their scratch hold. */
    long memoryBytes() {
        return 4L * (rows.length + weight.length + clusterSum.length + clusterSize.length + rowStart.length)
                + 8L * (mergeCost.length + headBest.length) + 4L * headPair.length;
    }

    /**
     * Builds the rows of {@code query} ({@code queryHeads × headDim} floats).
     *
     * @throws IllegalArgumentException naming the first non-finite element
     */
    void build(float[] query) {
        int d = headDim;
        for (int i = 0, n = queryHeads * d; i < n; i++) {
            if (!Float.isFinite(query[i])) {
                throw new IllegalArgumentException("query[" + i + "] = " + query[i] + "; allowed: finite values");
            }
        }
        if (combination == Combination.CLUSTERED_HEAD_MASS) {
            cluster(query);
            return;
        }
        boolean own = perHead == groupSize; // one row per query head (also MHA)
        java.util.Arrays.fill(rows, 0f);
        float per = own ? scale : scale / groupSize;
        for (int q = 0; q < queryHeads; q++) {
            int dst = (own ? q : q / groupSize) * d, src = q * d;
            for (int j = 0; j < d; j++) {
                rows[dst + j] += query[src + j] * per;
            }
        }
    }

    /**
     * The layer's query heads merged into {@link #count()} rows, agglomeratively by Ward's criterion,
     * every KV head's heads in one pool: each time, the two clusters of one KV head whose merge adds
     * the least squared distance of their queries to their mean ({@code Δ(a, b) = n_a n_b / (n_a + n_b)
     * × ‖μ_a − μ_b‖²}), whichever KV head they belong to. A row's estimated logits err from each member
     * head's own by {@code (q − μ)·k}, so this keeps that error smallest: heads that attend alike share
     * a row, and a head that attends apart or more sharply (a larger query: a retrieval head) keeps its
     * own. Pooling spends the rows where the heads differ: a KV head whose query heads agree ends with
     * one row, one whose heads look at three different things keeps three, instead of every KV head
     * keeping {@link #perHead} (the same sweep, since a step sweeps every row once). A KV head keeps at
     * least one row and at most its group. A row's query is its cluster's mean (scaled); its weight the
     * cluster's share of its KV head's query heads, so each KV head's rows weigh 1 together.
     *
     * <p>The merge costs are computed once from the heads' queries and then updated by the
     * Lance–Williams recurrence for Ward's method, {@code Δ(k, a∪b) = ((n_k + n_a) Δ(k, a) + (n_k + n_b)
     * Δ(k, b) − n_k Δ(a, b)) / (n_k + n_a + n_b)}: {@code O(g² d)} a KV head instead of recomputing
     * every pair's distance after each merge ({@code O(g³ d)}, 2 ms a step for a 71-query-head MQA
     * group). Ties go to the lowest (KV head, a, b); the merged cluster keeps the index {@code a}; a KV
     * head's rows are its clusters in index order, from {@link #rowStart}.
     */
    private void cluster(float[] query) {
        int d = headDim, g = groupSize, gg = g * g;
        float[] sum = clusterSum;
        int[] size = clusterSize;
        double[] cost = mergeCost;
        System.arraycopy(query, 0, sum, 0, queryHeads * d);
        java.util.Arrays.fill(size, 0, queryHeads, 1);
        int count = weight.length;
        if (queryHeads > count) {
            for (int h = 0; h < kvHeads; h++) {
                int q0 = h * g * d;
                for (int a = 0; a < g; a++) {
                    for (int b = a + 1; b < g; b++) {
                        double dist = 0;
                        for (int j = 0; j < d; j++) {
                            double diff = (double) sum[q0 + a * d + j] - sum[q0 + b * d + j];
                            dist += diff * diff;
                        }
                        cost[h * gg + a * g + b] = 0.5 * dist; // two single heads: n_a n_b / (n_a + n_b) = 1/2
                    }
                }
            }
        }
        for (int h = 0; queryHeads > count && h < kvHeads; h++) {
            cheapest(h);
        }
        for (int live = queryHeads; live > count; live--) {
            int bestH = -1;
            double best = Double.POSITIVE_INFINITY;
            for (int h = 0; h < kvHeads; h++) { // each KV head's cheapest merge, kept between merges
                if (headBest[h] < best) {
                    best = headBest[h];
                    bestH = h;
                }
            }
            int bestA = headPair[bestH] >>> 16, bestB = headPair[bestH] & 0xffff;
            int s0 = bestH * g, c0 = bestH * gg;
            int na = size[s0 + bestA], nb = size[s0 + bestB];
            for (int k = 0; k < g; k++) {
                if (size[s0 + k] == 0 || k == bestA || k == bestB) {
                    continue;
                }
                int nk = size[s0 + k];
                int ka = c0 + (k < bestA ? k * g + bestA : bestA * g + k);
                int kb = c0 + (k < bestB ? k * g + bestB : bestB * g + k);
                cost[ka] = ((nk + na) * cost[ka] + (nk + nb) * cost[kb] - nk * best) / (nk + na + nb);
            }
            for (int j = 0; j < d; j++) {
                sum[(s0 + bestA) * d + j] += sum[(s0 + bestB) * d + j];
            }
            size[s0 + bestA] = na + nb;
            size[s0 + bestB] = 0;
            cheapest(bestH); // only this KV head's costs changed
        }
        int r = 0;
        for (int h = 0; h < kvHeads; h++) {
            rowStart[h] = r;
            for (int c = h * g, end = c + g; c < end; c++) {
                if (size[c] == 0) {
                    continue;
                }
                float per = scale / size[c];
                for (int j = 0; j < d; j++) {
                    rows[r * d + j] = sum[c * d + j] * per;
                }
                weight[r] = (float) size[c] / g;
                r++;
            }
        }
        rowStart[kvHeads] = r;
    }

}
