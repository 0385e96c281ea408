package io.kvoffload.internal.baseline;

import io.kvoffload.internal.select.UnitBudget;
import io.kvoffload.internal.util.PartialTopK;
import io.kvoffload.internal.util.TopK;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.strategy.LayerKv;

/**
 * InfLLM (training-free context memory): the first {@code initTokens} (128) tokens and the newest
 * {@code localWindow} tokens are always attended; the tokens between them are cut into blocks of
 * {@code blockSize} (128) consecutive tokens. Each block is represented by the mean key of its
 * {@code representatives} (4) tokens that the local window's queries attend to most, and a query
 * takes the blocks whose representative key scores best.
 *
 * <h2>Mapping to this library</h2>
 * <ul>
 * <li><b>Representatives.</b> InfLLM ranks a block's tokens by the attention they receive from the
 *     queries of the local window at the time the block leaves it, i.e. the queries of the tokens
 *     right after the block. A layer of keys has no prefill queries, so the keys of the
 *     {@code localWindow} tokens following the block stand in for them (with the local window clipped
 *     at the end of the context; a block with nothing after it uses its own keys). A token's
 *     representative score is {@code Σ_j k_t·k_j} over the stand-ins, computed as {@code k_t·Σ_j k_j}
 *     with a sliding sum, so building costs {@code O(tokens × headDim)} per KV head.</li>
 * <li><b>Block count.</b> InfLLM keeps a fixed top 16 blocks. To compare at equal budgets the
 *     default takes {@code ⌊(budget − init − window) / blockSize⌋} blocks, all of them when the budget
 *     covers the layer; passing {@code topBlocks = 16} to the full constructor restores InfLLM's
 *     fixed count.</li>
 * <li><b>GQA.</b> Representatives and block keys are per KV head; a block's score is the sum over KV
 *     heads of {@code q̄·blockKey/√d}, {@code q̄} the sum of the KV head's query heads (a mean of the
 *     query heads' block scores ranks the same).</li>
 * </ul>
 *
 * <p>Index: one float32 key per block and KV head. The initial tokens and the local window are KV
 * data InfLLM keeps resident, not index.
 */
public final class InfLLMSelector extends AbstractSelector {
    /** Initial tokens InfLLM always attends to. */
    public static final int DEFAULT_INIT_TOKENS = 128;
    /** Tokens per memory block. */
    public static final int DEFAULT_BLOCK_SIZE = 128;
    /** Representative tokens per block. */
    public static final int DEFAULT_REPRESENTATIVES = 4;
    /** InfLLM's fixed number of blocks per query. */
    public static final int DEFAULT_TOP_BLOCKS = 16;
    /** {@code topBlocks} value meaning "as many blocks as the budget pays for". */
    public static final int BUDGET_DERIVED = -1;

    private final int localWindow;
    private final int blockSize;
    private final int representatives;
    private final int topBlocks;
    private final int memoryFrom;  // first token of the first block
    private final int memoryTo;    // end of the last block = start of the local window
    private final int blocks;
    private final float[][] blockKeys; // per KV head: blocks × headDim
    private final float[] scores;
    private final int[] chosen;
    private final PartialTopK topK;
    private final UnitBudget budget;

    /** InfLLM's defaults (128 initial tokens, 128-token blocks, 4 representatives) with a budget-derived block count. */
    public InfLLMSelector(LayerKv kv, int queryHeads, int localWindow) {
        this(kv, queryHeads, DEFAULT_INIT_TOKENS, localWindow, DEFAULT_BLOCK_SIZE, DEFAULT_REPRESENTATIVES, BUDGET_DERIVED);
    }

    /**
     * @param initTokens initial tokens always kept, 0..2^30
     * @param localWindow newest tokens always kept (and the stand-in queries of a block), 0..2^30
     * @param blockSize tokens per block, 1..65536
     * @param representatives tokens whose keys represent a block, 1..blockSize
     * @param topBlocks blocks per query, 0..2^30, or {@link #BUDGET_DERIVED}
     */
    public InfLLMSelector(LayerKv kv, int queryHeads, int initTokens, int localWindow, int blockSize, int representatives,
            int topBlocks) {
        super(kv, queryHeads);
        Checks.inRange("initTokens", initTokens, 0, 1 << 30);
        this.localWindow = Checks.inRange("localWindow", localWindow, 0, 1 << 30);
        this.blockSize = Checks.inRange("blockSize", blockSize, 1, 65536);
        this.representatives = Checks.inRange("representatives", representatives, 1, blockSize);
        if (topBlocks != BUDGET_DERIVED) {
            Checks.inRange("topBlocks", topBlocks, 0, 1 << 30);
        }
        this.topBlocks = topBlocks;
        this.memoryFrom = Math.min(initTokens, tokens);
        this.memoryTo = Math.max(memoryFrom, tokens - Math.min(localWindow, tokens));
        this.blocks = (memoryTo - memoryFrom + blockSize - 1) / blockSize;
        this.blockKeys = new float[kvHeads][blocks * headDim];
        for (int h = 0; h < kvHeads; h++) {
            buildBlockKeys(headKeys(kv, h), blockKeys[h]);
        }
        this.scores = new float[blocks];
        this.chosen = new int[blocks];
        this.topK = new PartialTopK(blocks);
        this.budget = new UnitBudget(memoryFrom, blockSize, memoryTo);
    }

