package io.kvoffload.internal.swarm;

import io.kvoffload.internal.util.Checks;
import io.kvoffload.internal.util.Int8Rounding;
import io.kvoffload.internal.util.Softmax;
import io.kvoffload.strategy.LayerKv;
import io.kvoffload.strategy.LayoutUnits;

/**
 * Per-head attention-mass estimates of a layer's blocks (consecutive pages of {@code blockTokens}
 * tokens, Swarm's positional clusters): the DRAM index of {@link BlockMassStrategy}.
 *
 * <p><b>Summary.</b> Per block, per KV head and per dimension {@code j}: the largest key element
 * {@code M_j}, the smallest {@code m_j} (Quest's page bounds) and the mean {@code μ_j}, each int8 with one scale per head and
 * dimension ({@link Int8Rows}).
 * {@link Scoring#BOUND} scores a block for a query {@code q} by {@code Σ_j max(q_j M_j, q_j m_j)}, an
 * upper bound of every member's logit; {@link Scoring#MEAN} by {@code q·μ}, the members' mean logit;
 * {@link Scoring#MIX} by their average. MIX keeps no separate bound and mean: since
 * {@code ½ Σ_j max(q_j M_j, q_j m_j) + ½ q·μ = Σ_j q_j × (q_j ≥ 0 ? (M_j + μ_j)/2 : (m_j + μ_j)/2)}, it
 * stores the two averaged rows and a step reads one of them per dimension: half the bytes of reading
 * a bound and a mean, the same estimate up to int8 rounding.
 *
 * <p><b>Per-head mass.</b> Attention-mass recall averages each query head's softmax weights, so a
 * block matters in proportion to the share of each head's attention it draws, not to its summed
 * logit: a sharp retrieval head's one block outweighs a spread of mildly positive logits in the
 * other heads. With {@link Combination#HEAD_MASS} each KV head's block logits (from the mean of its
 * query heads) become a softmax over all blocks, weighted by the block's token count, and a block's
 * score is the sum of those shares over the KV heads. The blocks of the sinks and the window are in
 * the softmax's denominator (they are part of what the head attends), so a head that attends mostly
 * locally (a streaming head) gives the rest little weight and the budget goes to the heads that reach
 * far: the budget adapts to each head's concentration without a parameter. {@link
 * Combination#SUM_LOGITS} adds the logits over heads instead (what Swarm's medoid score and Quest do).
 *
 * <p><b>Query rows.</b> Under GQA the mean of a KV head's query heads blurs heads that attend apart:
 * a retrieval head's sharp query averaged with three that look elsewhere no longer finds its block.
 * {@link Combination#QUERY_HEAD_MASS} gives every query head its own softmax row ({@code groupSize}
 * times the sweep); {@link Combination#CLUSTERED_HEAD_MASS} merges each KV head's query heads, step
 * by step, into half as many rows, at most eight a KV head on average ({@link QueryRows#clusterRows}), by Ward's
 * criterion (heads whose queries lie close share a row; the others keep theirs), pooled over the layer's
 * KV heads so that the rows go where the heads differ, and weighs each row by its heads: most of the
 * per-query-head gain at half its sweep.
 *
 * <p><b>Cost.</b> The summaries are stored dimension-major ({@code [head][dim][block]}), so scoring
 * is, per dimension, one {@code acc[b] += c_j × x[b]} sweep that the JIT vectorises (no
 * reduction), over blocks in chunks that stay in the L1 cache; the sign of {@code q_j} picks the one
 * array of {@code M} or {@code m} (MIX: of the two averaged rows) that sweep reads, so a MIX or BOUND
 * step reads {@code kvHeads × headDim} bytes per block. With a prune bound (the library's {@code mass-mix}
 * uses {@link BlockMassStrategy#PRUNE_LOGIT}), each step first drops the terms {@code c × row_j} whose
 * reach {@code |c| × (max − min of row_j)} is smallest, as long as the dropped reaches sum to at most
 * the bound: no block's estimate moves against another's by more than that, and a step reads only
 * the rows it kept. {@link #score} allocates nothing.
 *
 * <p><b>Carried logits.</b> With {@link Scoring#MIX} and a mass combination, each query row keeps its
 * estimated logits from one step to the next ({@link CarriedLogits}) and a step sweeps only the change
 * of each term's coefficient, pruned by the same bound; where a query moved so far that its changes
 * would keep more terms than a fresh sweep, the row is swept fresh. Consecutive decoding queries are
 * alike, so a step sweeps fewer terms at the same guarantee; the estimate then depends on the
 * queries before it as well, within the bound.
 *
 * <p><b>Parts.</b> Where the step's sweep budget has room with the fewest query rows (a short or
 * narrow layer), the default's index scores each block in parts ({@link BlockSize#scoredParts}): the
 * summaries, the sweep and the exponentials are per part, and a block's share is the sum of its parts'.
 * The rows then take what room the parts leave. The blocks, their count and what {@link #shares}
 * returns are those ranked.
 */
