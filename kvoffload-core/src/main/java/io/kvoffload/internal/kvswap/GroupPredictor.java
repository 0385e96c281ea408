package io.kvoffload.internal.kvswap;


import io.kvoffload.internal.select.TokenSelector;
import io.kvoffload.internal.select.UnitBudget;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.internal.util.PartialTopK;

/**
 * KVSwap's grouped critical-KV predictor (§3.3, Fig. 6; the artifact's {@code lr_proj_mh} mode):
 * <ol>
 * <li>the query heads of each GQA group are averaged into one query per KV head;</li>
 * <li>each KV head's query goes through its {@code d × r} block of the adapter, and the results are
 *     averaged over KV heads: one low-rank query ({@code Q_h·A_g(h)}, Eq. 1);</li>
 * <li>every token of the {@link CompressedKCache} is scored against it;</li>
 * <li>each group of {@code G} consecutive tokens is represented by its best token (ReduceMax);</li>
 * <li>the top {@code M = ⌈budget / G⌉} groups are kept (TopK).</li>
 * </ol>
 * A group is what the storage reads in one request ({@code [K of G tokens | V of G tokens]}), so
 * the output is whole groups: {@link #selectGroups} gives their ids, {@link #select} their token
 * positions. The last group may be partial when the cache's token count is not a multiple of G; its
 * positions are clipped to the cache.
 *
 * <h2>Determinism and cost</h2>
 * Top-M is a quickselect of the M-th best group score over a preallocated copy, then one pass:
 * expected {@code O(groups)}, no sort. Ties go to the lower group id and groups come out in
 * ascending id order, so the result equals {@code TopK.indices(groupScores, M)}. A NaN token score
 * never wins a group (a group of NaNs scores −∞). Scoring costs {@code tokens × r} multiply-adds.
 *
 * <p>{@link #select} and {@link #selectGroups} allocate nothing once the buffers cover the context:
 * they are sized for {@code expectedTokens} and grow by doubling when the context outgrows them.
 * One thread at a time.
 */
public final class GroupPredictor implements TokenSelector {
    /** The name used in configuration and reports. */
    public static final String NAME = "kvswap";

    private final CompressedKCache cache;
    private final LowRankAdapter adapter;
    private final int queryHeads;
    private final int kvHeads;
    private final int headDim;
    private final int gqa;
    private final int groupSize;
    private final float[] lowRankQuery;
    private final float[] meanQuery;
    private final float[] tokenScores = new float[CompressedKCache.CHUNK_TOKENS];
    private float[] groupScores;
    private PartialTopK topK;
    private int[] selected;
    private int selectedCount;
    private int scoredGroups;

    /**
     * @param cache the layer's compressed keys (appended to as the context grows)
     * @param queryHeads a positive multiple of the adapter's KV heads
     * @param groupSize G, 1..4096 tokens per group
     * @param expectedTokens context length to size the buffers for, 0..2^30
     */
    public GroupPredictor(CompressedKCache cache, int queryHeads, int groupSize, int expectedTokens) {
        this.cache = Checks.notNull("cache", cache);
        this.adapter = cache.adapter();
        this.kvHeads = adapter.kvHeads();
        this.headDim = adapter.headDim();
        Checks.queryHeads(queryHeads, kvHeads);
        this.queryHeads = queryHeads;
        this.gqa = queryHeads / kvHeads;
        this.groupSize = Checks.inRange("groupSize", groupSize, 1, 4096);
        Checks.inRange("expectedTokens", expectedTokens, 0, 1 << 30);
        this.lowRankQuery = new float[adapter.rank()];
        this.meanQuery = new float[headDim];
        int groups = Math.max(1, groupsOf(expectedTokens, groupSize));
        this.groupScores = new float[groups];
        this.topK = new PartialTopK(groups);
        this.selected = new int[groups];
    }

    /** A predictor sized for the cache's current tokens. */
    public GroupPredictor(CompressedKCache cache, int queryHeads, int groupSize) {
        this(cache, queryHeads, groupSize, Checks.notNull("cache", cache).tokens());
    }

    @Override
    public String name() {
        return NAME;
    }

    /** G: tokens per group. */
    public int groupSize() { return groupSize; }
    public int queryHeads() { return queryHeads; }
    public CompressedKCache cache() { return cache; }

