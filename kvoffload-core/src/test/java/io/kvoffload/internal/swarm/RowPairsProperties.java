package io.kvoffload.internal.swarm;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/**
 * {@link RowPairs}: the order is a permutation of the rows, every row but an odd one out is paired,
 * the first pair shares the most terms of any two rows, and each pair's shared count is the number of
 * dimensions both rows keep on the same side.
 */
class RowPairsProperties {

    @Property(tries = 200)
    void pairsTheRowsThatShareTheMostFirst(@ForAll @IntRange(min = 1, max = 8) int rows,
            @ForAll @IntRange(min = 1, max = 32) int dims, @ForAll long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        byte[] hi = new byte[dims], lo = new byte[dims];
        int stride = 2 * dims;
        SweepTerms terms = new SweepTerms(rows * stride, 0f);
        int[] count = new int[rows];
        int[][] side = new int[rows][dims]; // 0 pruned, 1 hi, 2 lo
        for (int r = 0; r < rows; r++) {
            for (int j = 0; j < dims; j++) {
                side[r][j] = rnd.nextInt(3);
                if (side[r][j] != 0) {
                    count[r] = terms.term(r * stride + count[r], 1f, side[r][j] == 1 ? hi : lo, j, 1f) - r * stride;
                }
            }
        }
        int[][] both = new int[rows][rows];
        int most = -1;
        for (int a = 0; a < rows; a++) {
            for (int b = a + 1; b < rows; b++) {
                for (int j = 0; j < dims; j++) {
                    both[a][b] += side[a][j] != 0 && side[a][j] == side[b][j] ? 1 : 0;
                }
                both[b][a] = both[a][b];
                most = Math.max(most, both[a][b]);
            }
        }
        RowPairs pairs = new RowPairs(rows);
        pairs.pair(terms, count, rows, stride, true);
        assertEquals(rows / 2, pairs.pairs());
        boolean[] seen = new boolean[rows];
        for (int i = 0; i < rows; i++) {
            seen[pairs.row(i)] = true;
        }
        for (int r = 0; r < rows; r++) {
            assertEquals(true, seen[r], "row " + r + " in the order");
        }
        for (int p = 0; p < pairs.pairs(); p++) {
            assertEquals(both[pairs.row(2 * p)][pairs.row(2 * p + 1)], pairs.shared(p), "pair " + p);
        }
        if (rows > 1) {
            assertEquals(most, pairs.shared(0), "the first pair shares the most");
        }
        pairs.pair(terms, count, rows, stride, false);
        assertEquals(0, pairs.pairs(), "no pairs without sharing");
        for (int i = 0; i < rows; i++) {
            assertEquals(i, pairs.row(i));
        }
    }
}
