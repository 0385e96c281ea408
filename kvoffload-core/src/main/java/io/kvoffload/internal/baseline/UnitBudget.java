package io.kvoffload.internal.baseline;

import io.kvoffload.internal.util.PartialTopK;

/**
 * Spends a token budget on a baseline's units (Quest's pages, InfLLM's blocks) inside {@link
 * BaselineSelector#selectBetween}'s range: the best-scoring units first, as many as the budget
 * holds, the last one cut so that the positions are exactly the budget. Units are regular: unit
 * {@code u} covers {@code [base + u·size, min(end, base + (u + 1)·size))}. Allocation-free.
 */
final class UnitBudget {
    private final int base;
    private final int size;
    private final int end;
    private final int[] chosen;
    private final int[] kept;
    private final PartialTopK topK;

    UnitBudget(int base, int size, int end) {
        this.base = base;
        this.size = size;
        this.end = Math.max(base, end);
        int units = (this.end - base + size - 1) / size;
        this.chosen = new int[units];
        this.kept = new int[units];
        this.topK = new PartialTopK(units);
    }

    /**
     * Writes at {@code out[at …]} at most {@code budget} positions of {@code [from, to)}: those of the
     * units with the largest {@code scores} (ties to the lower unit), the lowest-ranked cut to fit;
     * returns the new end.
     */
    int take(float[] scores, int budget, int from, int to, int[] out, int at) {
        int lo = Math.max(from, base), hi = Math.min(to, end);
        if (lo >= hi || budget <= 0) {
            return at;
        }
        int u0 = (lo - base) / size, u1 = (hi - base + size - 1) / size;
        int k = Math.min(u1 - u0, ceilDiv(budget, size));
        int c, tokens;
        while (true) { // the first and last unit may be clipped by the range: then take more
            c = topK.top(scores, u0, u1, k, chosen, 0);
            tokens = 0;
            for (int i = 0; i < c; i++) {
                kept[i] = tokensIn(chosen[i], lo, hi);
                tokens += kept[i];
            }
            if (tokens >= budget || k == u1 - u0) {
                break;
            }
            k = Math.min(u1 - u0, k + ceilDiv(budget - tokens, size));
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
            at = AbstractSelector.range(out, at, s, s + kept[i]);
        }
        return at;
    }

    private int tokensIn(int unit, int lo, int hi) {
        int s = base + unit * size;
        return Math.max(0, Math.min(hi, s + size) - Math.max(lo, s));
    }

    private static int ceilDiv(int a, int b) {
        return (a + b - 1) / b;
    }
}