    /** Groups the cache's tokens form now: {@code ⌈tokens / G⌉}. */
    public int groupCount() {
        return groupsOf(cache.tokens(), groupSize);
    }

    /** M for a token budget: {@code ⌈budgetTokens / G⌉} groups (exactly budget / G when G divides it). */
    public static int groupsFor(int budgetTokens, int groupSize) {
        Checks.inRange("budgetTokens", budgetTokens, 0, Integer.MAX_VALUE);
        Checks.inRange("groupSize", groupSize, 1, 4096);
        return groupsOf(budgetTokens, groupSize);
    }

    private static int groupsOf(int tokens, int groupSize) {
        return (int) (((long) tokens + groupSize - 1) / groupSize);
    }

    @Override
    public int maxSelected(int budgetTokens) {
        return (int) Math.min(Integer.MAX_VALUE - 8, (long) groupsFor(budgetTokens, groupSize) * groupSize);
    }

    @Override
    public long indexBytes() {
        return cache.bytes() + adapter.bytes();
    }

    // ---------------------------------------------------------------- selection

    /**
     * Selects the top {@code ⌈budgetTokens / G⌉} groups and writes their token positions, ascending,
     * into {@code out}; returns how many (fewer when the context has fewer tokens). The group ids
     * stay available through {@link #lastGroupCount()} and {@link #lastGroup(int)}.
     */
    @Override
    public int select(float[] query, int budgetTokens, int[] out) {
        Checks.notNull("out", out);
        int m = groupsFor(budgetTokens, groupSize);
        int n = selectGroups(query, m, null);
        int tokens = cache.tokens();
        int need = 0;
        for (int i = 0; i < n; i++) {
            need += Math.min(tokens, selected[i] * groupSize + groupSize) - selected[i] * groupSize;
        }
        if (out.length < need) {
            throw new IllegalArgumentException("out.length = " + out.length
                    + " is too small; allowed: at least " + need + " (maxSelected(" + budgetTokens + ") = "
                    + maxSelected(budgetTokens) + ")");
        }
        int w = 0;
        for (int i = 0; i < n; i++) {
            int first = selected[i] * groupSize;
            int end = Math.min(tokens, first + groupSize);
            for (int t = first; t < end; t++) {
                out[w++] = t;
            }
        }
        return w;
    }

    /**
     * Selects the top {@code groups} groups (M) for {@code query} and writes their ids, ascending,
     * into {@code out} (when not {@code null}); returns how many, {@code min(groups, groupCount())}.
     *
     * @param query {@code queryHeads × headDim} floats, head after head, finite
     * @param groups M, ≥ 0
     * @param out at least {@code min(groups, groupCount())} ints, or {@code null} to read them back
     *     through {@link #lastGroup(int)}
     */
    public int selectGroups(float[] query, int groups, int[] out) {
        Checks.inRange("groups", groups, 0, Integer.MAX_VALUE);
        scoreGroups(query);
        int total = scoredGroups;
        int m = Math.min(groups, total);
        if (out != null && out.length < m) {
            throw new IllegalArgumentException("out.length = " + out.length + " is too small; allowed: at least " + m);
        }
        if (m == total) {
            for (int g = 0; g < total; g++) {
                selected[g] = g;
            }
        } else if (m > 0) {
            topGroups(total, m);
        }
        selectedCount = m;
        if (out != null) {
            System.arraycopy(selected, 0, out, 0, m);
        }
        return m;
    }

    /**
     * Selects for a pipeline that already attends the tokens before {@code from} (its sinks) and from
     * {@code to} on (its window): the best-scoring groups that hold tokens of {@code [from, to)}, as
     * many as it takes for those tokens to reach {@code budget}, ids ascending into {@code out}. The
     * last group may bring up to G − 1 tokens more (a group is what KVSwap reads). Groups wholly in
     * the sinks or the window are not candidates: ranked among the rest, they cost rows of the budget
     * that the pipeline attends anyway ({@link UnitBudget#cover}).
     *
     * @param out room for {@code ⌈budget / G⌉ + 2} ids (the two groups the range cuts may hold fewer
     *     than G of its tokens)
     * @return how many groups were written
     */
    public int selectGroupsBetween(float[] query, int budget, int from, int to, int[] out) {
        Checks.inRange("budget", budget, 0, Integer.MAX_VALUE);
        scoreGroups(query);
        int c = UnitBudget.cover(topK, groupScores, 0, groupSize, cache.tokens(), budget, from, to, selected);
        Checks.capacity("out", out.length, c);
        System.arraycopy(selected, 0, out, 0, c);
        selectedCount = c;
        return c;
    }

