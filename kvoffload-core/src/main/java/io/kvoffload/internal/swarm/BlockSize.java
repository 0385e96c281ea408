package io.kvoffload.internal.swarm;

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
     * "Finer blocks", "Block size by layer length"); beyond 131,072 tokens every layer gets 16-token
     * blocks, as the 8 ms target at 1M leaves no room for more.
     */
    static final int MAX_FINE_BLOCKS = 8192;

    /**
     * The read unit assumed where a layer's context names no stored layout (in memory): the 4 KiB of
     * O_DIRECT reads on the SSDs this library targets. A stored layout's own pages take precedence.
     */
    static final int READ_ALIGNMENT = 4096;

    /**
     * Tokens per block for a layer of {@code tokens} tokens whose slice of a token on one device is
     * {@code sliceBytes} (the entry, or one head group's slice under head sharding), on devices that read
     * {@code alignment}-byte units: the smallest power of two up to {@code coarsest} such that a block's
     * slice fills one aligned read (finer blocks would be padded on disk and in every read) and the layer
     * has at most {@link #MAX_FINE_BLOCKS} blocks (the sweep costs no more than the 16-token one at
     * 128K); {@code coarsest} where none does both.
     */
    static int adaptive(int tokens, long sliceBytes, int alignment, int coarsest) {
        int bt = 1;
        while (bt < coarsest && (bt * sliceBytes < alignment || (tokens + (long) bt - 1) / bt > MAX_FINE_BLOCKS)) {
            bt <<= 1;
        }
        return Math.min(bt, coarsest);
    }

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
