package io.kvoffload.internal.baseline;

import io.kvoffload.internal.select.TokenSelector;

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
}
