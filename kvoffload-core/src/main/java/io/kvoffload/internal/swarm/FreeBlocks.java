package io.kvoffload.internal.swarm;

/** The blocks a step may choose: those past the sinks and before the local window. */
final class FreeBlocks {
    private FreeBlocks() {}

    /**
     * The candidate blocks, those with a token past the sinks and before the window (which starts at
     * {@code windowFrom}, clamped at 0), as {@code range = [first, end)}: consecutive, since the sinks
     * open the layer and the window closes it. Returns the tokens they add beyond the sinks and the
     * window.
     */
    static long range(BlockMassIndex index, int sinks, int windowFrom, int[] range) {
        int bt = index.blockTokens(), tokens = index.tokens();
        int free = Math.min(Math.max(0, windowFrom), tokens); // tokens at or past it are the window's or not laid out
        if (free <= sinks) {
            range[0] = range[1] = 0;
            return 0;
        }
        range[0] = sinks / bt; // the first block that ends past the sinks
        range[1] = (free + bt - 1) / bt; // the first block that starts at or past the window
        return free - sinks;
    }
}
