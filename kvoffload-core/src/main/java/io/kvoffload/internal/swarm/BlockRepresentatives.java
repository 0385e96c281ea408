package io.kvoffload.internal.swarm;

import io.kvoffload.internal.util.Int8Rounding;

/**
 * Two representatives per block and KV head for {@link BlockMassIndex}'s REPS scorings: the block's keys
 * split by a deterministic 2-means ({@link TwoMeans}), each centroid int8 with one scale per head and
 * dimension, and the log of its member count. A block's logit for a query is estimated as the
 * log-sum-exp of the two centroids' logits, each counted for its members, less {@code ln(block
 * tokens)}: a block of two kinds of keys is two points, not their blurred mean.
 */
final class BlockRepresentatives {
    private final int headDim;
    private final int blocks;
    private final Int8Rows rep0, rep1;               // dim-major, as the index's summaries
    private final float[][] logCount0, logCount1;    // ln(members) of each representative, per head and block
    private final float[] chunk0, chunk1;            // one chunk of each representative's logits

    BlockRepresentatives(int kvHeads, int headDim, int blocks, int chunk) {
        this.headDim = headDim;
        this.blocks = blocks;
        this.rep0 = new Int8Rows(kvHeads, headDim, blocks, Int8Rounding.Mode.NEAREST);
        this.rep1 = new Int8Rows(kvHeads, headDim, blocks, Int8Rounding.Mode.NEAREST);
        rep0.stage();
        rep1.stage();
        this.logCount0 = new float[kvHeads][blocks];
        this.logCount1 = new float[kvHeads][blocks];
        this.chunk0 = new float[Math.min(chunk, blocks)];
        this.chunk1 = new float[Math.min(chunk, blocks)];
    }

    /** Block {@code b}'s representatives for KV head {@code h} from its {@code n} keys ({@code keys[0, n × headDim)}). */
    void summarise(int h, int b, float[] keys, int n) {
        float[] c0 = new float[headDim], c1 = new float[headDim];
        int n0 = TwoMeans.of(keys, n, headDim, c0, c1);
        for (int j = 0; j < headDim; j++) {
            rep0.set(h, j * blocks + b, c0[j]);
            rep1.set(h, j * blocks + b, c1[j]);
        }
        logCount0[h][b] = n0 > 0 ? (float) Math.log(n0) : Float.NEGATIVE_INFINITY;
        logCount1[h][b] = n - n0 > 0 ? (float) Math.log(n - n0) : Float.NEGATIVE_INFINITY;
    }

    /** Quantises the representatives once every block is added. */
    void quantise() {
        rep0.quantise();
        rep1.quantise();
    }

    /** DRAM the representatives and their working chunks hold. */
    long memoryBytes(int kvHeads) {
        return 2 * ((long) kvHeads * blocks * headDim + 4L * kvHeads * headDim) + 8L * kvHeads * blocks
                + 4L * (chunk0.length + chunk1.length);
    }

    /**
     * Adds {@code weight ×} the representatives' estimate of KV head {@code h}'s logits for blocks {@code
     * [from, from + n)} to {@code acc[0, n)}, for the query row {@code query[q0, q0 + headDim)};
     * {@code logBlockTokens} is each block's {@code ln(tokens)}, which the index's accumulators start from.
     */
    void addEstimate(float[] acc, int n, float[] query, int q0, int h, int from, float weight, float[] logBlockTokens) {
        float[] a0 = chunk0, a1 = chunk1;
        java.util.Arrays.fill(a0, 0, n, 0f);
        java.util.Arrays.fill(a1, 0, n, 0f);
        byte[] r0 = rep0.row(h), r1 = rep1.row(h);
        for (int j = 0; j < headDim; j++) {
            float q = query[q0 + j];
            SweepTerms.axpy(a0, 0, n, q * rep0.scale(h, j), r0, j * blocks + from);
            SweepTerms.axpy(a1, 0, n, q * rep1.scale(h, j), r1, j * blocks + from);
        }
        float[] lc0 = logCount0[h], lc1 = logCount1[h];
        for (int i = 0; i < n; i++) {
            float x0 = a0[i] + lc0[from + i], x1 = a1[i] + lc1[from + i];
            float top = Math.max(x0, x1);
            float lse = top + (float) Math.log(Math.exp(x0 - top) + Math.exp(x1 - top)) - logBlockTokens[from + i];
            acc[i] += weight * lse;
        }
    }
}
