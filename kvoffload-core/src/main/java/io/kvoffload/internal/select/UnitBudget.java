package io.kvoffload.internal.select;

import io.kvoffload.internal.util.PartialTopK;

/**
 * Spends a token budget on a selector's units (Quest's pages, InfLLM's blocks, KVSwap's groups)
 * between the pipeline's sinks and window: the best-scoring units that hold tokens of the range, as
 * many as those tokens take to reach the budget ({@link #cover}); {@link #take} also cuts the
 * lowest-ranked one so that the positions are exactly the budget. Units are regular: unit {@code u}
 * covers {@code [base + u·size, min(end, base + (u + 1)·size))}. Allocation-free.
 */
public final class UnitBudget {
    private final int base;
    private final int size;
    private final int end;
    private final int[] chosen;
    private final int[] kept;
    private final PartialTopK topK;

    public UnitBudget(int base, int size, int end) {
        this.base = base;
        this.size = size;
        this.end = Math.max(base, end);
        int units = (this.end - base + size - 1) / size;
        this.chosen = new int[units];
        this.kept = new int[units];
        this.topK = new PartialTopK(units);
    }

    /**
     * The best units by {@code scores} (ties to the lower unit) that hold tokens of {@code [from, to)},
     * as many as it takes for those tokens to reach {@code budget} (or all of them), ids ascending into
     * {@code out}; returns how many. The last may bring up to {@code size − 1} tokens more. The two
     * units the range cuts hold fewer of its tokens, so at most {@code ⌈budget / size⌉ + 2} are taken.
     */
    public static int cover(PartialTopK topK, float[] scores, int base, int size, int end, int budget, int from, int to,
            int[] out) {
        int lo = Math.max(from, base), hi = Math.min(to, end);
        if (lo >= hi || budget <= 0) {
            return 0;
        }
        int u0 = (lo - base) / size, u1 = (hi - base + size - 1) / size;
        int k = Math.min(u1 - u0, Math.ceilDiv(budget, size));
        while (true) {
            int c = topK.top(scores, u0, u1, k, out, 0);
            long tokens = 0;
            for (int i = 0; i < c; i++) {
                tokens += tokensIn(out[i], base, size, lo, hi);
            }
            if (tokens >= budget || k == u1 - u0) {
                return c;
            }
            k = (int) Math.min(u1 - u0, k + (budget - tokens + size - 1) / size);
        }
    }

    /**
     * Writes at {@code out[at …]} at most {@code budget} positions of {@code [from, to)}: those of the
     * units {@link #cover} takes, the lowest-ranked cut to fit; returns the new end.
     */
    public int take(float[] scores, int budget, int from, int to, int[] out, int at) {
        int lo = Math.max(from, base), hi = Math.min(to, end);
        int c = cover(topK, scores, base, size, end, budget, from, to, chosen);
        int tokens = 0;
        for (int i = 0; i < c; i++) {
            kept[i] = tokensIn(chosen[i], base, size, lo, hi);
            tokens += kept[i];
        }
        for (int excess = tokens - budget; excess > 0; ) {
            int worst = -1; // the lowest-ranked unit still kept: the smallest score, the later of equals
            for (int i = 0; i < c; i++) {
                if (kept[i] > 0 && (worst < 0 || !(scores[chosen[i]] > scores[chosen[worst]]))) {
                    worst = i;
                }
            }
            int cut = Math.min(excess, kept[worst]);
            kept[worst] -= cut;
            excess -= cut;
        }
        for (int i = 0; i < c; i++) { // ascending units: positions come out ascending
            int s = Math.max(lo, base + chosen[i] * size);
            for (int t = s, e = s + kept[i]; t < e; t++) {
                out[at++] = t;
            }
        }
        return at;
    }

    private static int tokensIn(int unit, int base, int size, int lo, int hi) {
        int s = base + unit * size;
        return Math.max(0, Math.min(hi, s + size) - Math.max(lo, s));
    }
}
