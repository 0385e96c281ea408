package io.kvoffload.internal.baseline;

import io.kvoffload.internal.util.PartialTopK;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.strategy.LayerKv;
import java.util.SplittableRandom;

/**
 * PQCache (product quantisation of the keys): per KV head, each key is split into
 * {@code subspaces} (2) sub-vectors and each sub-vector is replaced by the id of the nearest of
 * {@code centroids} (64) k-means centroids trained on the prefill keys, the attention sinks aside.
 * A query scores a token as {@code Σ_sub q_sub·centroid_sub[code_sub(t)]}, looked up from a table of
 * {@code subspaces × centroids} dot products per step. The top tokens by that score are fetched, and
 * the {@code sinks} (32) first tokens and the newest {@code localWindow} tokens always are.
 *
 * <h2>Mapping to this library</h2>
 * <ul>
 * <li><b>Budget.</b> PQCache fetches the top 5% of the tokens; here the budget decides: the sinks and
 *     the window count against it and the rest goes to the best-scoring tokens between them.</li>
 * <li><b>Training.</b> k-means (L2, {@link KMeans}) runs on at most {@code trainSample} randomly
 *     chosen non-sink keys (PQCache also bounds its clustering work to keep it off the critical path);
 *     then every non-sink key is encoded.</li>
 * <li><b>GQA.</b> The query heads of a KV head are summed before the table lookup, and the KV heads'
 *     scores are added.</li>
 * </ul>
 *
 * <p>Index: one byte per token, KV head and sub-space plus the float32 codebooks; every step reads
 * the codes of the tokens between the sinks and the window, and the codebooks.
 */
public final class PQCacheSelector extends AbstractSelector {
    /** Attention sinks: always kept, left out of training. */
    public static final int DEFAULT_SINKS = 32;
    /** Sub-vectors per key. */
    public static final int DEFAULT_SUBSPACES = 2;
    /** Centroids per sub-space. */
    public static final int DEFAULT_CENTROIDS = 64;
    /** Lloyd iterations. */
    public static final int DEFAULT_ITERATIONS = 10;
    /** Most keys k-means trains on. */
    public static final int DEFAULT_TRAIN_SAMPLE = 8192;

    private final int subspaces;
    private final int subDim;
    private final int centroids;           // per sub-space (may be fewer than asked on a short layer)
    private final float[][] codebooks;     // [kvHead × subspaces + s]: centroids × subDim
    private final byte[][] codes;          // [kvHead × subspaces + s]: tokens
    private final float[][] table;         // [kvHead × subspaces + s]: centroids, per step
    private final float[] scores;
    private final int from;                // first scored token (after the sinks)
    private final int to;                  // end of the scored tokens (start of the window)
    private final PartialTopK topK;

    /** PQCache's defaults: 32 sinks, 2 sub-spaces of 64 centroids, 10 Lloyd iterations on up to 8192 keys. */
    public PQCacheSelector(LayerKv kv, int queryHeads, int localWindow, long seed) {
        this(kv, queryHeads, DEFAULT_SINKS, localWindow, DEFAULT_SUBSPACES, DEFAULT_CENTROIDS, DEFAULT_ITERATIONS,
                DEFAULT_TRAIN_SAMPLE, seed);
    }

