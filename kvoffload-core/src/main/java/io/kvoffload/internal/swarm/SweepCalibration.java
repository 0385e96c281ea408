package io.kvoffload.internal.swarm;

import io.kvoffload.KvShape;
import io.kvoffload.attention.ExactAttention;
import io.kvoffload.internal.storage.HeadShards;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.internal.util.PartialTopK;
import io.kvoffload.strategy.FetchPlan;
import io.kvoffload.strategy.LayerSelector;

/**
 * A layer's choice between ways to spend the same sweep, made on the query of the step that opens it:
 * more query rows over the default's blocks, or, with half the rows ({@link BlockSize#partRows}), the
 * same blocks scored in more parts or finer blocks. Which ranks closer to the oracle depends on the
 * layer's attention: rows where a KV head's query heads attend apart (retrieval heads), parts or finer
 * blocks where what a head attends comes in runs shorter than a block. Keys alone do not tell, a query
 * does: each selector chooses for the opening query at a 10% budget, and the exact attention over the
 * layer's keys says how much of each query head's mass each choice holds. The others' indexes are
 * twice the default's (a summary per part or finer block), so one must hold at least {@link #MIN_GAIN}
 * more of the mass to be kept, and open no more reads than the default's plan (within {@link
 * #MAX_EXTRA_READS}) or, if more, at most {@link #EXACT_READ_SHARE} of what the exact selection of the
 * same rows opens for the query: it spends reads on attention only while the plan stays well below the
 * exact top-k's bytes.
 *
 * <p>{@code mass-auto-cal} makes this choice on every layer, the default {@code mass-auto} on layers whose
 * half rows still pair ({@link BlockSize#halfRowsPair}), and elsewhere among the candidates whose summaries
 * stream no more bytes than the reference layer's index ({@link BlockSize#withinReferenceBytes}); the
 * default's finer blocks, either way, only where they rank no more (head group, block) pairs a step than
 * the reference's ({@link BlockSize#withinReferencePairs}).
 *
 * <p>On issue #16's cells it changed 18 of 46 at 128K tokens and 8 of 66 at 16K–64K, each for the better
 * in recall and output error (docs/benchmarks.md, "Rows, parts or finer blocks, chosen on the opening
 * query"). It costs one exact attention over the layer and the other candidates' summaries when the layer
 * opens, all from one read of its keys and one pass of their bounds (its parts' and finer blocks' summaries are
 * the same bytes, built once: {@code BlockSummaries#together}); per step, the index it keeps.
 */
final class SweepCalibration {
    private SweepCalibration() {}

    /** Attention mass (a mean over query heads, 0..1) another candidate must add to be worth its larger index. */
    static final double MIN_GAIN = 0.01;

    /**
     * Aligned reads another candidate's plan may add to the first's, as a share of them: finer blocks
     * of entries smaller than a read can spread the same rows over more reads (28q/4kv × 96 token
     * striped at 32K: 0.56 → 0.71 × the oracle's bytes), and the calibration weighs attention, not bytes.
     */
    static final double MAX_EXTRA_READS = 0.02;

    /**
     * Beyond {@link #MAX_EXTRA_READS}, a candidate may open up to this share of the reads of the exact
     * selection ({@link #exactReads}: the same rows, the tokens of most exact attention): finer blocks
     * spread their rows over more reads but still read far less than the exact top-k does, which reads
     * scattered tokens. The opening query's share foretells the later steps' within about 0.03 (0.50,
     * 0.53 and 0.84 against 0.47, 0.52 and 0.83 × the oracle's bytes over the steps of three cells), so
     * this share keeps a plan below issue #16's target of 0.6 × the oracle's bytes with that margin
     * (docs/benchmarks.md, "Reads for attention, up to about half the exact selection's").
     */
    static final double EXACT_READ_SHARE = 0.55;

    /**
     * The candidate that should serve the layer: each plans a step for {@code query} at a 10% budget
     * ({@code headGroups} as the layout stores them) and the one whose tokens hold the most of the exact
     * attention mass ({@code weights}: each query head's softmax over the layer's keys, {@link
     * ExactAttention#headWeights}), averaged over the query heads, is chosen; the first (the default's
     * index) unless another holds at least {@link #MIN_GAIN} more, since every other has the larger
     * index, and opens at most {@link #MAX_EXTRA_READS} more aligned reads ({@link #reads}, {@code
     * sliceBytes} of a token on one device) or at most {@link #EXACT_READ_SHARE} of {@link #exactReads}
     * (the candidates choose among tokens {@code [sinks, tokens − window)}, and so does the exact selection).
     */
    static int choose(float[][] weights, int tokens, KvShape shape, int headGroups, int layer, float[] query,
            java.util.List<LayerSelector> candidates, long sliceBytes, int sinks, int window) {
        Checks.queryRows(query, shape.queryHeads(), shape.headDim());
        FetchPlan[] plans = new FetchPlan[candidates.size()];
        for (int i = 0; i < plans.length; i++) {
            plans[i] = plan(shape, headGroups, layer, tokens);
            candidates.get(i).select(query, plans[i]);
        }
        double[] mass = masses(weights, shape, plans);
        long firstReads = reads(plans[0], tokens, shape.kvHeads(), headGroups, sliceBytes);
        long exact = -1; // the exact selection's reads, planned only if a candidate needs them
        int best = 0;
        for (int i = 1; i < plans.length; i++) {
            if (mass[i] < mass[0] + MIN_GAIN || mass[i] <= mass[best]) {
                continue;
            }
            long reads = reads(plans[i], tokens, shape.kvHeads(), headGroups, sliceBytes);
            if (reads > firstReads * (1 + MAX_EXTRA_READS)) {
                exact = exact >= 0 ? exact : exactReads(weights, shape, headGroups, layer, tokens, sinks, window, sliceBytes);
                if (reads > EXACT_READ_SHARE * exact) {
                    continue;
                }
            }
            best = i;
        }
        return best;
    }

