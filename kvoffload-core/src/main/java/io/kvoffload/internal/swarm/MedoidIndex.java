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
 * <p>Layout of the segment: dimension-major. Row {@code d} ({@code d = head × headDim + i}, all KV
 * heads) holds element {@code d} of every cluster's medoid key, float32 (native order), cluster after
 * cluster: element {@code (c, d)} is at float index {@code d × capacity() + c}. Scoring is GQA-aware:
 * the query heads sharing a KV head are summed first, so the score of a cluster is the sum over all
 * query heads of the logit {@code q_h·k_medoid/√headDim}, at the cost of one dot product per KV head.
 *
 * <p><b>Scoring speed.</b> {@link #score(float[], float[], float[])} is the decode hot path: it
 * allocates nothing and reads every medoid key once, so from a few thousand clusters on it is bound
 * by memory bandwidth (Llama-3-8B layer: 4 KiB of keys per cluster). The layout makes the scores of
 * a chunk of clusters, for each dimension {@code d}, the update {@code acc[c] += q[d] · K[d][c]} over
 * the chunk — a loop without a reduction, which C2 compiles to SIMD instructions, while the chunk's
 * accumulators stay in the L1 cache. (A token-major layout needs one dot product per cluster: a float
 * reduction, which Java's left-to-right addition order keeps C2 from vectorising.) Each cluster's
 * products are added in dimension order, so a score is exactly the left-to-right sum of the
 * definition above.
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
    /** Clusters per scoring chunk: their accumulators (4 KiB) stay in the L1 cache across a sweep. */
    private static final int CHUNK = 1024;

    private MemorySegment keys;      // row × capacity floats, dimension-major; the first clusters of each row are in use
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
        long n = clustering.clusterCount();
        for (int c = 0; c < n; c++) {
            int m = clustering.medoid(c);
            for (int h = 0; h < kv; h++) {
                keys.keys(h, m, 1, buf, 0);
                for (int i = 0; i < d; i++) {
                    seg.setAtIndex(F32, ((long) h * d + i) * n + c, buf[i]);
                }
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

    /**
     * The medoid key of {@code cluster}: {@code kvHeads × headDim} floats, head after head (a copy,
     * allocated; for tools and tests, not the hot path).
     */
    public float[] medoidKey(int cluster) {
        float[] k = new float[row];
        medoidKey(cluster, k);
        return k;
    }

    /**
     * {@link #medoidKey(int)} into {@code dst[0 .. kvHeads × headDim)}, allocating nothing.
     *
     * @throws IllegalArgumentException if {@code cluster} is out of range or {@code dst} is too short
     */
    public void medoidKey(int cluster, float[] dst) {
        Checks.index("cluster", cluster, clusters);
        Checks.notNull("dst", dst);
        if (dst.length < row) {
            throw new IllegalArgumentException("dst.length = " + dst.length + " is too small; allowed: at least "
                    + "kvHeads × headDim = " + row);
        }
        checkOpen();
        for (int d = 0; d < row; d++) {
            dst[d] = keys.getAtIndex(F32, (long) d * capacity + cluster);
        }
    }

    /** Bytes of medoid keys that one scoring pass reads: {@code 4 × kvHeads × headDim × clusterCount()}. */
    public long keyBytes() {
        return 4L * row * clusters;
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
        score(query, scratch, scores, null);
    }

    /**
     * {@link #score(float[], float[], float[])}, running {@code betweenChunks} (when not null) after
     * each chunk of {@value #CHUNK} clusters: the decoder lets its I/O queue refill there, since a
     * large layer's scoring pass takes milliseconds.
     */
    public void score(float[] query, float[] scratch, float[] scores, Runnable betweenChunks) {
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
        long cap = capacity;
        for (int c0 = 0; c0 < clusters; c0 += CHUNK) {
            int n = Math.min(CHUNK, clusters - c0);
            Arrays.fill(scores, c0, c0 + n, 0f);
            for (int d = 0; d < row; d++) {
                float q = scratch[d];
                long base = d * cap + c0;
                for (int c = 0; c < n; c++) {
                    scores[c0 + c] += q * k.getAtIndex(F32, base + c);
                }
            }
            for (int c = c0; c < c0 + n; c++) {
                scores[c] *= scale;
            }
            if (betweenChunks != null) {
                betweenChunks.run();
            }
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
        for (int i = 0; i < n; i++) {
            for (int d = 0; d < row; d++) {
                this.keys.setAtIndex(F32, (long) d * capacity + clusters + i, keys[i * row + d]);
            }
        }
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
        for (int d = 0; d < row; d++) { // each dimension's row moves to its new stride
            MemorySegment.copy(keys, 4L * d * capacity, seg, 4L * d * target, 4L * clusters);
        }
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
     * appending and {@link #medoidKey} throw. Idempotent.
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
