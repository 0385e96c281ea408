package io.kvoffload.internal.util;

import io.kvoffload.internal.baseline.Layers;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Arrays;
import java.util.Comparator;
import java.util.stream.IntStream;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

class PartialTopKProperties {

    private static float[] coarse(float[] raw) {
        float[] s = new float[raw.length];
        for (int i = 0; i < raw.length; i++) {
            s[i] = Float.isNaN(raw[i]) ? 0f : Math.round(raw[i]) % 5; // few distinct values: many ties
        }
        return s;
    }

    /** Indices of [from, to) by (score descending, index ascending). */
    private static int[] ranked(float[] s, int from, int to) {
        return IntStream.range(from, to).boxed()
                .sorted(Comparator.<Integer>comparingDouble(i -> -s[i]).thenComparingInt(i -> i))
                .mapToInt(Integer::intValue).toArray();
    }

    /** Quickselect over a range agrees with a full sort, ties to the lower index. */
    @Property(tries = 300)
    void topAgreesWithSorting(@ForAll @Size(min = 1, max = 300) float[] raw, @ForAll @IntRange(min = 0, max = 320) int k,
            @ForAll @IntRange(min = 0, max = 300) int a, @ForAll @IntRange(min = 0, max = 300) int b) {
        float[] s = coarse(raw);
        int from = Math.min(a, s.length), to = Math.max(from, Math.min(b, s.length));
        int[] expected = Arrays.stream(ranked(s, from, to)).limit(Math.max(0, k)).sorted().toArray();
        int[] out = new int[s.length + 3];
        int n = new PartialTopK(s.length).top(s, from, to, k, out, 3);
        assertArrayEquals(expected, Arrays.copyOfRange(out, 3, 3 + n));
    }

    /**
     * The sampled path (a threshold from every 16th score, one compaction pass) gives exactly the full
     * select's answer, on smooth scores where it is taken and on tied ones where it falls back.
     */
    @Property(tries = 200)
    void sampledPathAgreesWithSorting(@ForAll @IntRange(min = 64, max = 3000) int len, @ForAll @IntRange(min = 1,
            max = 750) int k, @ForAll long seed, @ForAll boolean tied, @ForAll boolean vector) {
        java.util.SplittableRandom r = new java.util.SplittableRandom(seed);
        float[] s = new float[len];
        for (int i = 0; i < len; i++) {
            double g = r.nextGaussian();
            s[i] = tied ? (float) Math.floor(g * 2) : (float) Math.exp(3 * g); // heavy-tailed, like shares
        }
        int kk = Math.min(k, len / 4);
        int[] expected = Arrays.stream(ranked(s, 0, len)).limit(kk).sorted().toArray();
        int[] out = new int[len];
        PartialTopK topK = new PartialTopK(len, 64, vector);
        int n = topK.top(s, 0, len, kk, out, 0);
        assertArrayEquals(expected, Arrays.copyOf(out, n));
    }

    @Example
    void sampledPathIsTakenOnSmoothScores() {
        java.util.SplittableRandom r = new java.util.SplittableRandom(7);
        float[] s = new float[1 << 16];
        for (int i = 0; i < s.length; i++) {
            s[i] = (float) r.nextDouble();
        }
        PartialTopK topK = new PartialTopK(s.length);
        int[] out = new int[s.length];
        int n = topK.top(s, 0, s.length, 6000, out, 0);
        assertEquals(6000, n);
        assertEquals(1, topK.sampledCalls());
        assertArrayEquals(Arrays.stream(ranked(s, 0, s.length)).limit(6000).sorted().toArray(), Arrays.copyOf(out, n));
    }

    /** The radix select's key order: infinities, signed zeros (equal as floats), subnormals, ties. */
    @Example
    void signedZerosInfinitiesAndSubnormalsRankAsFloatsDo() {
        float[] s = {0f, -0f, Float.NEGATIVE_INFINITY, Float.MIN_VALUE, -Float.MIN_VALUE, Float.POSITIVE_INFINITY, 0f, -1f,
            1f, -0f, Float.MAX_VALUE, -Float.MAX_VALUE, 1f};
        float[] equalZeros = s.clone(); // as floats compare: −0 == +0, so they tie (lower index first)
        for (int i = 0; i < s.length; i++) {
            equalZeros[i] += 0f;
        }
        for (int k = 0; k <= s.length; k++) {
            int[] expected = Arrays.stream(ranked(equalZeros, 0, s.length)).limit(k).sorted().toArray();
            int[] out = new int[s.length];
            int n = new PartialTopK(s.length).top(s, 0, s.length, k, out, 0);
            assertArrayEquals(expected, Arrays.copyOf(out, n), "k = " + k);
        }
    }

    @Example
    void nanRanksLowest() {
        float[] s = {Float.NaN, 1f, Float.NaN, -5f};
        int[] out = new int[4];
        assertEquals(2, new PartialTopK(4).top(s, 0, 4, 2, out, 0));
        assertArrayEquals(new int[] {1, 3}, Arrays.copyOf(out, 2));
        Layers.assertMessage(() -> new PartialTopK(2).kthLargest(s, 0, 4, 1), "k = 1", "capacity 2");
    }
}
