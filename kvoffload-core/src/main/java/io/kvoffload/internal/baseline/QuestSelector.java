package io.kvoffload.internal.baseline;

import io.kvoffload.internal.select.UnitBudget;
import io.kvoffload.internal.util.PartialTopK;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.strategy.LayerKv;

/**
 * Quest (query-aware page selection): the keys are cut into pages of 16 consecutive tokens and each
 * page keeps, per KV head and dimension, the largest key element {@code M_j} and the smallest
 * {@code m_j}. A page's score is {@code Σ_j max(q_j·M_j, q_j·m_j)}: no key of the page can score
 * more against {@code q}, so it is an upper bound of the page's best logit. The top
 * {@code max(3, budget / 16)} pages are fetched whole (every page when the budget covers the layer).
 *
 * <p>GQA: the query heads sharing a KV head are summed and the bound is taken for that sum, then the
 * KV heads' bounds are added, so a page's score bounds the largest summed logit
 * {@code Σ_h q_h·k_t/√d} of its tokens ({@link #pageScores}); Quest itself bounds each head
 * separately. The bound is computed branch-free as {@code q⁺·M + q⁻·m} with {@code q⁺ = max(q, 0)}
 * and {@code q⁻ = min(q, 0)}.
 *
 * <p>The index holds {@code M} and {@code m} as float32: {@code 2 × pages × kvHeads × headDim × 4}
 * bytes, an eighth of the float32 keys at 16-token pages; every step reads all of it.
 */
public final class QuestSelector extends AbstractSelector {
    /** Tokens per page in Quest's code. */
    public static final int DEFAULT_PAGE_SIZE = 16;
    /** Quest never keeps fewer pages. */
    public static final int MIN_PAGES = 3;

    private final int pageSize;
    private final int pages;
    private final float[][] max; // per KV head: pages × headDim
    private final float[][] min;
    private final float[] pos;   // per KV head: max(q, 0) × scale
    private final float[] neg;   // per KV head: min(q, 0) × scale
    private final float[] scores;
    private final int[] chosen;
    private final PartialTopK topK;
    private final UnitBudget budget;

    /** Quest with pages of {@value #DEFAULT_PAGE_SIZE} tokens. */
    public QuestSelector(LayerKv kv, int queryHeads) {
        this(kv, queryHeads, DEFAULT_PAGE_SIZE);
    }

    /**
     * @param kv the layer's keys
     * @param queryHeads a positive multiple of {@code kv.kvHeads()}
     * @param pageSize tokens per page, 1..65536
     */
    public QuestSelector(LayerKv kv, int queryHeads, int pageSize) {
        super(kv, queryHeads);
        this.pageSize = Checks.inRange("pageSize", pageSize, 1, 65536);
        this.pages = (tokens + pageSize - 1) / pageSize;
        this.max = new float[kvHeads][pages * headDim];
        this.min = new float[kvHeads][pages * headDim];
        int d = headDim;
        for (int h = 0; h < kvHeads; h++) {
            float[] k = headKeys(kv, h);
            float[] mx = max[h], mn = min[h];
            java.util.Arrays.fill(mx, Float.NEGATIVE_INFINITY);
            java.util.Arrays.fill(mn, Float.POSITIVE_INFINITY);
            for (int t = 0; t < tokens; t++) {
                int p = (t / pageSize) * d;
                for (int j = 0; j < d; j++) {
                    float v = k[t * d + j];
                    mx[p + j] = Math.max(mx[p + j], v);
                    mn[p + j] = Math.min(mn[p + j], v);
                }
            }
        }
        this.pos = new float[kvHeads * headDim];
        this.neg = new float[kvHeads * headDim];
        this.scores = new float[pages];
        this.chosen = new int[pages];
        this.topK = new PartialTopK(pages);
        this.budget = new UnitBudget(0, pageSize, tokens);
    }

    @Override
    public String name() {
        return "quest";
    }

    public int pageSize() {
        return pageSize;
    }

    public int pages() {
        return pages;
    }

    /** Pages Quest keeps for this budget: {@code max(3, budget / pageSize)}, all when the budget covers the layer. */
    public int pagesFor(int budgetTokens) {
        checkBudget(budgetTokens);
        return budgetTokens >= tokens ? pages : Math.min(pages, Math.max(MIN_PAGES, budgetTokens / pageSize));
    }

    @Override
    public int select(float[] query, int budgetTokens, int[] out) {
        checkSelect(query, budgetTokens, out);
        score(query);
        int p = topK.top(scores, 0, pages, pagesFor(budgetTokens), chosen, 0);
        int n = 0;
        for (int i = 0; i < p; i++) { // pages ascending, so positions come out ascending
            int from = chosen[i] * pageSize;
            n = range(out, n, from, Math.min(tokens, from + pageSize));
        }
        lastScoredBytes = indexBytes();
        return n;
    }

    /** The best pages overlapping {@code [from, to)}, their tokens in it, the last page cut to the budget. */
    @Override
    public int selectBetween(float[] query, int budgetTokens, int from, int to, int[] out) {
        checkBetween(query, budgetTokens, from, to, out);
        score(query);
        lastScoredBytes = indexBytes();
        return budget.take(scores, budgetTokens, from, to, out, 0);
    }

    /**
     * Every page's upper bound for {@code query} into {@code dst} (at least {@link #pages()} long):
     * {@code Σ_kvHeads Σ_j max(q̄_j M_j, q̄_j m_j) / √d}, {@code q̄} the sum of the KV head's query
     * heads. For every token {@code t} of page {@code p}, {@code dst[p] ≥ Σ_h q_h·k_t/√d} (up to
     * float rounding).
     */
    public void pageScores(float[] query, float[] dst) {
        Checks.queryRows(query, queryHeads, headDim);
        Checks.capacity("dst", dst.length, pages);
        score(query);
        System.arraycopy(scores, 0, dst, 0, pages);
    }

    private void score(float[] query) {
        sumGroups(query);
        for (int i = 0; i < groupQuery.length; i++) {
            float q = groupQuery[i] * scale;
            pos[i] = Math.max(q, 0f);
            neg[i] = Math.min(q, 0f);
        }
        java.util.Arrays.fill(scores, 0f);
        int d = headDim;
        for (int h = 0; h < kvHeads; h++) {
            float[] mx = max[h], mn = min[h];
            int q0 = h * d;
            for (int p = 0; p < pages; p++) {
                scores[p] += dot(pos, q0, mx, p * d, d) + dot(neg, q0, mn, p * d, d);
            }
        }
    }

    @Override
    public int maxSelected(int budgetTokens) {
        return budgetTokens >= tokens ? tokens : Math.min(tokens, pagesFor(budgetTokens) * pageSize);
    }

    /** Page maxima and minima, float32. */
    @Override
    public long indexBytes() {
        return 2L * 4 * pages * kvHeads * headDim;
    }
}