public final class BlockMassIndex {
    /** How one head's logit for a block is estimated. */
    public enum Scoring { BOUND, MEAN, MIX, REPS, REPS_BOUND }

    /**
     * How the heads' block logits are combined into one score: summed logits, or softmax shares summed
     * over one row per KV head (its mean query), per query head, or per cluster of a KV head's query
     * heads (see "Query rows" above).
     */
    public enum Combination { SUM_LOGITS, HEAD_MASS, QUERY_HEAD_MASS, CLUSTERED_HEAD_MASS }


    /** Blocks per sweep ({@link SweepTerms#CHUNK}). */
    private static final int CHUNK = SweepTerms.CHUNK;

    private final Scoring scoring;
    private final Combination combination;
    private final int tokens;
    private final int blockTokens;  // ranked blocks: tokens each, and how many
    private final int blocks;
    private final int scoredTokens; // scored blocks: a ranked block's parts of this many tokens, and how many
    private final int scored;
    private final int kvHeads;
    private final int headDim;
    private final int queryHeads;
    private final Int8Rows max;   // dim-major: element (h, j, b) at [h][j * scored + b]; null unless a bound is used
    private final Int8Rows min;
    private final Int8Rows mean;  // null unless MEAN
    private final Int8Rows mixHi; // (M + μ) / 2 and (m + μ) / 2: MIX's rows, one read per dimension; null unless MIX
    private final Int8Rows mixLo;
    private final BlockRepresentatives reps;  // two representatives (2-means) per block; null unless REPS*
    private final float[] logBlockTokens; // ln(tokens of scored block b)
    private final QueryRows queryRows;    // the step's query rows (one per KV head, query head or cluster)
    private final float[] logits;         // rows × scored: logits, then exp(logit − row max), then (parts) rows × blocks
    private final float[] norms;          // per row of logits: its maximum while swept, then its softmax normaliser
    private final float[] chunk;
    private final int[] termCount;    // queued terms of each of a KV head's rows, at [row × termStride …]
    private final RowPairs rowPairs;  // a KV head's rows paired by the summary runs they share
    private final SweepTerms terms;   // one KV head's queued sweep terms, termStride slots a row
    private final CarriedLogits carried; // MIX rows' logits carried between steps; null for the other scorings
    private final int termStride;     // term slots per row: two per dimension, three when carried (CarriedLogits)

    /**
     * Summarises tokens {@code [0, tokens)} of {@code kv}.
     *
     * @param tokens the laid-out tokens, 1..kv.tokens()
     * @param queryHeads a positive multiple of the layer's KV heads
     * @param blockTokens tokens per block, 1..65536
     * @throws IllegalArgumentException on a bad argument or a non-finite key
     */
    public BlockMassIndex(LayerKv kv, int tokens, int queryHeads, int blockTokens, Scoring scoring, Combination combination) {
        this(kv, tokens, queryHeads, blockTokens, scoring, combination, 0f);
    }

