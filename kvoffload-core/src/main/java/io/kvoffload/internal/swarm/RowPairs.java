package io.kvoffload.internal.swarm;

/**
 * A KV head's query rows paired for one step of {@link BlockMassIndex}'s sweep: two rows that read the
 * same summary runs (their query heads' signs agree on a dimension, and neither pruned it) sweep those
 * runs together ({@link SweepTerms#sweepPair}), each int8 converted once for both. The pairs are chosen
 * greedily, the two unpaired rows that share the most kept terms first: with three rows a KV head
 * (Llama-3-8B's layer at 128K) the best of three pairs shares about a quarter more terms than rows 0
 * and 1 (docs/benchmarks.md, "Rows share their conversions"). Allocation-free after construction.
 */
final class RowPairs {
    private final int[] order;       // the rows as pairs (order[2p], order[2p + 1]), then the one left
    private final int[] shared;      // pair p's shared terms, first in both rows' terms (SweepTerms#pairUp)
    private final int[] pairShared;  // rows a < b share [a × rows + b] terms, counted once a step
    private int pairs;

    /** @param rows the most rows a KV head has */
    RowPairs(int rows) {
        this.order = new int[rows];
        this.shared = new int[rows];
        this.pairShared = new int[rows * rows];
    }

    /**
     * Pairs {@code rows} rows whose kept terms lie in {@code terms} ({@code counts[k]} from slot {@code k
     * × stride}) and moves each pair's shared terms first in both; with {@code share} false, the rows in
     * order and no pairs.
     */
    void pair(SweepTerms terms, int[] counts, int rows, int stride, boolean share) {
        pairs = share ? rows / 2 : 0;
        for (int k = 0; k < rows; k++) {
            order[k] = k;
        }
        if (pairs > 0 && rows > 2) {
            choose(terms, counts, rows, stride);
        }
        for (int p = 0; p < pairs; p++) {
            int k = order[2 * p], l = order[2 * p + 1];
            shared[p] = terms.pairUp(k * stride, counts[k], l * stride, counts[l]);
        }
    }

    private void choose(SweepTerms terms, int[] counts, int rows, int stride) {
        for (int a = 0; a < rows; a++) {
            for (int b = a + 1; b < rows; b++) {
                pairShared[a * rows + b] = terms.shared(a * stride, counts[a], b * stride, counts[b]);
            }
        }
        for (int p = 0; p < pairs; p++) { // rows from 2p on are unpaired
            int best = -1, bi = 2 * p, bj = 2 * p + 1;
            for (int i = 2 * p; i < rows; i++) {
                for (int j = i + 1; j < rows; j++) {
                    int s = pairShared[Math.min(order[i], order[j]) * rows + Math.max(order[i], order[j])];
                    if (s > best) {
                        best = s;
                        bi = i;
                        bj = j;
                    }
                }
            }
            swap(2 * p, bi); // bj > bi ≥ 2p: the first swap leaves it in place
            swap(2 * p + 1, bj);
        }
    }

    private void swap(int i, int j) {
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }

    /** Pairs of the last {@link #pair}: positions {@code 0 … 2 × pairs() − 1} are paired two by two. */
    int pairs() {
        return pairs;
    }

    /** The row at position {@code i} of the order. */
    int row(int i) {
        return order[i];
    }

    /** The terms pair {@code p}'s rows share, first in both. */
    int shared(int p) {
        return shared[p];
    }

    long memoryBytes() {
        return 4L * (order.length + shared.length + pairShared.length);
    }
}
