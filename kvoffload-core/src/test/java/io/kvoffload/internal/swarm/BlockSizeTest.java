package io.kvoffload.internal.swarm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/** {@link BlockSize}: the default's block size per layer (selection through it: {@code BlockMassStrategyTest}). */
class BlockSizeTest {
    private static final long REF = QueryRows.REFERENCE_SWEEP;

    /**
     * The default's block size: the smallest power of two up to 16 whose slice fills an aligned read and
     * that leaves the layer at most {@link BlockSize#MAX_FINE_BLOCKS} blocks.
     */
    @Property(tries = 200)
    void theAdaptiveBlockIsTheFinestThatFillsAReadWithinTheBlockCount(
            @ForAll @IntRange(min = 1, max = 4_000_000) int tokens, @ForAll @IntRange(min = 1, max = 20_000) int slice,
            @ForAll("alignments") int alignment) {
        int bt = BlockSize.adaptive(tokens, slice, alignment, 16, REF, 8);
        assertTrue(Integer.bitCount(bt) == 1 && bt <= 16, "a power of two up to 16: " + bt);
        boolean fits = (long) bt * slice >= alignment && (tokens + bt - 1L) / bt <= BlockSize.MAX_FINE_BLOCKS;
        assertTrue(fits || bt == 16, bt + " tokens: fills a read within the block count, or the coarsest");
        if (bt > 1) {
            int half = bt / 2;
            assertTrue((long) half * slice < alignment || (tokens + half - 1L) / half > BlockSize.MAX_FINE_BLOCKS,
                    "half of " + bt + " would do as well");
        }
    }

    @Provide
    Arbitrary<Integer> alignments() {
        return Arbitraries.of(512, 4096, 8192);
    }

    @Test
    void adaptiveBlockExamples() {
        // Llama-3-8B's BF16 entries (4 KiB) whole: 2 tokens at 16K, 4 at 32K, 8 at 64K, 16 from 128K.
        assertEquals(2, BlockSize.adaptive(16384, 4096, 4096, 16, REF, 8));
        assertEquals(4, BlockSize.adaptive(32768, 4096, 4096, 16, REF, 8));
        assertEquals(8, BlockSize.adaptive(65536, 4096, 4096, 16, REF, 8));
        assertEquals(16, BlockSize.adaptive(131072, 4096, 4096, 16, REF, 8));
        assertEquals(16, BlockSize.adaptive(1 << 20, 4096, 4096, 16, REF, 8));
        assertEquals(1, BlockSize.adaptive(5000, 4096, 4096, 16, REF, 8));
        // Head sharded over 8 SSDs: 512-byte slices need 8 tokens to fill a read.
        assertEquals(8, BlockSize.adaptive(16384, 512, 4096, 16, REF, 8));
        assertEquals(16, BlockSize.adaptive(100, 128, 4096, 16, REF, 8));
        assertEquals(8, BlockSize.adaptive(100, 128, 4096, 8, REF, 8));
    }


    /**
     * A page is ranked in parts: the finest power of two dividing it whose slice holds a quarter read
     * within the block count, whether the page is one read or several; the page where none is finer.
     */
    @Property(tries = 300)
    void pagesAreRankedInTheFinestPartsOfAQuarterRead(@ForAll @IntRange(min = 1, max = 4_000_000) int tokens,
            @ForAll @IntRange(min = 1, max = 20_000) int slice, @ForAll("alignments") int alignment,
            @ForAll @IntRange(min = 0, max = 5) int pageLog, @ForAll @IntRange(min = 64, max = 16384) int cost) {
        int page = 1 << pageLog;
        int bt = BlockSize.ranked(tokens, slice, alignment, page, cost, 8);
        assertTrue(bt >= 1 && page % bt == 0, bt + " divides the page of " + page);
        long most = BlockSize.maxBlocks(cost, tokens, 8);
        int quarter = alignment / BlockSize.PARTS_PER_READ;
        if (bt < page) {
            assertTrue((long) bt * slice >= quarter, bt + " tokens of " + slice + " B hold a quarter read");
            assertTrue((tokens + bt - 1L) / bt <= most, "within the block count");
        }
        for (int finer = bt / 2; finer >= 1; finer /= 2) {
            assertTrue((long) finer * slice < quarter || (tokens + finer - 1L) / finer > most,
                    finer + " tokens would have done");
        }
    }

