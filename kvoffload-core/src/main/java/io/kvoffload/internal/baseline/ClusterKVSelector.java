package io.kvoffload.internal.baseline;

import io.kvoffload.internal.util.PartialTopK;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.strategy.LayerKv;

/**
 * ClusterKV (recallable compression in semantic space): per KV head, the keys after the first
 * {@code sinks} tokens are clustered by k-means; every key is then assigned to the centroid with the
 * highest cosine similarity. A query ranks clusters by {@code q·centroid} and takes them best-first
 * until the budget is filled, the last cluster truncated; the sinks are always kept and count against
 * the budget. This follows ClusterKV's public code: centroids from an L2 k-means fit, cosine
 * assignment, {@code q·centroid} with the raw centroid, tokens truncated at {@code budget − sinks}
 * in cluster order with a cluster's members in position order.
 *
 * <h2>Mapping to this library</h2>
 * <ul>
 * <li><b>GQA.</b> ClusterKV selects per query head. Here each token's score is the sum over KV heads
 *     of its cluster's {@code q̄·centroid/√d} ({@code q̄} the sum of the KV head's query heads), and the
 *     top {@code budget − sinks} tokens win with ties to the lower position. With one KV head that is
 *     exactly "clusters in score order, last one truncated, members in position order".</li>
 * <li><b>Clusters.</b> {@code ⌈(tokens − sinks) / tokensPerCluster⌉} per KV head (default 80 tokens
 *     per cluster; the public code leaves the count to the caller). Above 64 clusters k-means trains in
 *     two levels ({@link KMeans}); the final cosine assignment is exact over all centroids.</li>
 * </ul>
 *
 * <p>Index: float32 centroids plus one int cluster id per token and KV head.
 */
public final class ClusterKVSelector extends AbstractSelector {
    /** First tokens kept and left out of the clustering. */
    public static final int DEFAULT_SINKS = 16;
    /** Average cluster size that sets the cluster count (our choice; the public code leaves it to the caller). */
    public static final int DEFAULT_TOKENS_PER_CLUSTER = 80;
    /** Lloyd iterations per level. */
    public static final int DEFAULT_ITERATIONS = 8;
    /** Most keys one Lloyd run trains on. */
    public static final int DEFAULT_TRAIN_SAMPLE = 16384;

    private final int sinks;
    private final int[] clusters;        // per KV head
    private final float[][] centroids;   // per KV head: clusters × headDim
    private final int[][] assignment;    // per KV head: cluster of token sinks + i
    private final float[][] clusterScores;
    private final float[] scores;
    private final PartialTopK topK;

    /** ClusterKV with 16 sinks, about 80 tokens per cluster and 8 Lloyd iterations on up to 16384 keys per run. */
    public ClusterKVSelector(LayerKv kv, int queryHeads, long seed) {
        this(kv, queryHeads, DEFAULT_SINKS, DEFAULT_TOKENS_PER_CLUSTER, DEFAULT_ITERATIONS, DEFAULT_TRAIN_SAMPLE, seed);
    }

    /**
     * @param sinks first tokens always kept and not clustered, 0..2^30
     * @param tokensPerCluster average cluster size that sets the cluster count, 1..2^20
     * @param iterations Lloyd iterations per level, 0..1000
     * @param trainSample most keys one Lloyd run trains on, 1..2^30
     * @param seed seed of the k-means initialisation and samples
     */
    public ClusterKVSelector(LayerKv kv, int queryHeads, int sinks, int tokensPerCluster, int iterations, int trainSample,
            long seed) {
        super(kv, queryHeads);
        this.sinks = Math.min(Checks.inRange("sinks", sinks, 0, 1 << 30), tokens);
        Checks.inRange("tokensPerCluster", tokensPerCluster, 1, 1 << 20);
        Checks.inRange("iterations", iterations, 0, 1000);
        Checks.inRange("trainSample", trainSample, 1, 1 << 30);
        int m = tokens - this.sinks;
        this.clusters = new int[kvHeads];
        this.centroids = new float[kvHeads][];
        this.assignment = new int[kvHeads][];
        for (int h = 0; h < kvHeads; h++) {
            if (m == 0) {
                centroids[h] = new float[0];
                assignment[h] = new int[0];
                continue;
            }
            float[] k = headKeys(kv, h);
            int want = (m + tokensPerCluster - 1) / tokensPerCluster;
            float[] c = KMeans.fit(k, this.sinks * headDim, headDim, m, headDim, want, iterations,
                    trainSample, seed * 0x9E3779B97F4A7C15L + h);
            clusters[h] = c.length / headDim;
            centroids[h] = c;
            assignment[h] = KMeans.assign(k, this.sinks * headDim, headDim, headDim, KMeans.identity(m), c, clusters[h], true);
        }
        this.clusterScores = new float[kvHeads][];
        for (int h = 0; h < kvHeads; h++) {
            clusterScores[h] = new float[clusters[h]];
        }
        this.scores = new float[tokens];
        this.topK = new PartialTopK(tokens);
    }

