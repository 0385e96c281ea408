package io.kvoffload.internal.swarm;

import io.kvoffload.internal.util.Checks;
import io.kvoffload.workload.LayerKv;
import io.kvoffload.workload.TopK;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Swarm's DRAM tier index (§5.2, Tier 1): per layer, the key of every cluster's medoid, all KV heads,
 * in one contiguous off-heap segment, and a route table from cluster id to its members. An incoming
 * query is scored against the medoids to decide which clusters to fetch.
 *
 * <p>Layout of the segment: cluster after cluster, each {@code kvHeads × headDim} float32 (native
 * order), head after head, the same token-major order as an entry's K. Scoring is GQA-aware: the
 * query heads sharing a KV head are summed first, so the score of a cluster is the sum over all query
 * heads of the logit {@code q_h·k_medoid/√headDim}, at the cost of one dot product per KV head. This
 * is the simple reference the online phase will optimise.
 */
public final class MedoidIndex {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT;

    private final Clustering clustering;
    private final MemorySegment keys;
    private final int kvHeads;
    private final int headDim;
    private final int queryHeads;
    private final float scale;

    private MedoidIndex(Clustering clustering, MemorySegment keys, int kvHeads, int headDim, int queryHeads) {
        this.clustering = clustering;
        this.keys = keys;
        this.kvHeads = kvHeads;
        this.headDim = headDim;
        this.queryHeads = queryHeads;
        this.scale = (float) (1.0 / Math.sqrt(headDim));
    }

    /**
     * Copies the medoids' keys out of {@code keys} into a segment of {@code arena}.
     *
     * @param keys the layer the clustering was built for ({@code tokens == clustering.entries()})
     * @param queryHeads a positive multiple of the layer's KV heads
     * @param arena owns the segment: the index is usable until the arena closes
     */
    public static MedoidIndex build(Clustering clustering, LayerKv keys, int queryHeads, Arena arena) {
        SwarmArgs.notNull("clustering", clustering);
        SwarmArgs.notNull("keys", keys);
        SwarmArgs.notNull("arena", arena);
        if (keys.tokens() != clustering.entries()) {
            throw new IllegalArgumentException("keys.tokens() = " + keys.tokens() + " must equal clustering.entries() = "
                    + clustering.entries());
        }
        int kv = keys.kvHeads(), d = keys.headDim();
        if (queryHeads <= 0 || queryHeads % kv != 0) {
            throw new IllegalArgumentException("queryHeads = " + queryHeads + " must be a positive multiple of kvHeads = " + kv);
        }
        long row = (long) kv * d;
        MemorySegment seg = arena.allocate(Math.max(4, 4L * row * clustering.clusterCount()), 64);
        float[] buf = new float[d];
        for (int c = 0; c < clustering.clusterCount(); c++) {
            int m = clustering.medoid(c);
            for (int h = 0; h < kv; h++) {
                keys.keys(h, m, 1, buf, 0);
                MemorySegment.copy(buf, 0, seg, F32, 4L * (c * row + (long) h * d), d);
            }
        }
        return new MedoidIndex(clustering, seg, kv, d, queryHeads);
    }

    public int clusterCount() { return clustering.clusterCount(); }
    public int kvHeads() { return kvHeads; }
    public int headDim() { return headDim; }
    public int queryHeads() { return queryHeads; }

    /** The medoid keys, read-only. */
    public MemorySegment medoidKeys() {
        return keys.asReadOnly();
    }

    /** Route table: the entry the cluster's medoid is. */
    public int medoid(int cluster) {
        return clustering.medoid(cluster);
    }

    /** Route table: the members of {@code cluster} (a copy), in the order placement assigns disks. */
    public int[] members(int cluster) {
        return clustering.members(cluster);
    }

    /** Route table: members of {@code cluster}. */
    public int size(int cluster) {
        return clustering.size(cluster);
    }

    /** The clustering this index routes to. */
    public Clustering clustering() {
        return clustering;
    }

    /**
     * DRAM held: the medoid keys plus the route table (member lists and offsets, medoid ids). The
     * paper reports 0.412 GB at a 1M-token context over all layers of its model.
     */
    public long memoryBytes() {
        return keys.byteSize() + 4L * clustering.memberships() + 4L * (clusterCount() + 1) + 4L * clusterCount();
    }

    /**
     * Scores every cluster for {@code query} ({@code queryHeads × headDim} floats): the sum over query
     * heads of the scaled logit against the medoid's key for that head's KV head.
     *
     * @param scores receives one score per cluster; length at least {@link #clusterCount()}
     */
    public void score(float[] query, float[] scores) {
        SwarmArgs.notNull("query", query);
        SwarmArgs.notNull("scores", scores);
        if (query.length != queryHeads * headDim) {
            throw new IllegalArgumentException("query.length = " + query.length + " must be queryHeads × headDim = "
                    + queryHeads * headDim);
        }
        int clusters = clusterCount();
        if (scores.length < clusters) {
            throw new IllegalArgumentException("scores.length = " + scores.length + " is too small; allowed: at least " + clusters);
        }
        int group = queryHeads / kvHeads;
        float[] summed = new float[kvHeads * headDim]; // GQA: one aggregated query per KV head
        for (int h = 0; h < queryHeads; h++) {
            int kv = h / group;
            for (int i = 0; i < headDim; i++) {
                summed[kv * headDim + i] += query[h * headDim + i];
            }
        }
        int row = kvHeads * headDim;
        for (int c = 0; c < clusters; c++) {
            long base = (long) c * row; // in floats
            float s = 0;
            for (int i = 0; i < row; i++) {
                s += summed[i] * keys.getAtIndex(F32, base + i);
            }
            scores[c] = scale * s;
        }
    }

    /** The {@code count} best-scoring clusters, best first (ties: lower id). */
    public int[] top(float[] query, int count) {
        Checks.inRange("count", count, 0, clusterCount());
        float[] scores = new float[clusterCount()];
        score(query, scores);
        return TopK.ranked(scores, count);
    }
}