    /**
     * As above, skipping in every step the sweep terms (one per head and dimension and summary)
     * that together cannot move any block's estimated logit against another's, within one head, by
     * more than {@code pruneLogit} (in nats; 0 sweeps every term). The query decides which terms those are,
     * step by step: dimensions where the query is small or the blocks barely differ.
     *
     * @param pruneLogit a finite bound ≥ 0
     */
    public BlockMassIndex(LayerKv kv, int tokens, int queryHeads, int blockTokens, Scoring scoring, Combination combination,
            float pruneLogit) {
        this(kv, tokens, queryHeads, blockTokens, null, scoring, combination, pruneLogit, false, false);
    }

    /**
     * As above, with {@code scoreParts} each block scored in as many parts as the step's sweep budget
     * leaves room for with the fewest query rows ({@link BlockSize#scoredParts}): a part of {@code blockTokens
     * / p} tokens is summarised and estimated on its own, and a block's share is the sum of its parts'
     * (the mass of a block is the sum of its tokens'). Finer summaries bound and average fewer keys, so a
     * block's estimate is closer to its true mass where the layer is short enough to afford them; the
     * blocks ranked, and so the reads, stay the same.
     */
    public BlockMassIndex(LayerKv kv, int tokens, int queryHeads, int blockTokens, Scoring scoring, Combination combination,
            float pruneLogit, boolean scoreParts) {
        this(kv, tokens, queryHeads, blockTokens, null, scoring, combination, pruneLogit, scoreParts, false);
    }

    /**
     * As above; with {@code partsFirst} the parts are sized by half the fewest query rows (at least one a
     * KV head) and the rows take what room they leave, so a layer whose sweep has no room for parts with
     * its fewest rows gets them with half as many ({@link BlockSize#scoredParts}): finer estimates for
     * fewer query heads apart ({@link BlockSize#partRows}). {@link BlockMassStrategy}'s calibration
     * chooses between the two on a layer's opening query ({@link SweepCalibration}).
     */
    BlockMassIndex(LayerKv kv, int tokens, int queryHeads, int blockTokens, Scoring scoring, Combination combination,
            float pruneLogit, boolean scoreParts, boolean partsFirst) {
        this(kv, tokens, queryHeads, blockTokens, null, scoring, combination, pruneLogit, scoreParts, partsFirst);
    }

    /**
     * Summarises the units of a layer's layout instead of positional blocks (Swarm's co-activation
     * clusters and blocks): unit {@code u} is scored as block {@code u}, weighted by its size. Every
     * member must lie in {@code [0, tokens)}; a token may be in several units.
     *
     * @throws IllegalArgumentException also for the REPS scorings, which need contiguous blocks
     */
    public BlockMassIndex(LayerKv kv, int tokens, int queryHeads, LayoutUnits units, Scoring scoring,
            Combination combination, float pruneLogit) {
        this(kv, tokens, queryHeads, 1, Checks.notNull("units", units), scoring, combination, pruneLogit, false, false);
    }

    private BlockMassIndex(LayerKv kv, int tokens, int queryHeads, int blockTokens, LayoutUnits units, Scoring scoring,
            Combination combination, float pruneLogit, boolean scoreParts, boolean partsFirst) {
        this(kv, tokens, queryHeads, blockTokens, units, scoring, combination, pruneLogit, scoreParts, partsFirst, null);
    }