    /**
     * @param sinks first tokens always kept and left out of training, 0..2^30
     * @param localWindow newest tokens always kept, 0..2^30
     * @param subspaces sub-vectors per key, 1..headDim, dividing headDim
     * @param centroids centroids per sub-space, 1..256 (codes are bytes)
     * @param iterations Lloyd iterations, 0..1000
     * @param trainSample most keys k-means trains on, 1..2^30
     * @param seed seed of the k-means initialisation and sample
     */
    public PQCacheSelector(LayerKv kv, int queryHeads, int sinks, int localWindow, int subspaces, int centroids,
            int iterations, int trainSample, long seed) {
        super(kv, queryHeads);
        Checks.inRange("sinks", sinks, 0, 1 << 30);
        Checks.inRange("localWindow", localWindow, 0, 1 << 30);
        Checks.inRange("subspaces", subspaces, 1, headDim);
        if (headDim % subspaces != 0) {
            throw new IllegalArgumentException("subspaces = " + subspaces + " must divide headDim = " + headDim);
        }
        Checks.inRange("centroids", centroids, 1, 256);
        Checks.inRange("iterations", iterations, 0, 1000);
        Checks.inRange("trainSample", trainSample, 1, 1 << 30);
        this.subspaces = subspaces;
        this.subDim = headDim / subspaces;
        this.from = Math.min(sinks, tokens);
        this.to = Math.max(from, tokens - Math.min(localWindow, tokens));
        int train = tokens - from; // every key but the sinks
        this.centroids = Math.max(1, Math.min(centroids, Math.min(train, trainSample)));
        int units = kvHeads * subspaces;
        this.codebooks = new float[units][];
        this.codes = new byte[units][tokens];
        this.table = new float[units][this.centroids];
        for (int h = 0; h < kvHeads; h++) {
            float[] k = headKeys(kv, h);
            for (int s = 0; s < subspaces; s++) {
                int u = h * subspaces + s;
                if (train == 0) { // nothing to quantise: every token is a sink
                    codebooks[u] = new float[subDim];
                    continue;
                }
                int base = from * headDim + s * subDim; // sub-vector s of token `from`
                // Mix the unit into the seed so sub-spaces and heads draw different samples.
                SplittableRandom rnd = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + u);
                int[] all = KMeans.identity(train);
                float[] c = KMeans.lloyd(k, base, headDim, subDim, KMeans.sample(all, trainSample, rnd), this.centroids,
                        iterations, rnd);
                codebooks[u] = c;
                int[] label = KMeans.assign(k, base, headDim, subDim, all, c, this.centroids, false);
                for (int i = 0; i < train; i++) {
                    codes[u][from + i] = (byte) label[i];
                }
            }
        }
        this.scores = new float[tokens];
        this.topK = new PartialTopK(tokens);
    }

    @Override
    public String name() {
        return "pqcache";
    }

    /** Tokens always kept: the sinks and the local window. */
    public int fixedTokens() {
        return from + (tokens - to);
    }

    /** The code of {@code token}'s sub-vector {@code subspace} in {@code kvHead} (0 for a sink). */
    public int code(int kvHead, int subspace, int token) {
        Checks.index("kvHead", kvHead, kvHeads);
        Checks.index("subspace", subspace, subspaces);
        Checks.index("token", token, tokens);
        return codes[kvHead * subspaces + subspace][token] & 0xFF;
    }

    @Override
    public int select(float[] query, int budgetTokens, int[] out) {
        checkSelect(query, budgetTokens, out);
        int dynamic = budgetTokens >= tokens ? to - from : Math.min(to - from, Math.max(0, budgetTokens - fixedTokens()));
        int n = range(out, 0, 0, from);
        if (dynamic > 0) {
            score(query);
            n += topK.top(scores, from, to, dynamic, out, n);
            lastScoredBytes = scoredBytes();
        } else {
            lastScoredBytes = 0;
        }
        return range(out, n, to, tokens);
    }

    /**
     * PQCache's sinks and window inside {@code [from, to)} first, then the best-scoring tokens
     * between them.
     */
    @Override
    public int selectBetween(float[] query, int budgetTokens, int from, int to, int[] out) {
        checkBetween(query, budgetTokens, from, to, out);
        int limit = Math.min(budgetTokens, to - from);
        int n = keep(out, 0, limit, 0, this.from, from, to);
        n = keep(out, n, limit, this.to, tokens, from, to);
        int lo = Math.max(from, this.from), hi = Math.min(to, this.to);
        if (n == limit || lo >= hi) {
            lastScoredBytes = 0;
            return n;
        }
        score(query);
        lastScoredBytes = scoredBytes();
        return n + topK.top(scores, lo, hi, limit - n, out, n);
    }

    /** What a step's scoring reads: the codes between the sinks and the window, and the codebooks. */
    private long scoredBytes() {
        return (long) (to - from) * kvHeads * subspaces + 4L * kvHeads * subspaces * centroids * subDim;
    }

    /**
     * The approximate score of every token between the sinks and the window into {@code dst} (at
     * least {@link #tokens()} long; other entries are set to 0): {@code Σ_kvHeads Σ_sub
     * q̄_sub·centroid[code]/√d}.
     */
    public void tokenScores(float[] query, float[] dst) {
        checkTokenScores(query, dst);
        score(query);
        copyScores(scores, dst, from, to);
    }

    /** Approximate scores of the tokens between the sinks and the window into {@link #scores}. */
    private void score(float[] query) {
        sumGroups(query);
        for (int h = 0; h < kvHeads; h++) {
            for (int s = 0; s < subspaces; s++) {
                int u = h * subspaces + s;
                float[] c = codebooks[u], tab = table[u];
                int q0 = h * headDim + s * subDim;
                for (int j = 0; j < centroids; j++) {
                    tab[j] = scale * dot(groupQuery, q0, c, j * subDim, subDim);
                }
            }
        }
        java.util.Arrays.fill(scores, from, to, 0f);
        for (int u = 0; u < table.length; u++) { // one code array at a time: sequential reads
            float[] tab = table[u];
            byte[] code = codes[u];
            for (int t = from; t < to; t++) {
                scores[t] += tab[code[t] & 0xFF];
            }
        }
    }

    @Override
    public int maxSelected(int budgetTokens) {
        checkBudget(budgetTokens);
        return budgetTokens >= tokens ? tokens : Math.min(tokens, Math.max(budgetTokens, fixedTokens()));
    }

    /** Codes (one byte per token, KV head and sub-space) plus the float32 codebooks. */
    @Override
    public long indexBytes() {
        return (long) tokens * kvHeads * subspaces + 4L * kvHeads * subspaces * centroids * subDim;
    }
}
