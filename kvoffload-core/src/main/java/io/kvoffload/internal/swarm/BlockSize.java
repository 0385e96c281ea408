package io.kvoffload.internal.swarm;

import io.kvoffload.KvShape;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.strategy.LayoutUnits;

/**
 * How many tokens a block of the default strategy ({@code mass-auto}, {@link BlockMassStrategy}) holds
 * on a given layer (issue #16, docs/benchmarks.md "Block size by layer length"): the finest block whose
 * slice fills one aligned read, within a block count whose sweep fits the time target; and the page size
 * of a stored layout, whose whole pages a chosen block must be.
 */
final class BlockSize {
    private BlockSize() {}

    /**
     * The most blocks the default's finer blocks may give a layer: the 16-token index's count at 131,072
     * tokens. Up to it a step sweeps no more than there, where it meets issue #16's 1 ms target, while
     * finer blocks are closer to the oracle on every family and shape measured (docs/benchmarks.md,
     * "Finer blocks", "Block size by layer length"); beyond 131,072 tokens the reference's layer gets
     * 16-token blocks, as the 8 ms target at 1M leaves no room for more (a layer cheaper to score may take
     * finer ones at the same cost: {@link #maxBlocks}).
     */
    static final int MAX_FINE_BLOCKS = 8192;

    /**
     * The read unit assumed where a layer's context names no stored layout (in memory): the 4 KiB of
     * O_DIRECT reads on the SSDs this library targets. A stored layout's own pages take precedence.
     */
    static final int READ_ALIGNMENT = 4096;

    /**
     * The bytes of consecutive tokens the default's layout keeps together on one SSD (token striped):
     * from about this read size an NVMe SSD is bound by bandwidth rather than by operations (the
     * high-end profile's 1.1 M IOPS × 16 KiB is 18 GB/s, over its 6.9 GB/s; this VM's disk reads 16 KiB
     * at 3 × the rate of 4 KiB, docs/benchmarks.md "io_uring backend against fio").
     */
    static final int RUN_BYTES = 16 << 10;

    /**
     * Tokens per device run of the default's layout with pages of {@code page} tokens of {@code
     * sliceBytes} each: a whole number of pages holding at least {@link #RUN_BYTES}.
     */
    static int run(int page, long sliceBytes) {
        long pages = Math.max(1, (RUN_BYTES + page * sliceBytes - 1) / (page * sliceBytes));
        return (int) Math.min(1 << 20, page * pages);
    }

    /**
     * Tokens per block for a layer of {@code tokens} tokens whose slice of a token on one device is
     * {@code sliceBytes} (the entry, or one head group's slice under head sharding), on devices that read
     * {@code alignment}-byte units, where scoring a block costs {@code sweepCost} ({@link
     * QueryRows#sweepCost}): the smallest power of two up to {@code coarsest} such that a block's slice
     * fills one aligned read (finer blocks would be padded on disk and in every read) and the layer has
     * at most {@link #maxBlocks} blocks (the sweep costs no more than the reference shape's at the same
     * length, {@link #sweepBudget}); {@code coarsest} where none does both.
     */
    static int adaptive(int tokens, long sliceBytes, int alignment, int coarsest, long sweepCost, int groups) {
        long most = maxBlocks(sweepCost, tokens, groups);
        int bt = 1;
        while (bt < coarsest && (bt * sliceBytes < alignment || (tokens + (long) bt - 1) / bt > most)) {
            bt <<= 1;
        }
        return Math.min(bt, coarsest);
    }