    /**
     * The indexes of {@code specs} over the same keys, their summaries built together ({@link
     * BlockSummaries#together}): a stored layer's keys are read once for all of them, range by range,
     * instead of once an index. What a calibrating strategy weighs on a layer's opening query; {@code
     * attention} (when not null), the exact attention it weighs them by, takes every token of {@code kv} in
     * the same pass.
     */
    static java.util.List<BlockMassIndex> summariseTogether(LayerKv kv, int tokens, int queryHeads,
            java.util.List<Spec> specs, io.kvoffload.attention.ExactAttention.HeadLogits attention) {
        java.util.List<BlockMassIndex> indexes = new java.util.ArrayList<>();
        java.util.List<BlockSummaries> summaries = new java.util.ArrayList<>();
        for (Spec s : specs) {
            indexes.add(new BlockMassIndex(kv, tokens, queryHeads, s.blockTokens(), null, s.scoring(), s.combination(),
                    s.pruneLogit(), s.scoreParts(), s.partsFirst(), summaries));
        }
        BlockSummaries.together(kv, summaries, attention); // before any index is returned, so none scores unsummarised
        return indexes;
    }

    /** One index of {@link #summariseTogether}: the arguments of the positional-block constructors. */
    record Spec(int blockTokens, Scoring scoring, Combination combination, float pruneLogit, boolean scoreParts,
            boolean partsFirst) { }

    private BlockMassIndex(LayerKv kv, int tokens, int queryHeads, int blockTokens, LayoutUnits units, Scoring scoring,
            Combination combination, float pruneLogit, boolean scoreParts, boolean partsFirst,
            java.util.List<BlockSummaries> deferTo) {
        Checks.notNull("kv", kv);
        this.scoring = Checks.notNull("scoring", scoring);
        this.combination = Checks.notNull("combination", combination);
        if (!(pruneLogit >= 0) || Float.isInfinite(pruneLogit)) {
            throw new IllegalArgumentException("pruneLogit = " + pruneLogit + "; allowed: a finite value ≥ 0");
        }
        this.tokens = Checks.inRange("tokens", tokens, 1, kv.tokens());
        this.blockTokens = Checks.inRange("blockTokens", blockTokens, 1, 65536);
        this.kvHeads = kv.kvHeads();
        this.headDim = kv.headDim();
        Checks.queryHeads(queryHeads, kvHeads);
        this.queryHeads = queryHeads;
        this.blocks = units == null ? (tokens + blockTokens - 1) / blockTokens : Checks.positive("units.count()", units.count());
        // Parts are sized, as the blocks are, by the fewest rows; the rows then take the room they leave.
        long budget = BlockSize.sweepBudget(tokens);
        boolean twoReps = scoring == Scoring.REPS || scoring == Scoring.REPS_BOUND;
        int partRows = BlockSize.partRows(combination, queryHeads, kvHeads, headDim, partsFirst);
        int parts = scoreParts && units == null && !twoReps && combination != Combination.SUM_LOGITS
                ? BlockSize.scoredParts(tokens, blockTokens, combination, queryHeads, kvHeads, headDim, partsFirst) : 1;
        this.scoredTokens = blockTokens / parts;
        this.scored = parts == 1 ? blocks : (tokens + scoredTokens - 1) / scoredTokens;
        int rowCount = QueryRows.countFor(combination, queryHeads, kvHeads, headDim, scored, budget, partRows);
        if ((long) scored * headDim > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("blocks × headDim = " + (long) scored * headDim
                    + " does not fit one array; allowed: up to " + (Integer.MAX_VALUE - 8));
        }
        if (twoReps && units != null) {
            throw new IllegalArgumentException("scoring = " + scoring + " needs positional blocks; allowed over layout units: "
                    + "BOUND, MEAN, MIX");
        }
        boolean mix = scoring == Scoring.MIX;
        boolean bounds = scoring == Scoring.BOUND || scoring == Scoring.REPS_BOUND;
        boolean means = scoring == Scoring.MEAN;
        this.reps = twoReps ? new BlockRepresentatives(kvHeads, headDim, blocks, CHUNK) : null;
        this.max = bounds ? new Int8Rows(kvHeads, headDim, scored, Int8Rounding.Mode.UP) : null;
        this.min = bounds ? new Int8Rows(kvHeads, headDim, scored, Int8Rounding.Mode.DOWN) : null;
        this.mean = means ? new Int8Rows(kvHeads, headDim, scored, Int8Rounding.Mode.NEAREST) : null;
        this.mixHi = mix ? new Int8Rows(kvHeads, headDim, scored, Int8Rounding.Mode.NEAREST) : null;
        // A one-token part's two MIX rows are the same key: one array, and query rows share every term.
        this.mixLo = !mix ? null : scoredTokens == 1 && units == null ? mixHi
                : new Int8Rows(kvHeads, headDim, scored, Int8Rounding.Mode.NEAREST);
        this.logBlockTokens = new float[scored];
        for (int b = 0; b < scored; b++) {
            int size = units == null ? Math.min(scoredTokens, tokens - b * scoredTokens) : units.size(b);
            if (size < 1) {
                throw new IllegalArgumentException("units.size(" + b + ") = " + size + "; allowed: 1 or more");
            }
            logBlockTokens[b] = (float) Math.log(size);
        }
        BlockSummaries summaries = new BlockSummaries(kvHeads, headDim, tokens, scored, scoredTokens, max, min, mean, mixHi,
                mixLo, reps);
        if (deferTo != null) {
            deferTo.add(summaries); // summarised with others over the same keys (summariseTogether)
        } else {
            if (units == null) {
                summaries.blocks(kv);
            } else {
                summaries.units(kv, units);
            }
            summaries.quantise();
        }
        this.queryRows = new QueryRows(combination, queryHeads, kvHeads, headDim, rowCount);
        int rows = queryRows.count();
        if ((long) rows * scored > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("query rows × blocks = " + (long) rows * scored
                    + " does not fit one array; allowed: up to " + (Integer.MAX_VALUE - 8));
        }
        this.logits = new float[rows * scored];
        this.norms = new float[rows];
        this.chunk = new float[CHUNK + Math.min(CHUNK, scored)]; // a pair of rows: the second from CHUNK
        this.carried = mix && combination != Combination.SUM_LOGITS
                ? new CarriedLogits(kvHeads, queryRows.maxPerHead(), headDim, scored) : null;
        this.termStride = carried != null ? CarriedLogits.slotsPerRow(headDim) : 2 * headDim;
        this.terms = new SweepTerms(queryRows.maxPerHead() * termStride, pruneLogit);
        this.termCount = new int[queryRows.maxPerHead()];
        this.rowPairs = new RowPairs(queryRows.maxPerHead());
    }

