package io.kvoffload.internal.swarm;

/**
 * A block's estimated mass from its parts' ({@link BlockMassIndex} scoring blocks in parts): the mass of a
 * block is the sum of its tokens', so a ranked block's share is the sum of its scored parts' shares.
 */
final class PartSums {
    private PartSums() {}

    /**
     * A row's {@code scored} exponentiated parts at {@code x[src …]} summed into its {@code blocks} blocks
     * of {@code parts} parts each (the last may have fewer) at {@code x[dst …]}; {@code dst ≤ src}, so the
     * rows of one array move down in place, each after the rows before it, never over one not yet summed.
     * The blocks with all their parts go through a loop of fixed stride for two and four parts, the counts
     * the sweep's budget gives (a loop per block, whose bound the last block shortens, took 17% of a step
     * at two parts: docs/benchmarks.md, "Parts summed at a fixed stride"); each sum adds the parts in
     * order, as that loop did.
     */
    static void sum(float[] x, int src, int dst, int parts, int scored, int blocks) {
        int whole = scored / parts;
        if (parts == 2) {
            for (int b = 0, i = src; b < whole; b++, i += 2) {
                x[dst + b] = x[i] + x[i + 1];
            }
        } else if (parts == 4) {
            for (int b = 0, i = src; b < whole; b++, i += 4) {
                x[dst + b] = x[i] + x[i + 1] + x[i + 2] + x[i + 3];
            }
        } else {
            for (int b = 0, i = src; b < whole; b++) {
                float m = x[i++];
                for (int p = 1; p < parts; p++) {
                    m += x[i++];
                }
                x[dst + b] = m;
            }
        }
        if (whole < blocks) { // the last block, short of parts
            float m = 0;
            for (int i = src + whole * parts, end = src + scored; i < end; i++) {
                m += x[i];
            }
            x[dst + whole] = m;
        }
    }
}