    @Test
    void rankedExamples() {
        int[][] cases = { // {parts, tokens, slice bytes, page tokens}
            {2, 16384, 512, 8}, // 512-byte entries in 8-token pages (one read): 2-token parts
            {1, 4096, 1536, 4}, // 1.5 KiB entries in 4-token pages (6 KiB, two reads): 1-token parts
            {4, 16384, 384, 16}, // 384-byte slices of 96-dim heads in 16-token pages (6 KiB): 4-token parts
            {1, 16384, 4096, 1}, // 4 KiB entries: a page of one token has no parts
            {16, 131072, 4096, 16}, // at 128K the block count keeps 16-token pages of 4 KiB entries whole
        };
        for (int[] c : cases) {
            assertEquals(c[0], BlockSize.ranked(c[1], c[2], 4096, c[3], REF, 8), java.util.Arrays.toString(c));
        }
    }

    /**
     * A cheaper sweep buys finer blocks within the same sweep cost; a costlier one keeps the reference's
     * block count.
     */
    @Property(tries = 200)
    void aCheaperSweepTakesFinerBlocksAtTheSameCost(@ForAll @IntRange(min = 1, max = 4_000_000) int tokens,
            @ForAll @IntRange(min = 1, max = 20_000) int slice, @ForAll("alignments") int alignment,
            @ForAll @IntRange(min = 64, max = 16384) int cost) {
        int bt = BlockSize.adaptive(tokens, slice, alignment, 16, cost, 8);
        int ref = BlockSize.adaptive(tokens, slice, alignment, 16, REF, 8);
        assertTrue(cost <= REF ? bt <= ref : bt == ref, "cost " + cost + ": " + bt + " tokens against " + ref);
        long blocks = (tokens + bt - 1L) / bt;
        assertTrue(bt == 16 || blocks * Math.min(cost, REF) <= BlockSize.sweepBudget(tokens),
                blocks + " blocks of cost " + cost + " cost more than the reference sweep");
    }

    @Test
    void narrowShapesExamples() {
        // 12 query heads on 2 KV heads × 64: six rows per KV head of 64 + 32, 18,204 blocks at most.
        io.kvoffload.KvShape small = new io.kvoffload.KvShape(1, 12, 2, 64, io.kvoffload.DType.BF16);
        assertEquals(2 * 6 * 96, QueryRows.sweepCost(12, 64));
        assertEquals(18204, BlockSize.maxBlocks(QueryRows.sweepCost(12, 64), 131072, 2));
        assertEquals(2560L * 65536 / 1152, BlockSize.maxBlocks(QueryRows.sweepCost(12, 64), 1 << 20, 2), "8 × the budget at 1M");
        assertEquals(8, BlockSize.adaptive(131072, 512, 4096, 16, small, BlockMassIndex.Combination.CLUSTERED_HEAD_MASS, 2));
        assertEquals(16, BlockSize.adaptive(131072, 512, 4096, 16, REF, 8));
        // Llama-3-8B (32 on 8 × 128): two rows, the reference; MHA and wider shapes keep its count.
        io.kvoffload.KvShape llama = new io.kvoffload.KvShape(1, 32, 8, 128, io.kvoffload.DType.BF16);
        assertEquals(16, BlockSize.adaptive(131072, 4096, 4096, 16, llama, BlockMassIndex.Combination.CLUSTERED_HEAD_MASS, 1));
        assertEquals(BlockSize.MAX_FINE_BLOCKS, BlockSize.maxBlocks(2 * REF, 131072, 8));
        assertEquals(16, BlockSize.adaptive(1 << 20, 512, 4096, 16, 2 * REF, 8), "costlier: 16-token blocks at 1M");
        // 14 on 2 × 64 per head group (256-byte slices, 16-token pages in quarter-read parts): blocks are
        // sized by its fewest rows (11 of 64 + 32), so 128K takes 8-token parts, not 16.
        io.kvoffload.KvShape qwen = new io.kvoffload.KvShape(1, 14, 2, 64, io.kvoffload.DType.BF16);
        long qwenCost = BlockSize.sweepCost(qwen, BlockMassIndex.Combination.CLUSTERED_HEAD_MASS);
        assertEquals(11 * 96, qwenCost);
        assertEquals(8, BlockSize.ranked(131072, 256, 4096, 16, qwenCost, 2));
        assertEquals(16, BlockSize.ranked(131072, 256, 4096, 16, QueryRows.sweepCost(14, 64), 2), "every row: 16");
        // At 1M its budget is eight times 128K's: 8-token parts still, where Llama-3-8B's layer keeps 16.
        assertEquals(8, BlockSize.ranked(1 << 20, 256, 4096, 16, qwenCost, 2));
        assertEquals(16, BlockSize.adaptive(1 << 20, 4096, 4096, 16, REF, 8));
        assertThrows(IllegalArgumentException.class, () -> BlockSize.maxBlocks(0, 131072, 8));
    }