    private void buildBlockKeys(float[] k, float[] dst) {
        int d = headDim;
        int standIns = Math.max(1, localWindow);
        double[] window = new double[d]; // sliding sum of the stand-in queries' keys over [lo, hi)
        double[] own = new double[d];
        float[] standIn = new float[d];
        int lo = 0, hi = 0;
        int[] best = new int[representatives];
        float[] bestScore = new float[representatives];
        for (int b = 0; b < blocks; b++) {
            int from = memoryFrom + b * blockSize;
            int to = Math.min(memoryTo, from + blockSize);
            int wFrom = to, wTo = Math.min(tokens, to + standIns);
            if (wFrom < wTo) {
                if (hi <= wFrom) { // no overlap with the previous window: start afresh
                    java.util.Arrays.fill(window, 0);
                    lo = hi = wFrom;
                }
                while (hi < wTo) { // both ends only move forward, so building is linear in the tokens
                    add(window, k, hi++ * d, d, 1);
                }
                while (lo < wFrom) {
                    add(window, k, lo++ * d, d, -1);
                }
                for (int i = 0; i < d; i++) {
                    standIn[i] = (float) window[i];
                }
            } else { // nothing follows the block (no local window): its own keys stand in
                java.util.Arrays.fill(own, 0);
                for (int t = from; t < to; t++) {
                    add(own, k, t * d, d, 1);
                }
                for (int i = 0; i < d; i++) {
                    standIn[i] = (float) own[i];
                }
            }
            int kept = 0;
            for (int t = from; t < to; t++) { // the best `representatives` tokens, ties to the lower position
                kept = TopK.offer(bestScore, best, 0, kept, representatives, dot(k, t * d, standIn, 0, d), t);
            }
            int o = b * d;
            for (int r = 0; r < kept; r++) {
                for (int i = 0; i < d; i++) {
                    dst[o + i] += k[best[r] * d + i];
                }
            }
            for (int i = 0; i < d; i++) {
                dst[o + i] /= kept;
            }
        }
    }

    private static void add(double[] acc, float[] k, int off, int d, int sign) {
        for (int i = 0; i < d; i++) {
            acc[i] += sign * k[off + i];
        }
    }

    @Override
    public String name() {
        return "infllm";
    }

    /** Blocks between the initial tokens and the local window. */
    public int blocks() {
        return blocks;
    }

    /** Tokens always kept: the initial tokens and the local window. */
    public int fixedTokens() {
        return memoryFrom + (tokens - memoryTo);
    }

    /** Blocks taken for this budget. */
    public int blocksFor(int budgetTokens) {
        checkBudget(budgetTokens);
        if (topBlocks != BUDGET_DERIVED) {
            return Math.min(blocks, topBlocks);
        }
        if (budgetTokens >= tokens) {
            return blocks;
        }
        return Math.min(blocks, Math.max(0, budgetTokens - fixedTokens()) / blockSize);
    }

    @Override
    public int select(float[] query, int budgetTokens, int[] out) {
        checkSelect(query, budgetTokens, out);
        int take = blocksFor(budgetTokens);
        int n = range(out, 0, 0, memoryFrom);
        if (take > 0) {
            blockScores(query, scores);
            int c = topK.top(scores, 0, blocks, take, chosen, 0);
            for (int i = 0; i < c; i++) { // ascending blocks: positions come out ascending
                int from = memoryFrom + chosen[i] * blockSize;
                n = range(out, n, from, Math.min(memoryTo, from + blockSize));
            }
            lastScoredBytes = indexBytes();
        } else {
            lastScoredBytes = 0;
        }
        return range(out, n, memoryTo, tokens);
    }

    /**
     * The initial tokens and the local window inside {@code [from, to)} first (in a pipeline the
     * window is the pipeline's, so nothing of it is), then the best blocks (at most {@code
     * topBlocks} where it is fixed), the last one cut to the budget.
     */
    @Override
    public int selectBetween(float[] query, int budgetTokens, int from, int to, int[] out) {
        checkBetween(query, budgetTokens, from, to, out);
        int limit = Math.min(budgetTokens, to - from);
        int n = keep(out, 0, limit, 0, memoryFrom, from, to);
        n = keep(out, n, limit, memoryTo, tokens, from, to);
        int left = topBlocks == BUDGET_DERIVED ? limit - n : (int) Math.min(limit - n, (long) topBlocks * blockSize);
        lastScoredBytes = 0;
        if (left > 0 && blocks > 0) {
            blockScores(query, scores);
            lastScoredBytes = indexBytes();
            n = budget.take(scores, left, from, to, out, n);
        }
        return n;
    }

    /**
     * Every block's score into {@code dst} (at least {@link #blocks()} long): the sum over KV heads of
     * {@code q̄·blockKey/√d}.
     */
    public void blockScores(float[] query, float[] dst) {
        Checks.queryRows(query, queryHeads, headDim);
        Checks.capacity("dst", dst.length, blocks);
        sumGroups(query);
        int d = headDim;
        for (int b = 0; b < blocks; b++) {
            float s = 0;
            for (int h = 0; h < kvHeads; h++) {
                s += dot(groupQuery, h * d, blockKeys[h], b * d, d);
            }
            dst[b] = scale * s;
        }
    }

    @Override
    public int maxSelected(int budgetTokens) {
        return Math.min(tokens, fixedTokens() + blocksFor(budgetTokens) * blockSize);
    }

    /** One float32 key per block and KV head. */
    @Override
    public long indexBytes() {
        return 4L * blocks * kvHeads * headDim;
    }
}
