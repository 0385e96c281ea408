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
 * heads) holds element {@code d} of every cluster's medoid key (BF16 or float32, native order; see
 * "Element width"), cluster after cluster: element {@code (c, d)} is at element index
 * {@code d × capacity() + c}. Scoring is GQA-aware:
 * the query heads sharing a KV head are summed first, so the score of a cluster is the sum over all
 * query heads of the logit {@code q_h·k_medoid/√headDim}, at the cost of one dot product per KV head.
 *
 * <p><b>Scoring speed.</b> {@link #score(float[], float[], float[])} is the decode hot path: it
 * allocates nothing and reads every medoid key once, so from a few thousand clusters on it is bound
 * by memory bandwidth (Llama-3-8B layer: 2 KiB of BF16 keys per cluster). The layout makes the scores of
 * a chunk of clusters, for each dimension {@code d}, the update {@code acc[c] += q[d] · K[d][c]} over
 * the chunk — a loop without a reduction, which C2 compiles to SIMD instructions, while the chunk's
 * accumulators stay in the L1 cache. (A token-major layout needs one dot product per cluster: a float
 * reduction, which Java's left-to-right addition order keeps C2 from vectorising.) Each cluster's
 * products are added in dimension order, so a score is exactly the left-to-right sum of the
 * definition above.
 *
 * <p><b>Element width.</b> A key element is stored as the upper 16 bits of its float (BF16) when
 * that is exact for every medoid, as it is for a BF16 layer, whose keys are BF16 values: half the
 * bytes for scoring to read, and the same floats (a BF16 value widens to exactly the float it came
 * from), so the scores are bit for bit those of float storage. Otherwise (F16 or F32 layers) the
 * elements are floats. An append of a key that BF16 cannot hold exactly widens the storage to floats
 * once, at the cost of one move.
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
    private static final ValueLayout.OfShort BF16 = ValueLayout.JAVA_SHORT;

    private final Clustering clustering;
    private final int kvHeads;
    private final int headDim;
    private final int queryHeads;
    private final int row; // floats per cluster: kvHeads × headDim
    private final float scale;
    /** Clusters per scoring chunk: their accumulators (4 KiB) stay in the L1 cache across a sweep. */
    private static final int CHUNK = 1024;

    private MemorySegment keys;      // row × capacity elements, dimension-major; the first clusters of each row are in use
    private boolean bf16;            // elements are BF16 (the floats' upper halves, exact), else floats
    private int capacity;            // clusters the segment has room for
    private int clusters;            // offline + appended
    private int[] appendedMedoids = new int[0];
    private Arena owned;             // holds `keys` once an append moved them; null before
    private boolean closed;

    private MedoidIndex(Clustering clustering, MemorySegment keys, boolean bf16, int kvHeads, int headDim,
            int queryHeads) {
        this.clustering = clustering;
        this.keys = keys;
        this.bf16 = bf16;
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
        Checks.queryHeads(queryHeads, kv);
        long row = (long) kv * d;
        long n = clustering.clusterCount();
        // BF16 until a key element is not exactly a BF16 value; then floats, the elements so far widened.
        MemorySegment seg = arena.allocate(Math.max(4, 2L * row * n), 64);
        boolean bf16 = true;
        float[] buf = new float[d];
        for (int c = 0; c < n; c++) {
            int m = clustering.medoid(c);
            for (int h = 0; h < kv; h++) {
                keys.keys(h, m, 1, buf, 0);
                for (int i = 0; i < d; i++) {
                    long at = ((long) h * d + i) * n + c;
                    if (bf16 && !isBf16(buf[i])) {
                        MemorySegment wide = arena.allocate(Math.max(4, 4L * row * n), 64);
                        widen(seg, wide, row * n);
                        seg = wide;
                        bf16 = false;
                    }
                    put(seg, bf16, at, buf[i]);
                }
            }
        }
        return new MedoidIndex(clustering, seg, bf16, kv, d, queryHeads);
    }

    /** Whether {@code v} is exactly a BF16 value (the lower half of its bits is zero). */
    private static boolean isBf16(float v) {
        return (Float.floatToRawIntBits(v) & 0xFFFF) == 0;
    }

    private static void put(MemorySegment seg, boolean bf16, long index, float v) {
        if (bf16) {
            seg.setAtIndex(BF16, index, (short) (Float.floatToRawIntBits(v) >>> 16));
        } else {
            seg.setAtIndex(F32, index, v);
        }
    }

    private static float get(MemorySegment seg, boolean bf16, long index) {
        return bf16 ? Float.intBitsToFloat(seg.getAtIndex(BF16, index) << 16) : seg.getAtIndex(F32, index);
    }

    /** Elements {@code [0, count)} of BF16 {@code from} as floats into {@code to}. */
    private static void widen(MemorySegment from, MemorySegment to, long count) {
        for (long i = 0; i < count; i++) {
            to.setAtIndex(F32, i, Float.intBitsToFloat(from.getAtIndex(BF16, i) << 16));
        }
    }

    /** Bytes per stored key element: 2 (BF16) or 4 (float); see the class comment. */
    public int elementBytes() {
        return bf16 ? 2 : 4;
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
            dst[d] = get(keys, bf16, (long) d * capacity + cluster);
        }
    }

    /** Bytes of medoid keys that one scoring pass reads: {@code elementBytes() × kvHeads × headDim × clusterCount()}. */
    public long keyBytes() {
        return (long) elementBytes() * row * clusters;
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
        return Math.max(4, (long) elementBytes() * row * capacity) + 4L * clustering.memberships() + 4L * (offline + 1) + 4L * offline
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
        Checks.queryRows(query, queryHeads, headDim);
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
            // Two loops, not a branch per element: each compiles to SIMD (a BF16 element widens
            // exactly). Four dimensions per sweep: the chunk's scores are loaded and stored a quarter
            // as often, and each cluster still adds its products in dimension order.
            int d = 0;
            if (bf16) {
                for (; d + 4 <= row; d += 4) {
                    float q0 = scratch[d], q1 = scratch[d + 1], q2 = scratch[d + 2], q3 = scratch[d + 3];
                    long b0 = d * cap + c0, b1 = b0 + cap, b2 = b1 + cap, b3 = b2 + cap;
                    for (int c = 0; c < n; c++) {
                        float t = scores[c0 + c];
                        t += q0 * Float.intBitsToFloat(k.getAtIndex(BF16, b0 + c) << 16);
                        t += q1 * Float.intBitsToFloat(k.getAtIndex(BF16, b1 + c) << 16);
                        t += q2 * Float.intBitsToFloat(k.getAtIndex(BF16, b2 + c) << 16);
                        t += q3 * Float.intBitsToFloat(k.getAtIndex(BF16, b3 + c) << 16);
                        scores[c0 + c] = t;
                    }
                }
                for (; d < row; d++) {
                    float q = scratch[d];
                    long base = d * cap + c0;
                    for (int c = 0; c < n; c++) {
                        scores[c0 + c] += q * Float.intBitsToFloat(k.getAtIndex(BF16, base + c) << 16);
                    }
                }
            } else {
                for (; d + 4 <= row; d += 4) {
                    float q0 = scratch[d], q1 = scratch[d + 1], q2 = scratch[d + 2], q3 = scratch[d + 3];
                    long b0 = d * cap + c0, b1 = b0 + cap, b2 = b1 + cap, b3 = b2 + cap;
                    for (int c = 0; c < n; c++) {
                        float t = scores[c0 + c];
                        t += q0 * k.getAtIndex(F32, b0 + c);
                        t += q1 * k.getAtIndex(F32, b1 + c);
                        t += q2 * k.getAtIndex(F32, b2 + c);
                        t += q3 * k.getAtIndex(F32, b3 + c);
                        scores[c0 + c] = t;
                    }
                }
                for (; d < row; d++) {
                    float q = scratch[d];
                    long base = d * cap + c0;
                    for (int c = 0; c < n; c++) {
                        scores[c0 + c] += q * k.getAtIndex(F32, base + c);
                    }
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
        if (bf16) {
            for (float v : keys) {
                if (!isBf16(v)) {
                    move(capacity, false); // once: later appends find float storage
                    break;
                }
            }
        }
        for (int i = 0; i < n; i++) {
            for (int d = 0; d < row; d++) {
                put(this.keys, bf16, (long) d * capacity + clusters + i, keys[i * row + d]);
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
        move(target, bf16);
    }

    /** Moves the keys into a segment the index owns, of {@code target} clusters' capacity, BF16 or floats. */
    private void move(int target, boolean toBf16) {
        Arena next = Arena.ofShared(); // shared: the decoder thread that scores is not the builder's
        MemorySegment seg;
        try {
            seg = next.allocate(Math.max(4, (toBf16 ? 2L : 4L) * row * target), 64);
        } catch (RuntimeException | OutOfMemoryError e) {
            next.close();
            throw e;
        }
        int from = elementBytes();
        for (int d = 0; d < row; d++) { // each dimension's row moves to its new stride
            if (toBf16 == bf16) {
                MemorySegment.copy(keys, (long) from * d * capacity, seg, (long) from * d * target, (long) from * clusters);
            } else { // only ever widened: BF16 to floats
                for (int c = 0; c < clusters; c++) {
                    seg.setAtIndex(F32, (long) d * target + c, get(keys, bf16, (long) d * capacity + c));
                }
            }
        }
        bf16 = toBf16;
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