    @Override
    public String name() {
        return "clusterkv";
    }

    /** Clusters of {@code kvHead}. */
    public int clusters(int kvHead) {
        return clusters[Checks.index("kvHead", kvHead, kvHeads)];
    }

    /** The cluster of {@code token} in {@code kvHead}, or −1 for a sink. */
    public int clusterOf(int kvHead, int token) {
        Checks.index("kvHead", kvHead, kvHeads);
        Checks.index("token", token, tokens);
        return token < sinks ? -1 : assignment[kvHead][token - sinks];
    }

    @Override
    public int select(float[] query, int budgetTokens, int[] out) {
        checkSelect(query, budgetTokens, out);
        int n = range(out, 0, 0, sinks);
        int dynamic = Math.min(tokens - sinks, Math.max(0, budgetTokens - sinks));
        if (dynamic == 0) {
            lastScoredBytes = 0;
            return n;
        }
        lastScoredBytes = score(query);
        return n + topK.top(scores, sinks, tokens, dynamic, out, n);
    }

    /** ClusterKV's sinks inside {@code [from, to)} first, then the best-scoring tokens of the rest. */
    @Override
    public int selectBetween(float[] query, int budgetTokens, int from, int to, int[] out) {
        checkBetween(query, budgetTokens, from, to, out);
        int limit = Math.min(budgetTokens, to - from);
        int n = keep(out, 0, limit, 0, sinks, from, to);
        int lo = Math.max(from, Math.min(sinks, to));
        if (n == limit || lo >= to) {
            lastScoredBytes = 0;
            return n;
        }
        lastScoredBytes = score(query);
        return n + topK.top(scores, lo, to, limit - n, out, n);
    }

    /**
     * Every non-sink token's score into {@code dst} (at least {@link #tokens()} long; sinks get 0): the
     * sum over KV heads of its cluster's {@code q̄·centroid/√d}.
     */
    public void tokenScores(float[] query, float[] dst) {
        checkTokenScores(query, dst);
        score(query);
        copyScores(scores, dst, sinks, tokens);
    }

    /** Fills {@link #scores} for the non-sink tokens; returns the index bytes read. */
    private long score(float[] query) {
        sumGroups(query);
        long bytes = 0;
        java.util.Arrays.fill(scores, sinks, tokens, 0f);
        for (int h = 0; h < kvHeads; h++) {
            float[] cs = clusterScores[h], c = centroids[h];
            for (int j = 0; j < cs.length; j++) {
                cs[j] = scale * dot(groupQuery, h * headDim, c, j * headDim, headDim);
            }
            int[] a = assignment[h];
            for (int i = 0; i < a.length; i++) {
                scores[sinks + i] += cs[a[i]];
            }
            bytes += 4L * c.length + 4L * a.length;
        }
        return bytes;
    }

    @Override
    public int maxSelected(int budgetTokens) {
        checkBudget(budgetTokens);
        return Math.min(tokens, Math.max(budgetTokens, sinks));
    }

    /** Float32 centroids plus one int per token and KV head. */
    @Override
    public long indexBytes() {
        long b = 0;
        for (int h = 0; h < kvHeads; h++) {
            b += 4L * centroids[h].length + 4L * assignment[h].length;
        }
        return b;
    }
}