    /**
     * The share of sweep terms (head × dimension × summary) that scoring actually swept over all
     * steps so far, after pruning: the share of the summaries' bytes a step reads (1 before any step).
     */
    public double sweptShare() {
        return terms.sweptShare();
    }

    /** Sweep terms swept over all steps so far, after pruning. */
    long sweptTerms() {
        return terms.swept();
    }

    public int blocks() { return blocks; }
    /** The layer's KV heads: {@link #rowStart} is defined from 0 to this. */
    int kvHeads() { return kvHeads; }
    public int blockTokens() { return blockTokens; }
    /** Tokens per scored part of a block: {@link #blockTokens()} unless blocks are scored in parts. */
    int scoredTokens() { return scoredTokens; }
    /** The query rows a step scores (in all, over the KV heads). */
    int queryRowCount() { return norms.length; }
    public int tokens() { return tokens; }
    public Scoring scoring() { return scoring; }
    public Combination combination() { return combination; }

    /** DRAM the summaries hold (int8 and their scales), plus the per-step working arrays. */
    public long memoryBytes() {
        return summaryBytes() + 4L * (scored + logits.length + chunk.length + norms.length)
                + 4L * termCount.length + rowPairs.memoryBytes()
                + queryRows.memoryBytes() + terms.memoryBytes() + (carried == null ? 0 : carried.memoryBytes());
    }

    /** DRAM the summaries alone hold: their int8 rows and scales. */
    long summaryBytes() {
        long arrays = (max != null ? 2 : 0) + (mean != null ? 1 : 0) + (mixHi != null ? mixLo == mixHi ? 1 : 2 : 0);
        return arrays * ((long) kvHeads * scored * headDim + 4L * kvHeads * headDim) + (reps != null ? reps.memoryBytes(kvHeads) : 0);
    }