    /** Groups chosen by the last {@link #select} or {@link #selectGroups} call. */
    public int lastGroupCount() {
        return selectedCount;
    }

    /** The {@code i}-th group id (ascending) chosen by the last call. */
    public int lastGroup(int i) {
        Checks.index("i", i, selectedCount);
        return selected[i];
    }

    /** The score of group {@code g} (its best token's approximate logit) from the last call. */
    public float groupScore(int g) {
        Checks.index("g", g, scoredGroups);
        return groupScores[g];
    }

    /** The low-rank query of the last call (the predictor's own array: tests only). */
    float[] lowRankQuery() {
        return lowRankQuery;
    }

    /** Computes the low-rank query and the score of every group (ReduceMax over G tokens). */
    void scoreGroups(float[] query) {
        Checks.notNull("query", query);
        Checks.queryRows(query, queryHeads, headDim);
        lowRankQueryOf(query);
        int tokens = cache.tokens();
        int groups = groupsOf(tokens, groupSize);
        ensureGroups(groups);
        float best = Float.NEGATIVE_INFINITY;
        int inGroup = 0;
        int g = 0;
        for (int from = 0; from < tokens; from += tokenScores.length) {
            int n = Math.min(tokenScores.length, tokens - from);
            cache.scores(lowRankQuery, from, n, tokenScores, 0);
            int i = 0;
            if (inGroup == 0) {
                // Whole groups without a per-token counter: the common case, chunks being
                // multiples of power-of-two group sizes.
                int whole = n / groupSize * groupSize;
                for (; i < whole; i += groupSize) {
                    float b = Float.NEGATIVE_INFINITY;
                    for (int k = i; k < i + groupSize; k++) {
                        float s = tokenScores[k];
                        b = s > b ? s : b; // NaN never wins
                    }
                    groupScores[g++] = b;
                }
            }
            for (; i < n; i++) { // a group that straddles chunks, or the partial last group
                float s = tokenScores[i];
                if (s > best) {
                    best = s;
                }
                if (++inGroup == groupSize) {
                    groupScores[g++] = best;
                    best = Float.NEGATIVE_INFINITY;
                    inGroup = 0;
                }
            }
        }
        if (inGroup > 0) {
            groupScores[g] = best; // the partial last group
        }
        scoredGroups = groups;
    }

    /** {@code (1/Hkv) Σ_h mean_{heads of h}(q) · A_h}, into {@link #lowRankQuery}. */
    private void lowRankQueryOf(float[] query) {
        java.util.Arrays.fill(lowRankQuery, 0f);
        float inv = 1f / gqa;
        float perHead = 1f / kvHeads;
        for (int h = 0; h < kvHeads; h++) {
            java.util.Arrays.fill(meanQuery, 0f);
            for (int g = 0; g < gqa; g++) {
                int off = (h * gqa + g) * headDim;
                for (int i = 0; i < headDim; i++) {
                    meanQuery[i] += query[off + i];
                }
            }
            for (int i = 0; i < headDim; i++) {
                float v = meanQuery[i] * inv;
                if (!Float.isFinite(v)) {
                    throw new IllegalArgumentException("query holds a non-finite value for KV head " + h
                            + " (mean element " + i + " = " + v + "); allowed: finite values");
                }
                meanQuery[i] = v;
            }
            adapter.accumulateHead(h, meanQuery, 0, perHead, lowRankQuery, 0);
        }
    }

    private void ensureGroups(int groups) {
        if (groups > groupScores.length) {
            int cap = Math.max(groups, groupScores.length * 2);
            groupScores = new float[cap];
            topK = new PartialTopK(cap);
            selected = new int[cap];
        }
    }

    /** The top {@code m} of {@code groupScores[0 .. total)} (0 < m < total), ascending ids, ties to the lower id. */
    private void topGroups(int total, int m) {
        topK.top(groupScores, 0, total, m, selected, 0);
    }

    @Override
    public String toString() {
        return "GroupPredictor{G=" + groupSize + ", queryHeads=" + queryHeads + ", " + cache + "}";
    }
}