    /**
     * The most blocks a layer of {@code tokens} tokens whose block costs {@code sweepCost} to score may
     * have: {@link #MAX_FINE_BLOCKS}, or more on a shape cheaper than the reference ({@link
     * QueryRows#REFERENCE_SWEEP}), so that its sweep costs what the reference's does ({@link
     * #sweepBudget}; 12 query heads on 2 KV heads × 64, six rows of 96: 18,204 blocks up to 128K). Beyond
     * 131,072 tokens the reference has 16-token blocks and a cheaper shape finer ones at its cost: 14 on 2
     * × 64 takes 8-token blocks at 1M, where 16-token ones gave its `default` family 0.894 × the oracle's
     * recall per head (docs/benchmarks.md, "Rows give way to finer blocks"). A costlier shape keeps
     * {@link #MAX_FINE_BLOCKS} up to 128K, and 16-token blocks beyond: its selection time grows with its
     * width, as it did before blocks were sized per layer.
     *
     * <p>Beyond 131,072 tokens a layer ranked in {@code groups} head groups (1 token striped) also ranks
     * no more (head group, block) pairs than the reference's per-head step ({@link #withinReferencePairs}):
     * past the caches a step's sums, ranking and exchanges over its pairs cost as its sweep does. MHA
     * 8q/8kv × 64 per head at 1M took 8-token parts by its sweep alone, twice the reference's pairs, and a
     * step of 8.7–8.9 ms; with 16-token parts 6.3–6.4 ms, every structured family still at 0.999–1.074 ×
     * the oracle's recall (docs/benchmarks.md, "Reads for attention, up to about half the exact
     * selection's"). Token striped, one set of blocks, it keeps its parts (5.5 ms; 16-token parts cost
     * it 0.01–0.04 × recall). Up to 128K the pairs stay within the caches (the same layer per head: 0.78 ms),
     * and finer blocks pay there.
     */
    static long maxBlocks(long sweepCost, int tokens, int groups) {
        Checks.positive("sweepCost", sweepCost);
        Checks.positive("groups", groups);
        long most = Math.max(MAX_FINE_BLOCKS, sweepBudget(tokens) / sweepCost);
        long reference = referenceBlocks(tokens);
        return reference > MAX_FINE_BLOCKS ? Math.min(most, Math.max(1, reference * REFERENCE_KV_HEADS / groups)) : most;
    }

    /**
     * The parts of one aligned read a page's ranked blocks may cut it into: a block's slice holds at
     * least a quarter of a read. Where a slice is small (512-byte entries, a head group's 256–512-byte
     * slice), a page must be 8 or 16 tokens to fill a read. On the 36 structured cells where parts apply
     * (docs/benchmarks.md, "Ranking parts of a read"), ranking whole pages gave 0.82–1.02 × the oracle's
     * recall at up to 9.4 × its output error; quarter-read parts give 0.91–1.04 × at up to 3.1 ×, reading
     * 1.4–2.7 × the bytes of whole pages (at most 0.64 × the oracle's).
     */
    static final int PARTS_PER_READ = 4;

    /**
     * Tokens per ranked block over pages of {@code page} tokens whose slice on one device is {@code
     * sliceBytes}: the finest power of two dividing the page whose slice holds at least {@code alignment /
     * }{@link #PARTS_PER_READ} bytes and that leaves at most {@link #maxBlocks} blocks; the page where none
     * is finer. A part of a page of one read costs that read; a part of a page of several reads (6 KiB
     * pages of 1.5 KiB entries, 16-token pages of 320–384-byte slices of 80- and 96-dim heads) costs the
     * reads it touches, at most the page's. On those pages, parts took per-head recall from 0.90–0.98 ×
     * the oracle's at up to 5.2 × its error to 0.97–1.06 × at up to 2.3 ×, at 0.29–0.47 × its bytes
     * (docs/benchmarks.md, "Parts of pages of more than one read").
     */
    static int ranked(int tokens, long sliceBytes, int alignment, int page, long sweepCost, int groups) {
        if (page < 2) {
            return page;
        }
        int bt = adaptive(tokens, sliceBytes, Math.max(1, alignment / PARTS_PER_READ), page, sweepCost, groups);
        return page % bt == 0 ? bt : page;
    }

    /** {@link #adaptive} for a layer of {@code shape} scored by {@code combination}'s query rows in {@code groups} head groups. */
    static int adaptive(int tokens, long sliceBytes, int alignment, int coarsest, KvShape shape,
            BlockMassIndex.Combination combination, int groups) {
        return adaptive(tokens, sliceBytes, alignment, coarsest, sweepCost(shape, combination), groups);
    }

    /**
     * What scoring one block of a layer of {@code shape} costs with the fewest query rows {@code
     * combination} keeps ({@link QueryRows#fewestRows}): the blocks are sized by it, and the rows then
     * take what room the blocks leave ({@link QueryRows#countFor}).
     */
    static long sweepCost(KvShape shape, BlockMassIndex.Combination combination) {
        return sweepCost(shape, combination, false);
    }