    /**
     * Scores every block for {@code query} ({@code queryHeads × headDim} finite floats) into
     * {@code scores[0, blocks())}: with {@link Combination#HEAD_MASS} the summed estimated shares of
     * each KV head's attention (each head's shares over all blocks sum to 1, so scores sum to
     * {@code kvHeads}; likewise with {@link Combination#CLUSTERED_HEAD_MASS}, whose rows weigh by their
     * heads; with {@link Combination#QUERY_HEAD_MASS} they sum to {@code queryHeads}); with {@link
     * Combination#SUM_LOGITS} the summed estimated logits.
     *
     * @throws IllegalArgumentException if a length is wrong or the query is not finite
     */
    public void score(float[] query, float[] scores) {
        Checks.notNull("scores", scores);
        Checks.capacity("scores", scores.length, blocks);
        scoreInto(query, scores);
    }

    /**
     * Each head's estimated block shares for {@code query}, in place and not yet normalised: row
     * {@code r}'s share of block {@code b} is {@code shares[r × blocks() + b] × }{@link #shareNorm}{@code
     * (r)} ({@link #headShares}'s rows without the copy, the normalisation and the sum into one score
     * per block: read-only by contract, valid until the next call). The per-head selector ranks them
     * itself and folds the normaliser (and the row's weight) into its own sum.
     *
     * @throws IllegalStateException with {@link Combination#SUM_LOGITS}, which keeps no shares
     */
    float[] shares(float[] query) {
        if (combination == Combination.SUM_LOGITS) {
            throw new IllegalStateException("combination SUM_LOGITS keeps no per-head shares; allowed: HEAD_MASS, QUERY_HEAD_MASS");
        }
        scoreInto(query, null);
        return logits;
    }

    /**
     * What row {@code r}'s values from {@link #shares} are multiplied by to give its weighted shares:
     * its softmax normaliser times its weight (1, or with {@link Combination#CLUSTERED_HEAD_MASS} its
     * cluster's share of the KV head's query heads, whose rows then sum to 1 together).
     */
    float shareNorm(int r) {
        return norms[r] * queryRows.weight(r);
    }

    /**
     * KV heads {@code [h0, h1)}'s estimated shares of blocks {@code [lo, hi)} from the last {@link #shares}
     * call, their rows' weighted shares ({@link #shareNorm}) summed, into {@code dst[at + b]}: a head
     * group's share of each block, what the per-head selector ranks and the shared set's peaks take the
     * largest of. Two rows a pass over the blocks.
     */
    void groupShares(int h0, int h1, float[] dst, int at, int lo, int hi) {
        int r0 = queryRows.rowStart(h0), rows = queryRows.rowStart(h1) - r0;
        for (int k = 0; k < rows; k += 2) {
            int src = (r0 + k) * blocks;
            float n0 = shareNorm(r0 + k);
            boolean two = k + 1 < rows;
            int src1 = two ? src + blocks : src;
            float n1 = two ? shareNorm(r0 + k + 1) : 0f;
            if (k == 0) {
                for (int b = lo; b < hi; b++) {
                    dst[at + b] = Math.fma(logits[src1 + b], n1, logits[src + b] * n0);
                }
            } else {
                for (int b = lo; b < hi; b++) {
                    dst[at + b] += Math.fma(logits[src1 + b], n1, logits[src + b] * n0);
                }
            }
        }
    }

    /**
     * Estimate rows per KV head: 1, its query heads, or its query-head clusters (with {@link
     * Combination#CLUSTERED_HEAD_MASS} on average: a step gives each KV head its own count, {@link #rowStart}).
     */
    int rowsPerHead() {
        return queryRows.perHead();
    }

    /** KV head {@code h}'s first estimate row in the last step; its rows end at {@code rowStart(h + 1)}. */
    int rowStart(int h) {
        return queryRows.rowStart(h);
    }

