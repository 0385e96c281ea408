package io.kvoffload.internal.baseline;

import io.kvoffload.internal.util.Checks;
import io.kvoffload.strategy.LayerKv;

/**
 * InstInfer's SparF attention, the flash-aware SparQ: the same approximate scores and the same top-k
 * (the scoring, GQA mapping and local window are {@link SparQSelector}'s), but tokens live on flash in
 * page-sized groups of {@code groupSize} (16) consecutive tokens, and the top-k is read in two steps
 * (Algorithm 1, steps 8–9):
 * <ol>
 * <li><b>page filter</b>: a group is read only if one of its tokens reaches the top-k threshold
 *     (InstInfer: "a group will be ignored only if all its tokens rank below the top-k threshold");</li>
 * <li><b>token filter</b>: inside each read group, the flash controller's filter drops the tokens
 *     below the threshold, so attention sees exactly the top-k.</li>
 * </ol>
 *
 * <h2>How this maps to token selection</h2>
 * What attention uses, and what {@link #select} returns, is the filtered set: identical to SparQ's
 * top-k for the same rank and window (the paper reports SparF's accuracy as nearly identical to
 * SparQ's). SparF differs in what it reads: whole groups. {@link #lastGroupsRead()} is the number of
 * groups the first step read (window groups included) and {@link #lastTokensKept()} what the second
 * step kept, so {@code groupsRead × groupSize / tokensKept} is SparF's read amplification (InstInfer:
 * the first step "generally maintains about half of the sparsity"). Step 1 of Algorithm 1, reading the
 * {@code K^T} rows of the top-r dimensions in pages of several dimensions, is accounted in
 * {@link BaselineSelector#lastScoredBytes()} at row granularity.
 */
public final class SparFSelector extends AbstractSparseQuerySelector {
    /** Tokens per flash-page group in InstInfer (16 tokens of 128 FP16 elements = one 4 KiB page). */
    public static final int DEFAULT_GROUP_SIZE = 16;

    private final int groupSize;
    private int groupsRead;
    private int tokensKept;

    /** SparF with {@code r = headDim / 8} and 16-token groups. */
    public SparFSelector(LayerKv kv, int queryHeads, int localWindow) {
        this(kv, queryHeads, Math.max(1, kv.headDim() / SparQSelector.DEFAULT_RANK_DIVISOR), localWindow,
                DEFAULT_GROUP_SIZE);
    }

    /**
     * @param rank {@code r}, query dimensions kept per query head, 1..headDim
     * @param localWindow newest tokens always kept, 0..2^30
     * @param groupSize tokens per flash-page group, 1..65536
     */
    public SparFSelector(LayerKv kv, int queryHeads, int rank, int localWindow, int groupSize) {
        super(kv, queryHeads, rank, localWindow);
        this.groupSize = Checks.inRange("groupSize", groupSize, 1, 65536);
    }

    @Override
    public String name() {
        return "sparf";
    }

    public int groupSize() {
        return groupSize;
    }

    /** Groups the last {@link #select}'s first step read from flash. */
    public int lastGroupsRead() {
        return groupsRead;
    }

    /** Tokens the last {@link #select}'s second step kept (what it returned). */
    public int lastTokensKept() {
        return tokensKept;
    }

    @Override
    int whole(int[] out) {
        groupsRead = (tokens + groupSize - 1) / groupSize;
        tokensKept = tokens;
        return range(out, 0, 0, tokens);
    }

    @Override
    int pick(int from, int to, int k, int[] out, int at, int windowFrom, int windowTo) {
        int n = at;
        int groups = 0;
        int lastGroup = -1;
        if (k >= to - from) {
            for (int t = from; t < to; t++) {
                out[n++] = t;
                if (t / groupSize != lastGroup) {
                    lastGroup = t / groupSize;
                    groups++;
                }
            }
        } else if (k > 0) {
            float threshold = topK.kthLargest(scores, from, to, k);
            int above = 0;
            for (int t = from; t < to; t++) {
                if (scores[t] > threshold) {
                    above++;
                }
            }
            int ties = k - above; // ties at the threshold go to the lower position, as in SparQ
            for (int g0 = from; g0 < to; ) {
                int g1 = Math.min(to, (g0 / groupSize + 1) * groupSize);
                float best = Float.NEGATIVE_INFINITY;
                for (int t = g0; t < g1; t++) {
                    best = Math.max(best, scores[t]);
                }
                // Step 1: the page is read if it holds a top-k token: one above the threshold, or one
                // at it while the lower positions have not used up the ties.
                if (best > threshold || (best == threshold && ties > 0)) {
                    groups++;
                    lastGroup = g0 / groupSize;
                    for (int t = g0; t < g1; t++) { // step 2: the filter keeps only the top-k tokens
                        float s = scores[t];
                        if (s > threshold || (s == threshold && ties-- > 0)) {
                            out[n++] = t;
                        }
                    }
                }
                g0 = g1;
            }
        }
        for (int t = windowFrom; t < windowTo; t++) { // the local window is read whole
            out[n++] = t;
            if (t / groupSize != lastGroup) {
                lastGroup = t / groupSize;
                groups++;
            }
        }
        groupsRead = groups;
        tokensKept = n - at;
        return n;
    }
}
