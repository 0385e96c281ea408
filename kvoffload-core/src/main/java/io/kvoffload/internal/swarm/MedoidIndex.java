package io.kvoffload.internal.swarm;

import io.kvoffload.internal.util.Checks;
import io.kvoffload.strategy.LayerKv;
import io.kvoffload.internal.util.TopK;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * Swarm's DRAM tier index (§5.2, Tier 1): per layer, the key of every cluster's medoid, all KV heads,
 * in one contiguous off-heap segment, and a route table from cluster id to its members. An incoming
 * query is scored against the medoids to decide which clusters to fetch.
 *
 * <p>Layout of the segment: cluster after cluster, each {@code kvHeads × headDim} float32 (native
 * order), head after head, the same token-major order as an entry's K. Scoring is GQA-aware: the
 * query heads sharing a KV head are summed first, so the score of a cluster is the sum over all query
 * heads of the logit {@code q_h·k_medoid/√headDim}, at the cost of one dot product per KV head.
 *
 * <p><b>Scoring speed.</b> {@link #score(float[], float[], float[])} is the decode hot path: it
 * allocates nothing and reads every medoid key once, so from a few thousand clusters on it is bound
 * by memory bandwidth (Llama-3-8B layer: 4 KiB of keys per cluster). Each dot product runs eight
 * independent accumulators over the row: C2 does not vectorise a float reduction (Java's
 * left-to-right addition order forbids reassociation), so one accumulator would serialise on the
 * add latency; eight keep the loads and multiplies in flight and measured twice as fast as one, as
 * fast as the same loop over an on-heap copy. The keys therefore stay off-heap only (no second
 * copy). The summation order differs from a left-to-right sum, so scores equal the definition above
 * up to float rounding (about 1e-6 relative), not bit for bit.
 *
 * <p><b>Appending and memory ownership.</b> Online maintenance (Eq. 9) founds new clusters while
 * decoding; {@link #appendClusters} adds their medoids in place, with ids after the existing ones.
 * {@link #build} puts the offline medoids in a segment of the caller's arena, exactly sized. The
 * first append that does not fit moves the keys into a segment of an arena the index owns (capacity
 * grows by half, or to {@link #ensureCapacity}'s figure), and each later move frees the previous
 * owned segment at once; the caller's segment stays allocated until the caller's arena closes.
 * {@link #close()} frees the owned segment; an index that was never appended to owns nothing, so
 * closing it changes nothing. Appending never reallocates once {@link #ensureCapacity} has reserved
 * room, which keeps a decoder that reserves ahead free of native allocations too.
 *
 * <p><b>Route table.</b> Clusters {@code 0 .. offlineClusters()−1} are the offline
 * {@link #clustering()}'s, with its member lists. For an appended cluster the index knows only the
 * medoid token given to {@link #appendClusters}: {@link #members} returns that token alone and
 * {@link #size} returns 1; the growing member lists of online clusters belong to the maintenance
 * layer that assigns new tokens, which hands the selection its own sizes.
 *
 * <p>Not thread-safe: one thread (the layer's decoder) scores and appends; concurrent scoring alone
 * is safe while nothing appends or closes.
 */
public final class MedoidIndex implements AutoCloseable {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT;

    private final Clustering clustering;
    private final int kvHeads;
    private final int headDim;
    private final int queryHeads;
    private final int row; // floats per cluster: kvHeads × headDim
    private final float scale;
    private MemorySegment keys;      // capacity × row floats; the first clusters × row are in use
    private int capacity;            // clusters the segment has room for
    private int clusters;            // offline + appended
    private int[] appendedMedoids = new int[0];
    private Arena owned;             // holds `keys` once an append moved them; null before
    private boolean closed;

    private MedoidIndex(Clustering clustering, MemorySegment keys, int kvHeads, int headDim, int queryHeads) {
        this.clustering = clustering;
        this.keys = keys;
        this.kvHeads = kvHeads;
        this.headDim = headDim;
        this.queryHeads = queryHeads;
        this.row = kvHeads * headDim;
        this.scale = (float) (1.0 / Math.sqrt(headDim));
        this.clusters = clustering.clusterCount();
        this.capacity = clusters;
    }

    /**
     * Copies the medoids' keys out of {@code keys} into a segment of {@code arena}.
     *
     * @param keys the layer the clustering was built for ({@code tokens == clustering.entries()})
     * @param queryHeads a positive multiple of the layer's KV heads
     * @param arena owns the segment of the offline medoids: the index is usable until the arena closes
     */
    public static MedoidIndex build(Clustering clustering, LayerKv keys, int queryHeads, Arena arena) {
        Checks.notNull("clustering", clustering);
        Checks.notNull("keys", keys);
        Checks.notNull("arena", arena);
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

    /** All clusters: the offline ones and those appended since. */
    public int clusterCount() { return clusters; }
    /** Clusters of the offline {@link #clustering()}: ids {@code 0 .. offlineClusters()−1}. */
    public int offlineClusters() { return clustering.clusterCount(); }
    /** Clusters the key storage has room for without moving. */
    public int capacity() { return capacity; }
    public int kvHeads() { return kvHeads; }
    public int headDim() { return headDim; }
    public int queryHeads() { return queryHeads; }

    /** The medoid keys of all {@link #clusterCount()} clusters, read-only, in the layout above. */
    public MemorySegment medoidKeys() {
        checkOpen();
        return keys.asSlice(0, 4L * row * clusters).asReadOnly();
    }

    /** Route table: the entry the cluster's medoid is. */
    public int medoid(int cluster) {
        Checks.index("cluster", cluster, clusters);
        int offline = clustering.clusterCount();
        return cluster < offline ? clustering.medoid(cluster) : appendedMedoids[cluster - offline];
    }

    /**
     * Route table: the members of {@code cluster} (a copy), in the order placement assigns disks; for
     * an appended cluster its medoid alone (see the class comment).
     */
    public int[] members(int cluster) {
        Checks.index("cluster", cluster, clusters);
        return cluster < clustering.clusterCount() ? clustering.members(cluster) : new int[] {medoid(cluster)};
    }

    /** Route table: members of {@code cluster}; 1 for an appended cluster (its medoid). */
    public int size(int cluster) {
        Checks.index("cluster", cluster, clusters);
        return cluster < clustering.clusterCount() ? clustering.size(cluster) : 1;
    }

    /** The offline clustering this index routes clusters {@code 0 .. offlineClusters()−1} to. */
    public Clustering clustering() {
        return clustering;
    }

    /**
     * DRAM held: the medoid keys (the reserved capacity) plus the route table (member lists and
     * offsets, medoid ids). The paper reports 0.412 GB at a 1M-token context over all layers of its
     * model.
     */
    public long memoryBytes() {
        int offline = clustering.clusterCount();
        return Math.max(4, 4L * row * capacity) + 4L * clustering.memberships() + 4L * (offline + 1) + 4L * offline
                + 4L * appendedMedoids.length;
    }

    /**
     * Scores every cluster for {@code query} ({@code queryHeads × headDim} floats): the sum over query
     * heads of the scaled logit against the medoid's key for that head's KV head. Allocates a
     * working array per call; the decode path uses {@link #score(float[], float[], float[])}.
     *
     * @param scores receives one score per cluster; length at least {@link #clusterCount()}
     */
    public void score(float[] query, float[] scores) {
        score(query, new float[row], scores);
    }

    /**
     * {@link #score(float[], float[])} without allocating: the query heads sharing a KV head are
     * summed into {@code scratch} first (on return it holds that GQA-aggregated query, {@code kvHeads ×
     * headDim} floats), then every medoid's key is read once.
     *
     * @param query {@code queryHeads × headDim} floats, head after head
     * @param scratch working space, length at least {@code kvHeads × headDim}
     * @param scores receives one score per cluster; length at least {@link #clusterCount()}
     * @throws IllegalArgumentException if a length is out of range
     * @throws IllegalStateException if the index is closed
     */
    public void score(float[] query, float[] scratch, float[] scores) {
        Checks.notNull("query", query);
        Checks.notNull("scratch", scratch);
        Checks.notNull("scores", scores);
        if (query.length != queryHeads * headDim) {
            throw new IllegalArgumentException("query.length = " + query.length + " must be queryHeads × headDim = "
                    + queryHeads * headDim);
        }
        if (scratch.length < row) {
            throw new IllegalArgumentException("scratch.length = " + scratch.length + " is too small; allowed: at least "
                    + "kvHeads × headDim = " + row);
        }
        if (scores.length < clusters) {
            throw new IllegalArgumentException("scores.length = " + scores.length + " is too small; allowed: at least " + clusters);
        }
        checkOpen();
        aggregate(query, scratch);
        MemorySegment k = keys;
        for (int c = 0; c < clusters; c++) {
            scores[c] = scale * dot(scratch, k, (long) c * row, row);
        }
    }

    /** GQA: the query heads of each KV head summed, in head order, into {@code dst[0 .. row)}. */
    private void aggregate(float[] query, float[] dst) {
        int group = queryHeads / kvHeads;
        Arrays.fill(dst, 0, row, 0f);
        for (int h = 0; h < queryHeads; h++) {
            int to = (h / group) * headDim, from = h * headDim;
            for (int i = 0; i < headDim; i++) {
                dst[to + i] += query[from + i];
            }
        }
    }

    /**
     * {@code Σ q[i]·k[base + i]} over {@code i < n} with eight accumulators (see the class comment:
     * they hide the add latency C2 cannot vectorise away), combined pairwise.
     */
    static float dot(float[] q, MemorySegment k, long base, int n) {
        float s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
        int i = 0;
        for (; i + 8 <= n; i += 8) {
            long b = base + i;
            s0 += q[i] * k.getAtIndex(F32, b);
            s1 += q[i + 1] * k.getAtIndex(F32, b + 1);
            s2 += q[i + 2] * k.getAtIndex(F32, b + 2);
            s3 += q[i + 3] * k.getAtIndex(F32, b + 3);
            s4 += q[i + 4] * k.getAtIndex(F32, b + 4);
            s5 += q[i + 5] * k.getAtIndex(F32, b + 5);
            s6 += q[i + 6] * k.getAtIndex(F32, b + 6);
            s7 += q[i + 7] * k.getAtIndex(F32, b + 7);
        }
        for (; i < n; i++) { // head dims that are not a multiple of 8
            s0 += q[i] * k.getAtIndex(F32, base + i);
        }
        return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
    }

    /** The {@code count} best-scoring clusters, best first (ties: lower id). Allocates; not for the hot path. */
    public int[] top(float[] query, int count) {
        Checks.inRange("count", count, 0, clusterCount());
        float[] scores = new float[clusterCount()];
        score(query, scores);
        return TopK.ranked(scores, count);
    }

    /**
     * Adds clusters founded online, in place: cluster {@code clusterCount() + i} gets medoid
     * {@code medoidTokens[i]} with the key {@code keys[i × row .. (i+1) × row)}, {@code row = kvHeads ×
     * headDim}, head after head. When the storage is full it moves into a segment the index owns
     * (see the class comment); {@link #ensureCapacity} reserves ahead.
     *
     * @param medoidTokens token positions of the new medoids, each ≥ 0
     * @param keys {@code medoidTokens.length × kvHeads × headDim} finite floats
     * @return the id of the first new cluster (the previous {@link #clusterCount()})
     * @throws IllegalArgumentException if a length, a token or a key is out of range
     * @throws IllegalStateException if the index is closed
     */
    public int appendClusters(int[] medoidTokens, float[] keys) {
        Checks.notNull("medoidTokens", medoidTokens);
        Checks.notNull("keys", keys);
        checkOpen();
        int n = medoidTokens.length;
        Checks.inRange("medoidTokens.length", n, 0, Integer.MAX_VALUE - 8 - clusters);
        if ((long) keys.length != (long) n * row) {
            throw new IllegalArgumentException("keys.length = " + keys.length + " must be medoidTokens.length × kvHeads × "
                    + "headDim = " + (long) n * row);
        }
        for (int i = 0; i < n; i++) {
            if (medoidTokens[i] < 0) { // the name is built only on failure: appends must not allocate
                Checks.inRange("medoidTokens[" + i + "]", medoidTokens[i], 0, Integer.MAX_VALUE);
            }
        }
        for (int i = 0; i < keys.length; i++) {
            if (!Float.isFinite(keys[i])) {
                throw new IllegalArgumentException("keys[" + i + "] = " + keys[i] + "; allowed: finite values");
            }
        }
        int first = clusters;
        if (n == 0) {
            return first;
        }
        ensureCapacity(clusters + n);
        MemorySegment.copy(keys, 0, this.keys, F32, 4L * row * clusters, keys.length);
        int offline = clustering.clusterCount();
        int appended = clusters - offline;
        if (appendedMedoids.length < appended + n) {
            appendedMedoids = Arrays.copyOf(appendedMedoids, Math.max(appended + n, capacity - offline));
        }
        System.arraycopy(medoidTokens, 0, appendedMedoids, appended, n);
        clusters += n;
        return first;
    }

    /**
     * Makes room for {@code minClusters} clusters in all, so appends up to that count neither move
     * the keys nor allocate; moves them now into a segment the index owns if there is not room.
     *
     * @param minClusters clusters to hold, up to {@code Integer.MAX_VALUE − 8}
     */
    public void ensureCapacity(int minClusters) {
        Checks.inRange("minClusters", minClusters, 0, Integer.MAX_VALUE - 8);
        checkOpen();
        if (minClusters <= capacity) {
            return;
        }
        // Grow by half at least, so a stream of one-cluster appends costs amortised O(1) copies.
        int target = (int) Math.min(Integer.MAX_VALUE - 8, Math.max(minClusters, capacity + (capacity >> 1) + 16L));
        Arena next = Arena.ofShared(); // shared: the decoder thread that scores is not the builder's
        MemorySegment seg;
        try {
            seg = next.allocate(4L * row * target, 64);
        } catch (RuntimeException | OutOfMemoryError e) {
            next.close();
            throw e;
        }
        MemorySegment.copy(keys, 0, seg, 0, 4L * row * clusters);
        Arena previous = owned;
        keys = seg;
        owned = next;
        capacity = target;
        int offline = clustering.clusterCount();
        if (appendedMedoids.length < target - offline) {
            appendedMedoids = Arrays.copyOf(appendedMedoids, target - offline);
        }
        if (previous != null) {
            previous.close(); // the previous owned copy; a caller's arena is the caller's to close
        }
    }

    /**
     * Frees the key storage the index owns (after an append moved it there); afterwards scoring,
     * appending and {@link #medoidKeys()} throw. Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (owned != null) {
            owned.close();
            owned = null;
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the medoid index is closed");
        }
    }
}
