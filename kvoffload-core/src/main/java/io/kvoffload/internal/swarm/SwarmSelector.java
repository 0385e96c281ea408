package io.kvoffload.internal.swarm;

import io.kvoffload.internal.baseline.BaselineSelector;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.strategy.LayerKv;
import java.lang.foreign.Arena;
import java.util.BitSet;
import java.util.List;

/**
 * Swarm's online selection over its offline phase, as the comparison needs it: the attention sinks
 * and the local window are always selected (the engine keeps them in DRAM), then clusters are taken
 * in the order of their {@link MedoidIndex} score, whole, until the budget is filled (the last cluster
 * may overshoot it: a cluster is the unit Swarm reads). A token that several taken clusters hold
 * (a replica) is selected once.
 *
 * <p>Scores come from {@link MedoidIndex#score(float[], float[], float[])}, the index's allocation-free
 * scoring; the clusters are walked with {@link ClusterSelection#begin}/{@link ClusterSelection#next},
 * the same selection code the decoder's {@link SwarmLayer} runs, so the in-memory comparison and
 * the I/O path choose alike.
 *
 * <p>Index: {@link MedoidIndex#memoryBytes()} (medoid keys and route table); each step reads the
 * medoid keys.
 */
public final class SwarmSelector implements BaselineSelector {
    private final MedoidIndex index;
    private final Clustering clustering;
    private final long medoidKeyBytes;
    private final int tokens;
    private final int kvHeads;
    private final int headDim;
    private final int queryHeads;
    private final int sinkEnd;     // sinks are [0, sinkEnd)
    private final int windowFrom;  // the local window is [windowFrom, tokens)
    private final int pinned;
    private final int maxClusterSize;
    private final float[] summed;
    private final float[] scores;
    private final int[] sizes;
    private final ClusterSelection selection;
    private final int[] seen;      // per token: the step that last selected it
    private int epoch;
    private long lastScoredBytes;

    /**
     * @param index the layer's medoid index (its clustering covers every token)
     * @param sinks first tokens always selected, 0..2^30
     * @param localWindow newest tokens always selected, 0..2^30
     */
    public SwarmSelector(MedoidIndex index, int sinks, int localWindow) {
        Checks.notNull("index", index);
        Checks.inRange("sinks", sinks, 0, 1 << 30);
        Checks.inRange("localWindow", localWindow, 0, 1 << 30);
        this.index = index;
        this.clustering = index.clustering();
        if (index.clusterCount() != index.clustering().clusterCount()) {
            throw new IllegalArgumentException("index has " + index.clusterCount() + " clusters, "
                    + (index.clusterCount() - index.clustering().clusterCount()) + " of them appended; allowed: only the "
                    + "offline clustering's " + index.clustering().clusterCount() + " (this selector routes through it)");
        }
        this.medoidKeyBytes = index.keyBytes();
        this.tokens = clustering.entries();
        this.kvHeads = index.kvHeads();
        this.headDim = index.headDim();
        this.queryHeads = index.queryHeads();
        this.sinkEnd = Math.min(sinks, tokens);
        this.windowFrom = Math.max(sinkEnd, tokens - Math.min(localWindow, tokens));
        this.pinned = sinkEnd + (tokens - windowFrom);
        int most = 1;
        for (int c = 0; c < clustering.clusterCount(); c++) {
            most = Math.max(most, clustering.size(c));
        }
        this.maxClusterSize = most;
        this.summed = new float[kvHeads * headDim];
        this.scores = new float[clustering.clusterCount()];
        this.sizes = new int[clustering.clusterCount()];
        for (int c = 0; c < sizes.length; c++) {
            sizes[c] = clustering.size(c);
        }
        this.selection = new ClusterSelection(clustering.clusterCount());
        this.seen = new int[tokens];
    }

