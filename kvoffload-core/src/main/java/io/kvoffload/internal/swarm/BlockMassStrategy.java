package io.kvoffload.internal.swarm;

import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.attention.ExactAttention;
import io.kvoffload.internal.sequence.UnitLayouts;
import io.kvoffload.internal.swarm.BlockMassIndex.Combination;
import io.kvoffload.internal.swarm.BlockMassIndex.Scoring;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.strategy.LayoutUnits;
import io.kvoffload.strategy.FetchPlan;
import io.kvoffload.strategy.LayerContext;
import io.kvoffload.strategy.LayerSelector;
import io.kvoffload.strategy.SelectionStrategy;
import java.util.ArrayList;
import java.util.List;

/**
 * Swarm's blocks ranked by estimated attention mass (issue #16): the layer is laid out as Swarm's
 * positional clusters (consecutive blocks of {@link #pageTokens()} tokens, one read each, round robin
 * over the SSDs), and each step takes whole blocks in the order of a {@link BlockMassIndex} score
 * until the budget is spent. The variants differ in how a head's block logit is estimated ({@link
 * Scoring}) and how heads are combined ({@link Combination}); {@code mass-auto} (the mean of
 * Quest's bound and the block's mean logit, softmax shares of clustered query heads, per head group
 * where the layout stores them apart) is the one the measurements in docs/benchmarks.md chose, and
 * the library's default.
 *
 * <p>Blocks that lie wholly in the sinks or the window are never chosen (the pipeline serves those
 * from DRAM) but stay in each head's softmax denominator. A step takes {@code ⌊budget / blockTokens⌋}
 * blocks (never more rows than the budget; all candidate blocks once the budget covers the tokens
 * they add, so a full budget attends every token).
 */
public final class BlockMassStrategy implements SelectionStrategy {
    private final String name;
    private final Scoring scoring;
    private final Combination combination;
    private final int blockTokens;
    private final float pruneLogit;
    /** Rank the layout's own units (Swarm's clusters) when the layer has co-activation clusters. */
    private final boolean layoutUnits;
    /** Rank (head group, block) pairs: one token set per group of KV heads the layout stores apart. */
    private final boolean perHead;
    /**
     * Choose per layer: the shared ranking where the layout reads a token whole, per-head sets where it
     * stores head groups apart ({@link LayerContext#headGroups()} above 1) of at most 64 KV heads; both
     * with the combination given ({@code mass-auto}: {@link Combination#CLUSTERED_HEAD_MASS}); and each
     * block scored in parts where the sweep budget has room ({@link BlockSize#scoredParts}).
     */
    private final boolean auto;
    /**
     * Blocks sized per layer ({@link BlockSize#adaptive}), {@link #blockTokens} the coarsest: the
     * default. Otherwise every layer gets {@link #blockTokens}.
     */
    private final boolean adaptive;
    /**
     * Where the layer opens with a query ({@link LayerContext#openingQuery()}), choose between more query
     * rows, blocks scored in parts and finer blocks on it ({@link SweepCalibration}) on every layer: {@code
     * mass-auto-cal}. The default ({@link #auto}, {@link #adaptive}) chooses so only on layers whose half
     * rows still pair ({@link BlockSize#halfRowsPair}), where the other candidates cost a step about what
     * its own index does, and elsewhere between the candidates whose summaries stream no more bytes than
     * the reference layer's index ({@link BlockSize#withinReferenceBytes}), a step about the reference's.
     */
    private final boolean calibrate;

    /**
     * The prune bound of {@code mass-mix}, in nats: the sweep terms a step skips move no block's
     * estimated logit against another's by more than this together. Measured on six workload
     * families (docs/benchmarks.md, "Pruned sweeps"): recall within ±0.003 of the full sweep while
     * a step sweeps 25–56% fewer terms.
     */
    public static final float PRUNE_LOGIT = 4f;