    /**
     * The aligned reads ({@link #reads}) of the exact selection of a candidate's rows for the query: the
     * (head group, token) pairs of tokens {@code [sinks, tokens − window)} whose exact attention, summed
     * over the group's query heads, is largest, as many as a candidate's 10% budget spends ({@code
     * headGroups} pairs a token's entries).
     */
    static long exactReads(float[][] weights, KvShape shape, int headGroups, int layer, int tokens, int sinks, int window,
            long sliceBytes) {
        int from = Math.min(tokens, Math.max(0, sinks)), to = Math.max(from, tokens - Math.max(0, window)), n = to - from;
        int kvHeads = shape.kvHeads(), perGroup = kvHeads / headGroups, group = shape.queryHeads() / kvHeads;
        FetchPlan plan = plan(shape, headGroups, layer, tokens);
        long want = Math.min((long) n * headGroups, (long) plan.budget() * headGroups);
        if (want <= 0) {
            return 0;
        }
        float[] pairs = new float[headGroups * n];
        for (int q = 0; q < shape.queryHeads(); q++) {
            int at = q / group / perGroup * n;
            float[] w = weights[q];
            for (int t = 0; t < n; t++) {
                pairs[at + t] += w[from + t];
            }
        }
        int[] chosen = new int[(int) want];
        int got = new PartialTopK(pairs.length).top(pairs, 0, pairs.length, (int) want, chosen, 0);
        long[] heads = new long[n];
        for (int i = 0; i < got; i++) {
            heads[chosen[i] % n] |= HeadShards.groupBits(chosen[i] / n, perGroup);
        }
        long all = HeadShards.headBits(0, kvHeads);
        plan.ensureCapacity(n);
        for (int t = 0; t < n; t++) {
            if (heads[t] != 0) {
                plan.add(from + t, heads[t] == all || headGroups == 1 ? FetchPlan.ALL_HEADS : heads[t]);
            }
        }
        return reads(plan, tokens, kvHeads, headGroups, sliceBytes);
    }

    /**
     * The aligned reads {@code plan} opens, as the default page layout stores a layer: each head group's
     * slices ({@code sliceBytes} a token) one after another, so a token's slice lies on the {@link
     * BlockSize#READ_ALIGNMENT} reads that its bytes overlap, and each (group, read) is counted once (as
     * the scheduler reads entries that share an aligned block once, and as select-eval counts bytes).
     */
    static long reads(FetchPlan plan, int tokens, int kvHeads, int headGroups, long sliceBytes) {
        long align = BlockSize.READ_ALIGNMENT, slice = Math.max(1, sliceBytes);
        int perGroup = kvHeads / headGroups;
        long readsPerGroup = ((long) tokens * slice + align - 1) / align;
        long[] seen = new long[(int) ((headGroups * readsPerGroup + 63) >>> 6)];
        long n = 0;
        for (int i = 0, size = plan.size(); i < size; i++) {
            long from = plan.position(i) * slice, first = from / align, last = (from + slice - 1) / align;
            long mask = plan.kvHeadMask(i);
            for (int g = 0; g < headGroups; g++) {
                if (headGroups > 1 && mask != FetchPlan.ALL_HEADS && (mask & HeadShards.groupBits(g, perGroup)) == 0) {
                    continue; // no head of this group planned here
                }
                for (long r = g * readsPerGroup + first, end = g * readsPerGroup + last; r <= end; r++) {
                    if ((seen[(int) (r >>> 6)] & 1L << r) == 0) {
                        seen[(int) (r >>> 6)] |= 1L << r;
                        n++;
                    }
                }
            }
        }
        return n;
    }

    private static FetchPlan plan(KvShape shape, int headGroups, int layer, int tokens) {
        FetchPlan p = new FetchPlan();
        p.heads(shape.kvHeads(), headGroups);
        p.begin(layer, tokens, Math.max(1, tokens / 10));
        return p;
    }

    /**
     * The exact attention mass each plan's positions hold: the mean over query heads of each head's softmax
     * weights ({@code weights}, {@link ExactAttention#headWeights}) on the positions its KV head is planned
     * for, each position counted once.
     */
    static double[] masses(float[][] weights, KvShape shape, FetchPlan... plans) {
        int tokens = weights[0].length, kvHeads = shape.kvHeads(), group = shape.queryHeads() / kvHeads;
        long[] seen = new long[(int) (((long) tokens * kvHeads + 63) >>> 6)]; // (KV head, token) pairs counted
        double[] total = new double[plans.length];
        for (int p = 0; p < plans.length; p++) {
            java.util.Arrays.fill(seen, 0L);
            FetchPlan plan = plans[p];
            for (int i = 0, n = plan.size(); i < n; i++) {
                int t = plan.position(i);
                long m = plan.kvHeadMask(i);
                for (int h = 0; h < kvHeads; h++) {
                    long at = (long) h * tokens + t;
                    if ((m == FetchPlan.ALL_HEADS || (m >>> h & 1L) != 0) && (seen[(int) (at >>> 6)] & 1L << at) == 0) {
                        seen[(int) (at >>> 6)] |= 1L << at;
                        for (int g = 0; g < group; g++) {
                            total[p] += weights[h * group + g][t];
                        }
                    }
                }
            }
            total[p] /= shape.queryHeads();
        }
        return total;
    }
}
