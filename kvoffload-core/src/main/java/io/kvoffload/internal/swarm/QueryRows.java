package io.kvoffload.internal.swarm;

import io.kvoffload.internal.swarm.BlockMassIndex.Combination;

/**
 * The query rows a {@link BlockMassIndex} step scores each KV head with, and what each row weighs:
 * the mean of the KV head's query heads ({@link Combination#HEAD_MASS}, {@link
 * Combination#SUM_LOGITS}), each query head ({@link Combination#QUERY_HEAD_MASS}), or the query heads
 * merged, step by step, into half as many clusters ({@link Combination#CLUSTERED_HEAD_MASS}). Rows
 * are scaled by {@code 1/√d}; KV head {@code h}'s rows are {@code [h × perHead(), (h + 1) × perHead())}.
 * Allocation-free after construction.
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
    private final float[] clusterSum; // one KV head's query clusters, summed vectors
    private final int[] clusterSize;

    QueryRows(Combination combination, int queryHeads, int kvHeads, int headDim) {
        this.combination = combination;
        this.queryHeads = queryHeads;
        this.kvHeads = kvHeads;
        this.headDim = headDim;
        this.groupSize = queryHeads / kvHeads;
        this.perHead = switch (combination) {
            case QUERY_HEAD_MASS -> groupSize;
            case CLUSTERED_HEAD_MASS -> clusterRows(groupSize);
            default -> 1;
        };
        this.scale = (float) (1.0 / Math.sqrt(headDim));
        int count = kvHeads * perHead;
        this.rows = new float[count * headDim];
        this.weight = new float[count];
        java.util.Arrays.fill(weight, 1f);
        boolean clustered = combination == Combination.CLUSTERED_HEAD_MASS;
        this.clusterSum = new float[clustered ? groupSize * headDim : 0];
        this.clusterSize = new int[clustered ? groupSize : 0];
    }

    /**
     * Rows per KV head with {@link Combination#CLUSTERED_HEAD_MASS} for a group of {@code groupSize}
     * query heads: half of them, at least two (at most the group): each row stands for two heads on
     * average, which recovers most of what one row per query head gains over the group's mean query
     * at half its sweep (docs/benchmarks.md, "Clustered query heads").
     */
    static int clusterRows(int groupSize) {
        return Math.min(groupSize, Math.max(2, (groupSize + 1) / 2));
    }

    /** Rows per KV head. */
    int perHead() {
        return perHead;
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

    /** DRAM the rows and their scratch hold. */
    long memoryBytes() {
        return 4L * (rows.length + weight.length + clusterSum.length + clusterSize.length);
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
            for (int h = 0; h < kvHeads; h++) {
                cluster(query, h);
            }
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
     * KV head {@code h}'s query heads merged into its {@link #perHead} rows, agglomeratively by Ward's
     * criterion: each time, the two clusters whose merge adds the least squared distance of their
     * queries to their mean ({@code n_a n_b / (n_a + n_b) × ‖μ_a − μ_b‖²}). A row's estimated logits
     * err from each member head's own by {@code (q − μ)·k}, so this keeps that error smallest: heads
     * that attend alike share a row, and a head that attends apart or more sharply (a larger query: a
     * retrieval head) keeps its own. A row's query is its cluster's mean (scaled); its weight the
     * cluster's share of the group's query heads.
     */
    private void cluster(float[] query, int h) {
        int d = headDim, g = groupSize;
        float[] sum = clusterSum;
        int[] size = clusterSize;
        System.arraycopy(query, h * g * d, sum, 0, g * d);
        java.util.Arrays.fill(size, 0, g, 1);
        for (int live = g; live > perHead; live--) {
            int bestA = -1, bestB = -1;
            double best = Double.POSITIVE_INFINITY;
            for (int a = 0; a < g; a++) {
                for (int b = a + 1; b < g && size[a] > 0; b++) {
                    if (size[b] == 0) {
                        continue;
                    }
                    float ia = 1f / size[a], ib = 1f / size[b];
                    double dist = 0;
                    for (int j = 0; j < d; j++) {
                        float diff = sum[a * d + j] * ia - sum[b * d + j] * ib;
                        dist += diff * diff;
                    }
                    double cost = (double) size[a] * size[b] / (size[a] + size[b]) * dist;
                    if (cost < best) {
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
        for (int c = 0, r = h * perHead; c < g; c++) {
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
}