    /**
     * The prune bound of the default ({@code mass-auto}) and its two halves ({@code cmass-mix},
     * {@code head-cmass-mix}), in nats. Against {@link #PRUNE_LOGIT} on the 11 family × shape cells of
     * docs/benchmarks.md ("Selection time after the sampled top-k"), both placements: recall −0.002 to
     * +0.001 × the oracle's, output error up to 3.4% higher, while a step sweeps 51% of the terms instead of
     * about 57% (−10% selection time at 1M tokens per head group). At 8 nats recall starts to fall
     * (−0.003 on several cells).
     */
    public static final float AUTO_PRUNE_LOGIT = 6f;

    /**
     * The weight of a block's largest single-KV-head share in the default's shared set ({@link
     * SharedSetSelector}, "Peaks"): a block scores its shares summed over the KV heads plus this times the
     * largest. Token striped at 128K tokens on Llama-3-8B's layer, where one query head of each KV head
     * looks for a passkey, it lifted the passkeys held at a 10% budget from 24 to 30 of 64 (a tenth of that
     * head's attention) and from 39 to 52 (half of it), while the documented cells' recall moved by −0.003
     * to +0.002 × the oracle's at 32K and 128K; a weight of 3 held more passkeys but cost up to 0.006 of
     * recall (docs/benchmarks.md, "Peaks in the shared set"). Per head group it has nothing to add: each
     * group ranks its own shares.
     */
    public static final float PEAK_WEIGHT = 1f;

    /**
     * Tokens per block (and per stored page) of {@code mass-auto-8}: {@code mass-auto} at half the
     * block. Finer blocks tighten each block's bounds and lift the ceiling a block ranking can reach
     * (docs/benchmarks.md, "Finer blocks"): per head group it meets issue #16's recall and output-error
     * targets on every family but the structureless control, at twice the index and twice the sweep.
     */
    public static final int FINE_BLOCK_TOKENS = 8;

    /**
     * @param name the registry name
     * @param blockTokens tokens per block, 1..65536
     */
    public BlockMassStrategy(String name, Scoring scoring, Combination combination, int blockTokens) {
        this(name, scoring, combination, blockTokens, 0f);
    }

    /**
     * @param name the registry name
     * @param blockTokens tokens per block, 1..65536
     * @param pruneLogit the index's prune bound (see {@link BlockMassIndex}); 0 sweeps every term
     */
    public BlockMassStrategy(String name, Scoring scoring, Combination combination, int blockTokens, float pruneLogit) {
        this(name, scoring, combination, blockTokens, pruneLogit, false);
    }

    /**
     * @param layoutUnits over a layer Swarm's offline phase clustered ({@link LayoutUnits#coActivationUnits()}
     *     above 0), rank the layout's clusters instead of positional blocks (issue #16: Swarm's clusters
     *     as the unit, this estimate as the ranking); other layers as without it
     */
    public BlockMassStrategy(String name, Scoring scoring, Combination combination, int blockTokens, float pruneLogit,
            boolean layoutUnits) {
        this(name, scoring, combination, blockTokens, pruneLogit, layoutUnits, false);
    }

    /**
     * @param perHead rank (head group, block) pairs by the heads' own estimated shares, pooled over the
     *     groups, and add each block for the groups that chose it ({@link FetchPlan#add(int, long)}):
     *     per-head token sets where the layout stores a token's head groups apart
     *     ({@link FetchPlan#headGroups()} above 1, {@link io.kvoffload.Placement#HEAD_SHARDED}); with
     *     one group it ranks exactly as without it. Needs a mass {@link Combination} and positional
     *     blocks (not {@code layoutUnits})
     */
    public BlockMassStrategy(String name, Scoring scoring, Combination combination, int blockTokens, float pruneLogit,
            boolean layoutUnits, boolean perHead) {
        this(name, scoring, combination, blockTokens, pruneLogit, layoutUnits, perHead, false, false, false);
    }

