package io.kvoffload.internal.decode;

import java.util.Arrays;

/**
 * The rows of one fetch's view: each distinct token position once, in the order added, with the
 * row of every token. Repeats (a token in two selected clusters, or also in the window) are found
 * by a generation stamp per position, so starting a step costs nothing and nothing is allocated
 * once the arrays have grown to the context.
 */
public final class ViewRows {
    private int[] stamp = new int[0];
    private int[] rowOf = new int[0];
    private int[] token = new int[1024];
    private int generation;

    /** Starts a step over positions {@code [0, tokens)}: no token has a row. */
    public void begin(int tokens) {
        if (stamp.length < tokens) {
            int n = Math.max(tokens, stamp.length + (stamp.length >> 1) + 1024);
            stamp = new int[n];
            rowOf = new int[n];
            generation = 0;
        }
        if (++generation == Integer.MAX_VALUE) { // stamps wrap after 2^31 steps: start over
            Arrays.fill(stamp, 0);
            generation = 1;
        }
    }

    /**
     * Gives {@code t} row {@code rows} unless it has one this step.
     *
     * @param rows the rows so far
     * @return the rows after the call
     */
    public int add(int t, int rows) {
        if (stamp[t] == generation) {
            return rows;
        }
        stamp[t] = generation;
        rowOf[t] = rows;
        if (rows == token.length) {
            token = Arrays.copyOf(token, rows * 2);
        }
        token[rows] = t;
        return rows + 1;
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