    /** {@link #score}; with a mass combination {@code scores} may be null (the shares only). */
    private void scoreInto(float[] query, float[] scores) {
        Checks.notNull("query", query);
        Checks.queryRows(query, queryHeads, headDim);
        queryRows.build(query);
        int rows = norms.length;
        if (carried != null) {
            carried.step();
        }
        for (int h = 0; h < kvHeads; h++) {
            headLogits(h);
        }
        if (combination == Combination.SUM_LOGITS) {
            java.util.Arrays.fill(scores, 0, blocks, 0f);
            for (int h = 0; h < kvHeads; h++) {
                int base = h * blocks;
                for (int b = 0; b < blocks; b++) {
                    scores[b] += logits[base + b];
                }
            }
            return;
        }
        if (scores != null) {
            java.util.Arrays.fill(scores, 0, blocks, 0f);
        }
        for (int h = 0, kv = 0; h < rows; h++) { // the logits already hold ln(block tokens): the sweep starts from it
            float norm;  // norms[h]: the row's max so far
            if (carried != null) { // row h's logits stay where the next step carries them from
                while (queryRows.rowStart(kv + 1) <= h) {
                    kv++;
                }
                norm = Softmax.exponentiateRanking(carried.logits(), carried.offset(kv, h - queryRows.rowStart(kv)), logits,
                        h * scored, scored, norms[h]);
            } else {
                norm = Softmax.exponentiateRanking(logits, h * scored, scored, norms[h]);
            }
            norms[h] = norm;
            int base = h * blocks;
            if (scored != blocks) {
                PartSums.sum(logits, h * scored, base, blockTokens / scoredTokens, scored, blocks);
            }
            if (scores != null) {
                float w = norm * queryRows.weight(h);
                for (int b = 0; b < blocks; b++) {
                    scores[b] += logits[base + b] * w;
                }
            }
        }
    }


    /**
     * Each head's estimated attention shares of the blocks from the last {@link #score} with a mass
     * combination, into {@code dst}: row {@code r} (a KV head, a query head with {@link
     * Combination#QUERY_HEAD_MASS}, a cluster of a KV head's query heads with {@link
     * Combination#CLUSTERED_HEAD_MASS}) at {@code dst[r × blocks() + b]}; each row sums to 1. What
     * per-head selection ranks by (select-eval's {@code head-mass-mix}).
     *
     * @throws IllegalStateException with {@link Combination#SUM_LOGITS}, which keeps no shares
     * @throws IllegalArgumentException if {@code dst} is shorter than the rows × {@link #blocks()}
     */
    public void headShares(float[] dst) {
        if (combination == Combination.SUM_LOGITS) {
            throw new IllegalStateException("combination SUM_LOGITS keeps no per-head shares; allowed: HEAD_MASS, QUERY_HEAD_MASS");
        }
        Checks.notNull("dst", dst);
        long need = (long) norms.length * blocks;
        if (dst.length < need) {
            throw new IllegalArgumentException("dst.length = " + dst.length + " is too small; allowed: at least " + need);
        }
        for (int r = 0, rows = norms.length; r < rows; r++) {
            float norm = norms[r];
            for (int b = r * blocks, end = b + blocks; b < end; b++) {
                dst[b] = logits[b] * norm;
            }
        }
    }