    /** {@link #sweepCost(KvShape, BlockMassIndex.Combination)}, or with {@code halfRows} at {@link #partRows}' half. */
    static long sweepCost(KvShape shape, BlockMassIndex.Combination combination, boolean halfRows) {
        int d = shape.headDim();
        return QueryRows.sweepCost(partRows(combination, shape.queryHeads(), shape.kvHeads(), d, halfRows), d);
    }

    /**
     * What one step's sweep may cost over a layer of {@code tokens} tokens: the reference shape's
     * ({@link QueryRows#REFERENCE_SWEEP} a block) over {@link #MAX_FINE_BLOCKS} blocks, or over 16-token
     * blocks beyond 131,072 tokens, where the time targets grow with the length (1 ms at 128K, 8 ms at 1M).
     */
    static long sweepBudget(int tokens) {
        return QueryRows.REFERENCE_SWEEP * referenceBlocks(tokens);
    }

    /** The reference layer's blocks at {@code tokens} tokens: {@link #MAX_FINE_BLOCKS}, or 16-token ones beyond 131,072. */
    static long referenceBlocks(int tokens) {
        return Math.max(MAX_FINE_BLOCKS, ((long) tokens + COARSEST - 1) / COARSEST);
    }

    /**
     * Parts a block of {@code blockTokens} is scored in ({@link BlockMassIndex}'s {@code scoreParts}): the
     * most, a power of two dividing the block, whose sweep over the layer, at {@code rowCost} a scored
     * part ({@link QueryRows#sweepCost} of the fewest rows, {@link QueryRows#fewestRows}, which size the
     * blocks too), fits {@code budget} ({@link #sweepBudget}); 1 where none does. The rows then take the
     * room the parts leave ({@link QueryRows#countFor}). Where a layer is short, or its rows few, a
     * block's parts are summarised and estimated apart. On 10 query heads on 2 KV heads × 112 at 16K
     * tokens, scoring each 4-token block in four parts with eight rows cut `default`'s output error from
     * 3.1 × the oracle's to 0.84 × and lifted `long-documents`' recall from 0.917 × to 0.952 ×; two
     * parts with all ten rows, the rows served first, reached 0.93 × and 0.928 × (docs/benchmarks.md,
     * "Blocks scored in parts").
     */
    static int scoredParts(int tokens, int blockTokens, long rowCost, long budget) {
        Checks.positive("rowCost", rowCost);
        int parts = 1;
        while (parts < blockTokens && blockTokens % (2 * parts) == 0
                && ((long) tokens * 2 * parts + blockTokens - 1) / blockTokens * rowCost <= budget) {
            parts *= 2;
        }
        return parts;
    }

    /**
     * {@link #scoredParts(int, int, long, long)} for a layer of this shape scored by {@code combination}'s
     * rows: the parts {@code new BlockMassIndex(…, scoreParts = true, partsFirst)} scores a block of {@code
     * blockTokens} in, without building it.
     */
    static int scoredParts(int tokens, int blockTokens, BlockMassIndex.Combination combination, int queryHeads,
            int kvHeads, int headDim, boolean partsFirst) {
        return scoredParts(tokens, blockTokens,
                QueryRows.sweepCost(partRows(combination, queryHeads, kvHeads, headDim, partsFirst), headDim),
                sweepBudget(tokens));
    }

    /**
     * The rows a block's parts are sized by: the fewest {@code combination} keeps ({@link
     * QueryRows#fewestRows}), or with {@code partsFirst} (clustered rows only) half of them, at least one a
     * KV head, so that a long layer whose sweep has no room for parts with its fewest rows gets them with
     * half as many (what {@code mass-auto-cal} weighs on a layer's opening query, {@link SweepCalibration}).
     */
    static int partRows(BlockMassIndex.Combination combination, int queryHeads, int kvHeads, int headDim,
            boolean partsFirst) {
        int fewest = QueryRows.fewestRows(combination, queryHeads, kvHeads, headDim);
        return partsFirst && combination == BlockMassIndex.Combination.CLUSTERED_HEAD_MASS
                ? Math.max(kvHeads, fewest / 2) : fewest;
    }

