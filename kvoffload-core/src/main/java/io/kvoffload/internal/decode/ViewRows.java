package io.kvoffload.internal.decode;

import io.kvoffload.internal.util.StampSet;
import java.util.Arrays;

/**
 * The rows of one fetch's view: each distinct token position once, in the order added, with the
 * row of every token. Repeats (a token in two selected clusters, or also in the window) are found
 * in a {@link StampSet} of positions, so starting a step costs nothing and nothing is allocated
 * once the arrays have grown to the context.
 */
public final class ViewRows {
    private final StampSet added = new StampSet();
    private int[] rowOf = new int[0];
    private int[] token = new int[1024];

    /** Starts a step over positions {@code [0, tokens)}: no token has a row. */
    public void begin(int tokens) {
        if (added.clear(tokens)) {
            rowOf = new int[added.capacity()];
        }
    }

    /**
     * Gives {@code t} row {@code rows} unless it has one this step.
     *
     * @param rows the rows so far
     * @return the rows after the call
     */
    public int add(int t, int rows) {
        if (!added.add(t)) {
            return rows;
        }
        rowOf[t] = rows;
        if (rows == token.length) {
            token = Arrays.copyOf(token, rows * 2);
        }
        token[rows] = t;
        return rows + 1;
    }

    /** Whether {@code t} has a row this step. */
    public boolean contains(int t) {
        return added.contains(t);
    }

    /** The row of {@code t} (valid for tokens added this step). */
    public int row(int t) {
        return rowOf[t];
    }

    /** The token of row {@code r}. */
    public int token(int r) {
        return token[r];
    }
}