    /**
     * The estimated block logits of KV head {@code h}'s rows (the head itself, or each of its query
     * heads with {@link Combination#QUERY_HEAD_MASS}, or its query-head clusters). The rows share the head's summaries, so they
     * are swept chunk by chunk, all rows per chunk: the chunk's summary rows come from DRAM once and
     * from the cache for the other query heads.
     */
    private void headLogits(int h) {
        int d = headDim, r0 = queryRows.rowStart(h), here = queryRows.rowStart(h + 1) - r0;
        float[] headQuery = queryRows.rows();
        for (int k = 0; k < here; k++) {
            int q0 = (r0 + k) * d, base = k * termStride, queued = base;
            if (carried != null) {
                termCount[k] = carried.queue(terms, base, h, k, headQuery, q0, mixHi, mixLo);
                continue;
            }
            if (max != null) {
                float w = scoring == Scoring.BOUND ? 1f : 0.5f;
                for (int j = 0; j < d; j++) {
                    float q = headQuery[q0 + j] * w;
                    Int8Rows side = q >= 0 ? max : min;
                    queued = terms.term(queued, q * side.scale(h, j), side.row(h), j * scored, side.spread(h, j));
                }
            }
            if (mean != null) {
                for (int j = 0; j < d; j++) {
                    float c = headQuery[q0 + j] * mean.scale(h, j);
                    queued = terms.term(queued, c, mean.row(h), j * scored, mean.spread(h, j));
                }
            }
            if (mixHi != null) {
                for (int j = 0; j < d; j++) {
                    float q = headQuery[q0 + j];
                    Int8Rows side = q >= 0 ? mixHi : mixLo;
                    queued = terms.term(queued, q * side.scale(h, j), side.row(h), j * scored, side.spread(h, j));
                }
            }
            termCount[k] = terms.prune(base, queued - base);
        }
        // Rows two by two: the terms both rows of a pair sweep are converted once for the two (their
        // query heads' signs agree on a dimension, and neither pruned it). The representatives sweep apart.
        rowPairs.pair(terms, termCount, here, termStride, reps == null);
        int pairs = rowPairs.pairs();
        float[] acc = chunk;
        for (int from = 0; from < scored; from += CHUNK) {
            int n = Math.min(CHUNK, scored - from);
            for (int i = 0; i < here; i++) {
                boolean pair = i < 2 * pairs;
                int k = rowPairs.row(i), shared = pair ? rowPairs.shared(i / 2) : 0;
                startRow(acc, 0, h, k, from, n);
                if (pair) {
                    startRow(acc, CHUNK, h, rowPairs.row(i + 1), from, n);
                    terms.sweepPair(acc, n, k * termStride, rowPairs.row(i + 1) * termStride, shared, from);
                }
                terms.sweep(acc, 0, n, k * termStride + shared, termCount[k] - shared, from);
                if (reps != null) {
                    reps.addEstimate(acc, n, headQuery, (r0 + k) * d, h, from, scoring == Scoring.REPS ? 1f : 0.5f, logBlockTokens);
                }
                finishRow(acc, 0, h, k, r0 + k, from, n);
                if (pair) {
                    int l = rowPairs.row(++i);
                    terms.sweep(acc, CHUNK, n, l * termStride + shared, termCount[l] - shared, from);
                    finishRow(acc, CHUNK, h, l, r0 + l, from, n);
                }
            }
        }
    }

    /**
     * Row {@code k} of KV head {@code h}: its chunk of accumulators before its sweep, ln(block tokens) (a
     * block's mass counts its tokens) or its carried logits ({@link CarriedLogits}), or 0.
     */
    private void startRow(float[] acc, int at, int h, int k, int from, int n) {
        if (carried != null) {
            carried.start(acc, at, h, k, from, n, logBlockTokens);
        } else if (combination != Combination.SUM_LOGITS) {
            System.arraycopy(logBlockTokens, from, acc, at, n);
        } else {
            java.util.Arrays.fill(acc, at, at + n, 0f);
        }
    }

    /**
     * Writes row {@code r}'s swept chunk to its logits (with carried logits, to its slot there), and its
     * maximum so far to its normaliser's slot, where it stays until scoreInto exponentiates the row.
     */
    private void finishRow(float[] acc, int at, int h, int k, int r, int from, int n) {
        float[] dst = carried != null ? carried.logits() : logits;
        int off = carried != null ? carried.offset(h, k) : r * scored;
        norms[r] = Softmax.copyMax(acc, at, dst, off + from, n, from == 0 ? Float.NEGATIVE_INFINITY : norms[r], scored);
    }
}