    /**
     * Runs Swarm's offline phase on one layer and wraps the result: a co-activation profile of
     * {@code profileQueries} (the top {@code sparsity} of each query's exact attention, sinks and
     * window excluded because they are pinned anyway), Algorithm 1 clustering and the medoid index.
     *
     * @param arena owns the medoid keys; the selector is usable until it closes
     */
    public static SwarmSelector build(LayerKv kv, int queryHeads, List<float[]> profileQueries, double sparsity,
            ClusteringConfig config, int sinks, int localWindow, Arena arena) {
        Checks.notNull("kv", kv);
        Checks.notNull("config", config);
        Checks.inRange("sinks", sinks, 0, 1 << 30);
        Checks.inRange("localWindow", localWindow, 0, 1 << 30);
        int n = kv.tokens();
        BitSet excluded = new BitSet(n);
        excluded.set(0, Math.min(sinks, n));
        excluded.set(Math.max(0, n - Math.min(localWindow, n)), n);
        if (excluded.cardinality() == n) {
            excluded = null; // nothing left to profile: every token is pinned anyway
        }
        CoActivationProfile profile = CoActivationProfile.fromQueries(kv, profileQueries, queryHeads, sparsity, excluded,
                CoActivationNormaliser.perQuery(), config.parallelism());
        Clustering clustering = new CoActivationClustering(config).cluster(profile);
        return new SwarmSelector(MedoidIndex.build(clustering, kv, queryHeads, arena), sinks, localWindow);
    }

    @Override
    public String name() {
        return "swarm";
    }

    @Override
    public int tokens() {
        return tokens;
    }

    public MedoidIndex index() {
        return index;
    }

    @Override
    public long lastScoredBytes() {
        return lastScoredBytes;
    }

    @Override
    public int select(float[] query, int budgetTokens, int[] out) {
        BaselineSelector.checkSelect(this, queryHeads, headDim, query, budgetTokens, out);
        if (++epoch == Integer.MAX_VALUE) { // stamps wrap after 2^31 steps: start over
            java.util.Arrays.fill(seen, 0);
            epoch = 1;
        }
        int n = 0;
        for (int t = 0; t < sinkEnd; t++) {
            seen[t] = epoch;
            out[n++] = t;
        }
        for (int t = windowFrom; t < tokens; t++) {
            seen[t] = epoch;
            out[n++] = t;
        }
        if (n >= budgetTokens) {
            lastScoredBytes = 0;
            return n;
        }
        score(query, scores);
        lastScoredBytes = medoidKeyBytes;
        selection.begin(scores, sizes, scores.length, budgetTokens - n);
        while (n < budgetTokens) {
            int c = selection.next();
            if (c < 0) {
                break;
            }
            int size = sizes[c];
            for (int i = 0; i < size; i++) {
                int t = clustering.member(c, i);
                if (seen[t] != epoch) {
                    seen[t] = epoch;
                    out[n++] = t;
                }
            }
        }
        return n;
    }

    /** Every cluster's score for {@code query} into {@code dst}: {@link MedoidIndex#score}'s, allocation-free. */
    public void score(float[] query, float[] dst) {
        Checks.notNull("dst", dst);
        if (dst.length < index.clusterCount()) { // named as this method names it
            throw new IllegalArgumentException("dst.length = " + dst.length + " is too small; allowed: at least "
                    + index.clusterCount());
        }
        index.score(query, summed, dst);
    }

    @Override
    public int maxSelected(int budgetTokens) {
        Checks.positive("budgetTokens", budgetTokens);
        if (budgetTokens >= tokens) {
            return tokens;
        }
        // Clusters are added while fewer than `budget` are selected, so the last one overshoots by
        // at most its size − 1.
        return (int) Math.min(tokens, Math.max(pinned, (long) budgetTokens - 1 + maxClusterSize));
    }

    @Override
    public long indexBytes() {
        return index.memoryBytes();
    }

    @Override
    public String toString() {
        return "swarm{tokens=" + tokens + ", clusters=" + clustering.clusterCount() + ", sinks=" + sinkEnd + ", window="
                + (tokens - windowFrom) + "}";
    }
}