    /**
     * The library's default, {@code mass-auto}: blocks ranked by the summed shares of each KV head's
     * query heads, clustered into half as many rows ({@link Combination#CLUSTERED_HEAD_MASS}), as one
     * shared set where a layer's layout reads each token whole ({@code cmass-mix}), and as per-head-group
     * sets where it stores head groups apart ({@link io.kvoffload.Placement#HEAD_SHARDED}, {@code
     * head-cmass-mix}): there per-head sets cost no extra bytes and lift recall most (docs/benchmarks.md,
     * "Per-head token sets", "Clustered query heads").
     */
    public static BlockMassStrategy auto(String name, int blockTokens) {
        return auto(name, blockTokens, false);
    }

    /**
     * {@link #auto(String, int)}, with {@code adaptive} the block size chosen per layer
     * ({@link BlockSize#adaptive}, at most {@code blockTokens}), and where half the layer's rows still
     * pair ({@link BlockSize#halfRowsPair}: many query heads a KV head, e.g. 32q/2kv × 128) the choice on its
     * opening query that {@code calibrate} makes everywhere, and elsewhere the same choice among the
     * candidates whose summaries stream no more bytes than the reference layer's index ({@link
     * BlockSize#withinReferenceBytes}: e.g. on 32q/8kv × 64): the default, {@code mass-auto}.
     */
    public static BlockMassStrategy auto(String name, int blockTokens, boolean adaptive) {
        return auto(name, blockTokens, adaptive, false);
    }

    /**
     * {@link #auto(String, int, boolean)}, with {@code calibrate} every layer choosing on its opening query
     * between more query rows, blocks scored in parts and finer blocks ({@link SweepCalibration}).
     */
    public static BlockMassStrategy auto(String name, int blockTokens, boolean adaptive, boolean calibrate) {
        return new BlockMassStrategy(name, Scoring.MIX, Combination.CLUSTERED_HEAD_MASS, blockTokens, AUTO_PRUNE_LOGIT,
                false, false, true, adaptive, calibrate);
    }

    private BlockMassStrategy(String name, Scoring scoring, Combination combination, int blockTokens, float pruneLogit,
            boolean layoutUnits, boolean perHead, boolean auto, boolean adaptive, boolean calibrate) {
        this.auto = auto;
        this.adaptive = adaptive;
        this.calibrate = calibrate;
        if (perHead && (layoutUnits || combination == Combination.SUM_LOGITS)) {
            throw new IllegalArgumentException("perHead = true with layoutUnits = " + layoutUnits + ", combination = "
                    + combination + "; allowed: positional blocks and a mass combination (HEAD_MASS, QUERY_HEAD_MASS)");
        }
        this.perHead = perHead;
        this.layoutUnits = layoutUnits;
        this.name = Checks.notNull("name", name);
        this.scoring = Checks.notNull("scoring", scoring);
        this.combination = Checks.notNull("combination", combination);
        this.blockTokens = Checks.inRange("blockTokens", blockTokens, 1, 65536);
        if (!(pruneLogit >= 0) || Float.isInfinite(pruneLogit)) {
            throw new IllegalArgumentException("pruneLogit = " + pruneLogit + "; allowed: a finite value ≥ 0");
        }
        this.pruneLogit = pruneLogit;
    }

