package io.kvoffload.internal.util;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Arrays;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/**
 * Both vector candidate passes (the compressing store of AVX-512, the lane table of AVX2) write exactly
 * the scalar pass's indices, on any machine: the Vector API emulates what the hardware lacks. Scores
 * mix NaN (never a candidate), signed zeros and ties at the threshold; ranges start and end off the
 * vector boundaries.
 */
class VectorCompactionProperties {

    @Property(tries = 300)
    void vectorPassesEqualTheScalarPass(@ForAll @IntRange(min = 0, max = 200) int from,
            @ForAll @IntRange(min = 0, max = 700) int len, @ForAll @IntRange(min = 0, max = 40) int m0,
            @ForAll long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        float[] scores = new float[from + len];
        for (int i = 0; i < scores.length; i++) {
            int kind = r.nextInt(10);
            scores[i] = kind == 0 ? Float.NaN : kind == 1 ? -0f : kind == 2 ? 0f : (float) Math.floor(r.nextGaussian() * 4);
        }
        float reach = r.nextInt(3) == 0 ? 0f : (float) Math.floor(r.nextGaussian() * 4);
        int room = m0 + len + Math.max(8, VectorCompaction.lanes()) + 1;
        int[] expected = new int[room];
        int n = PartialTopK.atLeast(scores, from, from + len, reach, expected, m0);
        int[] byTable = new int[room];
        int[] compressed = new int[room];
        assertEquals(n, VectorCompaction.byTable(scores, from, from + len, reach, byTable, m0));
        assertEquals(n, VectorCompaction.compressed(scores, from, from + len, reach, compressed, m0));
        int[] want = Arrays.copyOfRange(expected, m0, n);
        assertArrayEquals(want, Arrays.copyOfRange(byTable, m0, n));
        assertArrayEquals(want, Arrays.copyOfRange(compressed, m0, n));
        for (int i = m0; i < n; i++) {
            assertEquals(true, scores[want[i - m0]] >= reach, "index " + want[i - m0]);
        }
    }
}
