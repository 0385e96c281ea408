package io.kvoffload.internal.baseline;

import io.kvoffload.internal.select.TokenSelector;
import io.kvoffload.internal.util.Checks;

/**
 * A {@link TokenSelector} that also reports the memory traffic of its scoring, so a comparison can
 * show what a selector reads to decide, not only what it fetches afterwards.
 */
public interface BaselineSelector extends TokenSelector {
    /** Tokens of the layer this selector was built for. */
    int tokens();

    /**
     * Bytes of index data the last {@link #select} call read to score: the whole key cache for the
     * oracle, page bounds for Quest, codes and codebooks for PQCache, the key rows of the chosen
     * dimensions for SparQ/SparF, and so on. 0 before the first call.
     */
    long lastScoredBytes();

    /**
     * Checks the arguments of {@link #select}: a query of {@code queryHeads × headDim} finite floats,
     * a positive budget and an output array of at least {@link #maxSelected} positions.
     */
    static void checkSelect(BaselineSelector selector, int queryHeads, int headDim, float[] query, int budgetTokens,
            int[] out) {
        Checks.notNull("query", query);
        Checks.notNull("out", out);
        Checks.queryRows(query, queryHeads, headDim);
        int need = selector.maxSelected(budgetTokens); // checks the budget
        if (out.length < need) {
            throw new IllegalArgumentException("out.length = " + out.length + " is too small; allowed: at least maxSelected("
                    + budgetTokens + ") = " + need);
        }
        checkQuery(query);
    }

    /**
     * Checks the arguments of {@code AbstractSelector.selectBetween}: as {@link #checkSelect}, with a range {@code
     * 0 ≤ from ≤ to ≤ tokens()} and an output array of at least {@code min(budgetTokens, to − from)}.
     */
    static void checkBetween(BaselineSelector selector, int queryHeads, int headDim, float[] query, int budgetTokens,
            int from, int to, int[] out) {
        Checks.notNull("query", query);
        Checks.notNull("out", out);
        Checks.queryRows(query, queryHeads, headDim);
        Checks.positive("budgetTokens", budgetTokens);
        if (from < 0 || from > to || to > selector.tokens()) {
            throw new IllegalArgumentException("from = " + from + ", to = " + to + "; allowed: 0 <= from <= to <= tokens() = "
                    + selector.tokens());
        }
        Checks.capacity("out", out.length, Math.min(budgetTokens, to - from));
        checkQuery(query);
    }

    private static void checkQuery(float[] query) {
        for (int i = 0; i < query.length; i++) {
            if (!Float.isFinite(query[i])) {
                throw new IllegalArgumentException("query[" + i + "] = " + query[i] + "; allowed: finite values");
            }
        }
    }
}