    /** The variants the library registers, the chosen one ({@code mass-auto}, the library's default) first. */
    public static List<SelectionStrategy> variants() {
        return List.of(
                auto("mass-auto", BlockSize.COARSEST, true),
                auto("mass-auto-cal", BlockSize.COARSEST, true, true),
                auto("mass-auto-8", FINE_BLOCK_TOKENS),
                auto("mass-auto-16", 16),
                new BlockMassStrategy("mass-mix", Scoring.MIX, Combination.HEAD_MASS, 16, PRUNE_LOGIT),
                new BlockMassStrategy("mass-mix-full", Scoring.MIX, Combination.HEAD_MASS, 16),
                new BlockMassStrategy("mass-bound", Scoring.BOUND, Combination.HEAD_MASS, 16),
                new BlockMassStrategy("mass-mean", Scoring.MEAN, Combination.HEAD_MASS, 16),
                new BlockMassStrategy("logit-mean", Scoring.MEAN, Combination.SUM_LOGITS, 16),
                new BlockMassStrategy("qmass-mix", Scoring.MIX, Combination.QUERY_HEAD_MASS, 16, PRUNE_LOGIT),
                new BlockMassStrategy("qmass-bound", Scoring.BOUND, Combination.QUERY_HEAD_MASS, 16),
                new BlockMassStrategy("mass-reps", Scoring.REPS, Combination.HEAD_MASS, 16),
                new BlockMassStrategy("mass-reps-bound", Scoring.REPS_BOUND, Combination.HEAD_MASS, 16),
                new BlockMassStrategy("swarm-mass", Scoring.MIX, Combination.HEAD_MASS, 16, PRUNE_LOGIT, true),
                new BlockMassStrategy("swarm-mass-full", Scoring.MIX, Combination.HEAD_MASS, 16, 0f, true),
                new BlockMassStrategy("swarm-qmass", Scoring.MIX, Combination.QUERY_HEAD_MASS, 16, PRUNE_LOGIT, true),
                new BlockMassStrategy("head-mass-mix", Scoring.MIX, Combination.HEAD_MASS, 16, PRUNE_LOGIT, false, true),
                new BlockMassStrategy("head-qmass-mix", Scoring.MIX, Combination.QUERY_HEAD_MASS, 16, PRUNE_LOGIT, false,
                        true),
                new BlockMassStrategy("cmass-mix", Scoring.MIX, Combination.CLUSTERED_HEAD_MASS, 16, AUTO_PRUNE_LOGIT),
                new BlockMassStrategy("head-cmass-mix", Scoring.MIX, Combination.CLUSTERED_HEAD_MASS, 16, AUTO_PRUNE_LOGIT,
                        false, true));
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public int pageTokens() {
        return blockTokens;
    }

    /**
     * The default's offline phase: the default page layout ({@link SelectionStrategy#layOut}) in pages of
     * the layer's {@link BlockSize#adaptive} for the engine's SSDs and placement; under token striping each
     * page whole on one SSD, in runs of {@link BlockSize#run} tokens per SSD.
     */
    @Override
    public void layOut(KvSequence sequence, int layer) {
        Checks.notNull("sequence", sequence);
        int tokens = sequence.tokenCount(layer);
        if (!adaptive || tokens == 0) {
            SelectionStrategy.super.layOut(sequence, layer);
            return;
        }
        UnitLayouts.DeviceSlice slice = UnitLayouts.deviceSlice(sequence);
        int page = BlockSize.adaptive(tokens, slice.bytes(), slice.alignment(), blockTokens, sequence.shape(), combination,
                slice.groups());
        // Each page whole on one device, and neighbouring small pages together up to a run of
        // BlockSize.RUN_BYTES: a chosen block, or a span of them, is one read instead of one per SSD.
        UnitLayouts.write(sequence, layer, SelectionStrategy.pages(tokens, page), BlockSize.run(page, slice.bytes()));
    }

    /**
     * Tokens per block over a layer: {@link #blockTokens}, or for the default the blocks it ranks over
     * the layer's pages: {@link BlockSize#adaptive} pages where the layout is not known (in memory), and
     * over a stored layout of consecutive pages of {@code p} tokens the adaptive size if {@code p} divides
     * it (a layer laid out in finer pages, as a shorter one was, ranks whole pages of the coarser size),
     * else {@code p}. Either way the page is ranked in parts ({@link BlockSize#ranked}): a chosen part
     * costs at most the page's reads, so the choice is finer at no more reads.
     * Any other layout keeps {@link #blockTokens}.
     */
    private int blockTokens(LayerContext context, int laidOut, LayoutUnits units, boolean halfRows) {
        if (!adaptive) {
            return blockTokens;
        }
        KvShape shape = context.shape();
        long slice = sliceBytes(context);
        long cost = BlockSize.sweepCost(shape, combination, halfRows);
        int groups = Math.max(1, context.headGroups()); // as the layout was sized (layOut: the store's head groups)
        int bt = BlockSize.adaptive(laidOut, slice, BlockSize.READ_ALIGNMENT, blockTokens, cost, groups);
        int page = units == null ? bt : BlockSize.pages(units, laidOut);
        if (page < 1) {
            return blockTokens;
        }
        if (page < bt && bt % page == 0) {
            return bt;
        }
        return BlockSize.ranked(laidOut, slice, BlockSize.READ_ALIGNMENT, page, cost, groups);
    }

    @Override
    public LayerSelector openLayer(LayerContext context) {
        Checks.notNull("context", context);
        int laidOut = context.laidOutTokens();
        if (laidOut < 1) {
            return (query, plan) -> { }; // nothing laid out: the window serves the layer
        }
        LayoutUnits units = context.layoutUnits();
        if (layoutUnits && units != null && units.coActivationUnits() > 0) {
            BlockMassIndex index = new BlockMassIndex(context.keys(), laidOut, context.shape().queryHeads(), units,
                    scoring, combination, pruneLogit);
            return new UnitSelector(index, units, laidOut, context.sinkTokens(), context.localWindow());
        }
        // Per-head sets name their KV heads in a 64-bit mask: beyond 64 KV heads (an MHA layer of 96)
        // the default ranks one shared set, which reads every head group of a token, instead of failing.
        int kvHeads = context.shape().kvHeads();
        boolean heads = perHead || auto && context.headGroups() > 1 && kvHeads <= Long.SIZE;
        int rankedGroups = heads ? context.headGroups() : 1; // what a step ranks blocks for
        int bt = blockTokens(context, laidOut, units, false);
        // The default weighs every candidate where half its rows still pair (about the same step), elsewhere
        // those whose summaries stream no more bytes than the reference's index; mass-auto-cal every candidate.
        KvShape shape = context.shape();
        int qh = shape.queryHeads(), kvh = shape.kvHeads(), d = shape.headDim();
        boolean every = calibrate || auto && adaptive && BlockSize.halfRowsPair(combination, qh, kvh, d);
        float[] query = calibrate || auto && adaptive ? context.openingQuery() : null;
        List<BlockMassIndex.Spec> specs = new ArrayList<>(List.of(new BlockMassIndex.Spec(bt, scoring, combination,
                pruneLogit, auto, false)));
        if (query != null) {
            // The sweep's other uses with half the rows: the same blocks scored in more parts, or finer blocks.
            int parts = BlockSize.scoredParts(laidOut, bt, combination, qh, kvh, d, true);
            if (parts != BlockSize.scoredParts(laidOut, bt, combination, qh, kvh, d, false)
                    && (every || BlockSize.withinReferenceBytes(BlockSize.scored(laidOut, bt, parts), kvh, d, laidOut))) {
                specs.add(new BlockMassIndex.Spec(bt, scoring, combination, pruneLogit, auto, true));
            }
            // Finer blocks also rank more pairs a step: the default weighs them only within the reference's.
            int fine = blockTokens(context, laidOut, units, true);
            if (fine < bt && (calibrate || BlockSize.withinReferencePairs(BlockSize.scored(laidOut, fine, 1), rankedGroups,
                    laidOut))
                    && (every || BlockSize.withinReferenceBytes(BlockSize.scored(laidOut, fine,
                    BlockSize.scoredParts(laidOut, fine, combination, qh, kvh, d, true)), kvh, d, laidOut))) {
                specs.add(new BlockMassIndex.Spec(fine, scoring, combination, pruneLogit, auto, true));
            }
        }
        if (specs.size() == 1) { // no room for either even with half the rows, or nothing to calibrate on
            return selector(context, units, laidOut, new BlockMassIndex(context.keys(), laidOut, qh, bt, scoring,
                    combination, pruneLogit, auto), heads);
        }
        // The candidates' summaries and the opening query's exact attention from one read of the keys
        // between them (a stored layer is read once).
        ExactAttention.HeadLogits attention = ExactAttention.of(shape).headLogits(context.keys().tokens(), query);
        List<LayerSelector> candidates = new ArrayList<>();
        for (BlockMassIndex index : BlockMassIndex.summariseTogether(context.keys(), laidOut, qh, specs, attention)) {
            candidates.add(selector(context, units, laidOut, index, heads));
        }
        int chosen = SweepCalibration.choose(attention.weights(), laidOut, shape, rankedGroups,
                context.layer(), query, candidates, sliceBytes(context), context.sinkTokens(), context.localWindow());
        for (int i = 0; i < candidates.size(); i++) {
            if (i != chosen) {
                candidates.get(i).close();
            }
        }
        return candidates.get(chosen);
    }

    /** The selector over {@code index}: per head group where {@code heads}, else one shared set. */
    private LayerSelector selector(LayerContext context, LayoutUnits units, int laidOut, BlockMassIndex index,
            boolean heads) {
        int kvHeads = context.shape().kvHeads();
        int perRead = partsPerRead(context, units, laidOut, index.blockTokens());
        if (heads) {
            if (kvHeads > Long.SIZE) {
                throw new IllegalArgumentException("strategy " + name + " needs at most " + Long.SIZE + " KV heads; the"
                        + " shape has kvHeads = " + kvHeads + " (mass-auto ranks one shared set there)");
            }
            return new HeadGroupSelector(index, kvHeads, context.sinkTokens(), context.localWindow(),
                    perRead > 1 ? new ReadExchange(kvHeads, index.blocks(), perRead) : null);
        }
        return new SharedSetSelector(index, context.sinkTokens(), context.localWindow(),
                perRead > 1 ? new ReadExchange(1, index.blocks(), perRead) : null,
                auto && combination != Combination.SUM_LOGITS ? PEAK_WEIGHT : 0f);
    }

    /** What one device holds of a token: its whole entry, or under head sharding one head group's slice. */
    private static long sliceBytes(LayerContext context) {
        return context.shape().entryBytes() / Math.max(1, context.headGroups());
    }

    /**
     * Ranked parts in one aligned read where the layer's pages are one read each, cut in whole parts
     * of {@code blockTokens}; else 1 (no {@link ReadExchange}). Without a layout (a layer ranked in
     * memory) the pages are taken to be one read, as the default lays them out.
     */
    private static int partsPerRead(LayerContext context, LayoutUnits units, int laidOut, int blockTokens) {
        long slice = sliceBytes(context);
        if (slice < 1 || slice > BlockSize.READ_ALIGNMENT || BlockSize.READ_ALIGNMENT % slice != 0) {
            return 1;
        }
        int readTokens = (int) (BlockSize.READ_ALIGNMENT / slice);
        int page = units == null ? readTokens : BlockSize.pages(units, laidOut);
        int perRead = page == readTokens && readTokens % blockTokens == 0 ? readTokens / blockTokens : 1;
        return Integer.bitCount(perRead) == 1 ? perRead : 1;
    }

    @Override
    public String toString() {
        return "BlockMassStrategy{" + name + ", " + scoring + ", " + combination + ", " + blockTokens + ", prune "
                + pruneLogit + (layoutUnits ? ", layout units" : "") + (perHead ? ", per head" : "")
                + (auto ? ", per head where heads are stored apart" : "")
                + (adaptive ? ", blocks sized per layer" : "") + (calibrate ? ", rows, parts or finer blocks by the opening query" : "") + "}";
    }
}