    /**
     * Beyond 128K a layer ranks no more (head group, block) pairs than the reference's per-head step: MHA
     * 8q/8kv × 64 in 8 head groups (256-byte slices, 16-token pages) ranks 8-token parts at 128K, as its
     * sweep affords, but whole 16-token pages at 1M, where 8-token parts would be twice the reference's
     * pairs; in two head groups, or token striped (one set of blocks), the same sweep keeps 8-token parts.
     */
    @Test
    void beyond128KALayerRanksNoMorePairsThanTheReference() {
        io.kvoffload.KvShape mha = new io.kvoffload.KvShape(1, 8, 8, 64, io.kvoffload.DType.BF16);
        long cost = BlockSize.sweepCost(mha, BlockMassIndex.Combination.CLUSTERED_HEAD_MASS);
        assertTrue(BlockSize.sweepBudget(1 << 20) / cost > 131072, "its sweep alone affords 8-token parts at 1M");
        assertEquals(8, BlockSize.ranked(131072, 256, 4096, 16, cost, 8));
        assertEquals(16, BlockSize.ranked(1 << 20, 256, 4096, 16, cost, 8));
        assertEquals(8, BlockSize.ranked(1 << 20, 256, 4096, 16, cost, 2));
        assertEquals(8, BlockSize.ranked(1 << 20, 256, 4096, 16, cost, 1));
        assertTrue(BlockSize.withinReferencePairs(131072, 1, 1 << 20) && !BlockSize.withinReferencePairs(131072, 8, 1 << 20));
        assertEquals(65536, BlockSize.maxBlocks(cost, 1 << 20, 8));
        assertEquals(32768, BlockSize.maxBlocks(cost, 1 << 20, 16));
        assertEquals(BlockSize.sweepBudget(131072) / cost, BlockSize.maxBlocks(cost, 131072, 8), "up to 128K: the sweep alone");
        assertThrows(IllegalArgumentException.class, () -> BlockSize.maxBlocks(cost, 1 << 20, 0));
    }

    /**
     * A block is scored in the most parts (a power of two dividing it) whose sweep fits the budget; one
     * part more would not fit, or not divide the block.
     */
    @Property(tries = 300)
    void blocksAreScoredInTheMostPartsTheBudgetAffords(@ForAll @IntRange(min = 1, max = 4_000_000) int tokens,
            @ForAll @IntRange(min = 0, max = 5) int blockLog, @ForAll @IntRange(min = 64, max = 40_000) int rowCost) {
        int bt = 1 << blockLog;
        long budget = BlockSize.sweepBudget(tokens);
        int parts = BlockSize.scoredParts(tokens, bt, rowCost, budget);
        assertTrue(parts >= 1 && Integer.bitCount(parts) == 1 && bt % parts == 0, parts + " parts of " + bt);
        long cost = (tokens + (long) bt / parts - 1) / (bt / parts) * rowCost;
        assertTrue(parts == 1 || cost <= budget, parts + " parts cost " + cost + " > " + budget);
        if (2 * parts <= bt) {
            long finer = (tokens + (long) bt / parts / 2 - 1) / (bt / parts / 2) * rowCost;
            assertTrue(finer > budget, "twice the parts would fit: " + finer + " ≤ " + budget);
        }
    }