    /**
     * Whether half the fewest rows ({@link #partRows} with {@code partsFirst}) still leave two a KV head,
     * so that a step's rows still share their conversions two by two ({@code SweepTerms#sweepPair}) and
     * an index with half the rows costs what the sweep's budget says: with 16 query heads a KV head, not
     * with Llama-3-8B's 4, where one row a KV head made a step up to 35% slower (docs/benchmarks.md,
     * "Sixteen query heads on each of two KV heads").
     */
    static boolean halfRowsPair(BlockMassIndex.Combination combination, int queryHeads, int kvHeads, int headDim) {
        return combination == BlockMassIndex.Combination.CLUSTERED_HEAD_MASS
                && partRows(combination, queryHeads, kvHeads, headDim, true) >= 2 * kvHeads;
    }

    /**
     * Whether an index that scores {@code scored} parts of a layer of {@code tokens} tokens on {@code
     * kvHeads × headDim} holds no more summary bytes than the reference layer's own index at that length
     * (8 KV heads × 128 over {@link #referenceBlocks}, the blocks its sweep budget is sized by): a step
     * reads a summary byte for each scored part, head and dimension whatever its rows, so such an index
     * streams no more a step than the reference's. The calibration's other candidates hold two or more
     * times the default's summaries: on the reference's layer twice them made the step 1.6 × as long,
     * although their multiply-adds fit the
     * same budget, while on Llama-3.2-1B's 32q/8kv × 64, whose candidates are the reference's size, the
     * calibrated step costs about the reference's (docs/benchmarks.md, "The default chooses where its
     * candidates stream the reference's bytes").
     */
    static boolean withinReferenceBytes(long scored, int kvHeads, int headDim, int tokens) {
        return scored * kvHeads * headDim <= referenceBlocks(tokens) * REFERENCE_KV_HEADS * REFERENCE_HEAD_DIM;
    }

    /**
     * Whether a selector ranking {@code blocks} blocks of a layer of {@code tokens} tokens for {@code groups}
     * head groups (1 token striped) ranks no more (head group, block) pairs than the reference layer's
     * per-head step at that length (8 groups over {@link #referenceBlocks}): a per-head step sums each
     * group's rows into a share of each block, ranks the pairs and exchanges their reads, whatever the
     * summaries' bytes. Finer blocks within the reference's bytes on 32q/8kv × 64 per head (8-token blocks
     * over 128K tokens, twice the reference's pairs) took the step from 0.79 to 1.10–1.16 ms over `default`
     * keys (docs/benchmarks.md, "Reads for attention, up to about half the exact selection's"), past the 1
     * ms target.
     */
    static boolean withinReferencePairs(long blocks, int groups, int tokens) {
        return blocks * groups <= referenceBlocks(tokens) * REFERENCE_KV_HEADS;
    }

    /** The parts an index scores over {@code tokens} tokens in blocks of {@code blockTokens}, each in {@code parts}. */
    static long scored(int tokens, int blockTokens, int parts) {
        int part = blockTokens / parts;
        return ((long) tokens + part - 1) / part;
    }

    /** The reference layer's KV heads and head dimension (Llama-3-8B's), whose step the time targets name. */
    static final int REFERENCE_KV_HEADS = 8;
    static final int REFERENCE_HEAD_DIM = 128;

    /** The default's coarsest block, Swarm's 16 tokens: the reference layer's block from 128K tokens on. */
    static final int COARSEST = 16;

    /** The page size if {@code units} are consecutive pages of one size over {@code tokens}, else 0. */
    static int pages(LayoutUnits units, int tokens) {
        int n = units.count();
        int page = n == 0 ? 0 : units.size(0);
        if (units.coActivationUnits() != 0 || page < 1 || n != (tokens + page - 1) / page) {
            return 0;
        }
        for (int u = 0; u < n; u++) {
            int size = units.size(u);
            if (size != Math.min(page, tokens - u * page)) {
                return 0;
            }
            for (int i = 0; i < size; i++) {
                if (units.member(u, i) != u * page + i) {
                    return 0;
                }
            }
        }
        return page;
    }
}