    @Test
    void scoredPartsExamples() {
        // 10 on 2 × 112 at 16K, 4-token blocks: with its fewest rows (eight of 112 + 32) four parts fit the
        // budget; with all ten rows two would.
        long budget16 = BlockSize.sweepBudget(16384);
        assertEquals(8, QueryRows.fewestRows(BlockMassIndex.Combination.CLUSTERED_HEAD_MASS, 10, 2, 112));
        assertEquals(4, BlockSize.scoredParts(16384, 4, QueryRows.sweepCost(8, 112), budget16));
        assertEquals(2, BlockSize.scoredParts(16384, 4, QueryRows.sweepCost(10, 112), budget16));
        // Llama-3-8B's layer (two rows a KV head) has no room at 16K (2-token blocks) nor at 128K or 1M.
        assertEquals(1, BlockSize.scoredParts(16384, 2, REF, budget16));
        assertEquals(1, BlockSize.scoredParts(131072, 16, REF, BlockSize.sweepBudget(131072)));
        assertEquals(1, BlockSize.scoredParts(1 << 20, 16, REF, BlockSize.sweepBudget(1 << 20)));
        // A short layer scores single tokens.
        assertEquals(16, BlockSize.scoredParts(4096, 16, REF, BlockSize.sweepBudget(4096)));
        assertEquals(1, BlockSize.scoredParts(4096, 1, REF, BlockSize.sweepBudget(4096)), "a one-token block has no parts");
        assertThrows(IllegalArgumentException.class, () -> BlockSize.scoredParts(4096, 16, 0, budget16));
    }

    /**
     * {@code mass-auto-cal}'s second index: parts sized by half the fewest rows, at least one a KV head,
     * where the fewest leave no room (Llama-3-8B's layer at 16K and 128K, 24 on 8 × 64 at 128K).
     */
    @Test
    void partsFirstHalveTheRowsTheyAreSizedBy() {
        BlockMassIndex.Combination c = BlockMassIndex.Combination.CLUSTERED_HEAD_MASS;
        assertEquals(16, BlockSize.partRows(c, 32, 8, 128, false));
        assertEquals(8, BlockSize.partRows(c, 32, 8, 128, true));
        assertEquals(18, BlockSize.partRows(c, 24, 8, 64, false));
        assertEquals(9, BlockSize.partRows(c, 24, 8, 64, true));
        assertEquals(8, BlockSize.partRows(c, 8, 8, 64, true), "at least one a KV head");
        assertEquals(8, BlockSize.partRows(BlockMassIndex.Combination.HEAD_MASS, 32, 8, 128, true), "clustered rows only");
        assertEquals(1, BlockSize.scoredParts(16384, 2, c, 32, 8, 128, false));
        assertEquals(2, BlockSize.scoredParts(16384, 2, c, 32, 8, 128, true));
        assertEquals(1, BlockSize.scoredParts(131072, 16, c, 32, 8, 128, false));
        assertEquals(2, BlockSize.scoredParts(131072, 16, c, 32, 8, 128, true));
        assertEquals(1, BlockSize.scoredParts(131072, 16, c, 24, 8, 64, false));
        assertEquals(2, BlockSize.scoredParts(131072, 16, c, 24, 8, 64, true));
    }

    @Test
    void runsHoldWholePagesOfAtLeastSixteenKibibytes() {
        assertEquals(4, BlockSize.run(1, 4096));   // 4 KiB entries: 4 one-token pages a device
        assertEquals(4, BlockSize.run(2, 4096));
        assertEquals(16, BlockSize.run(16, 4096)); // a 64 KiB page is a run by itself
        assertEquals(8, BlockSize.run(4, 2048));
        assertEquals(32, BlockSize.run(8, 512));
        assertEquals(12, BlockSize.run(3, 1500));  // whole pages: 18,000 bytes
    }

    @Test
    void pagesAreFoundOnlyInConsecutiveEqualPages() {
        assertEquals(8, BlockSize.pages(units(new int[][] {{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10}}, 0), 11));
        assertEquals(0, BlockSize.pages(units(new int[][] {{0, 1, 2}, {3, 4, 5, 6}}, 0), 7), "unequal pages");
        assertEquals(0, BlockSize.pages(units(new int[][] {{0, 2}, {1, 3}}, 0), 4), "not consecutive");
        assertEquals(0, BlockSize.pages(units(new int[][] {{0, 1}, {2, 3}}, 1), 4), "co-activation clusters");
        assertEquals(0, BlockSize.pages(units(new int[][] {{0, 1}}, 0), 4), "not covering the layer");
    }

    private static io.kvoffload.strategy.LayoutUnits units(int[][] u, int coActivation) {
        return new io.kvoffload.strategy.LayoutUnits() {
            @Override public int count() { return u.length; }
            @Override public int size(int unit) { return u[unit].length; }
            @Override public int member(int unit, int i) { return u[unit][i]; }
            @Override public int coActivationUnits() { return coActivation; }
        };
    }
}
