package io.kvoffload.internal.util;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.FloatRange;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import java.util.List;

class SoftmaxProperties {
    /** The normalised row is a distribution, and only the given range is touched. */
    @Property(tries = 200)
    void exponentiateNormalisesOnlyItsRange(@ForAll @Size(min = 1, max = 64) List<@FloatRange(min = -80, max = 80) Float> values,
            @ForAll @IntRange(min = 0, max = 3) int pad) {
        float[] x = new float[values.size() + 2 * pad];
        java.util.Arrays.fill(x, 7f);
        for (int i = 0; i < values.size(); i++) {
            x[pad + i] = values.get(i);
        }
        float norm = Softmax.exponentiate(x, pad, values.size());
        double sum = 0;
        for (int i = 0; i < values.size(); i++) {
            float p = x[pad + i] * norm;
            assertTrue(p >= 0 && p <= 1.0001f, "p = " + p);
            sum += p;
        }
        assertEquals(1.0, sum, 1e-4);
        for (int i = 0; i < pad; i++) {
            assertEquals(7f, x[i]);
            assertEquals(7f, x[x.length - 1 - i]);
        }
    }

    /**
     * A group's logits over many keys (a vector of tokens at a time where the tests run with
     * jdk.incubator.vector, as the build runs them) are bit for bit those of each key alone (always
     * element by element), for every group size's mix of four-head, pair and single-head sums, odd head
     * dimensions, and a range of the output rows only.
     */
    @Property(tries = 150)
    void groupLogitsAreTheSameFloatsForEveryKeyAlone(@ForAll @IntRange(min = 1, max = 9) int heads,
            @ForAll @IntRange(min = 1, max = 70) int d, @ForAll @IntRange(min = 0, max = 90) int count,
            @ForAll @IntRange(min = 0, max = 5) int pad, @ForAll long seed) {
        java.util.SplittableRandom r = new java.util.SplittableRandom(seed);
        float[] q = new float[(heads + 1) * d];
        float[] k = new float[(count + 1) * d + pad];
        for (int i = 0; i < q.length; i++) {
            q[i] = (float) r.nextGaussian();
        }
        for (int i = 0; i < k.length; i++) {
            k[i] = (float) (r.nextGaussian() * 4);
        }
        float scale = (float) (1 / Math.sqrt(d));
        float[][] all = new float[heads][count + 2 * pad];
        float[][] alone = new float[heads][count + 2 * pad];
        for (float[] row : all) {
            java.util.Arrays.fill(row, 7f);
        }
        for (float[] row : alone) {
            java.util.Arrays.fill(row, 7f);
        }
        Softmax.logits(q, d, heads, d, k, pad, count, scale, all, pad);
        for (int t = 0; t < count; t++) {
            Softmax.logits(q, d, heads, d, k, pad + t * d, 1, scale, alone, pad + t);
        }
        for (int g = 0; g < heads; g++) {
            assertArrayEquals(alone[g], all[g], "head " + g);
            for (int t = 0; t < count; t++) {
                float expected = scale * Softmax.dot(q, d + g * d, k, pad + t * d, d);
                assertEquals(expected, all[g][pad + t], 1e-4f * Math.max(1f, Math.abs(expected)), "head " + g + ", token " + t);
            }
            for (int i = 0; i < pad; i++) {
                assertEquals(7f, all[g][i]);
                assertEquals(7f, all[g][pad + count + i]);
            }
        }
    }

    /**
     * The ranking exponentials (vectorised when the tests run with jdk.incubator.vector, as the build
     * runs them) agree with the scalar ones element by element and in their normaliser, and touch only
     * their range; rows long enough for the vector path and odd tails included.
     */
    @Property(tries = 200)
    void rankingExponentialsMatchTheScalarOnes(@ForAll @IntRange(min = 1, max = 3000) int n,
            @ForAll @IntRange(min = 0, max = 17) int pad, @ForAll @FloatRange(min = 0.1f, max = 60) float spread,
            @ForAll long seed) {
        java.util.SplittableRandom r = new java.util.SplittableRandom(seed);
        float[] x = new float[n + 2 * pad];
        java.util.Arrays.fill(x, 7f);
        for (int i = 0; i < n; i++) {
            x[pad + i] = (float) ((r.nextDouble() - 0.5) * spread);
        }
        float[] y = x.clone();
        float scalar = Softmax.exponentiate(x, pad, n);
        // The vector path itself, whatever the row length (exponentiateRanking takes it from VECTOR_MIN on).
        float ranking = Softmax.VECTORISED ? VectorSoftmax.exponentiate(y, pad, n, maxOf(y, pad, n))
                : Softmax.exponentiateRanking(y, pad, n, maxOf(y, pad, n));
        assertEquals(scalar, ranking, 1e-5 * scalar);
        for (int i = 0; i < x.length; i++) {
            assertEquals(x[i], y[i], 1e-6f * Math.max(1f, Math.abs(x[i])), "element " + i);
        }
    }

    /**
     * Exponentiating from one array into another gives, bit for bit, what exponentiating in place does,
     * leaves the source as it was and writes only the destination's range.
     */
    @Property(tries = 200)
    void rankingExponentialsIntoAnotherArrayEqualThoseInPlace(@ForAll @IntRange(min = 1, max = 3000) int n,
            @ForAll @IntRange(min = 0, max = 17) int srcPad, @ForAll @IntRange(min = 0, max = 17) int dstPad,
            @ForAll long seed) {
        java.util.SplittableRandom r = new java.util.SplittableRandom(seed);
        float[] src = new float[n + srcPad];
        for (int i = 0; i < n; i++) {
            src[srcPad + i] = (float) (r.nextGaussian() * 20);
        }
        float max = maxOf(src, srcPad, n);
        float[] before = src.clone(), inPlace = src.clone(), dst = new float[n + 2 * dstPad];
        java.util.Arrays.fill(dst, 7f);
        float norm = Softmax.exponentiateRanking(inPlace, srcPad, n, max);
        float into = Softmax.exponentiateRanking(src, srcPad, dst, dstPad, n, max);
        assertEquals(Float.floatToRawIntBits(norm), Float.floatToRawIntBits(into));
        assertArrayEquals(before, src, "the source is left as it was");
        for (int i = 0; i < n; i++) {
            assertEquals(Float.floatToRawIntBits(inPlace[srcPad + i]), Float.floatToRawIntBits(dst[dstPad + i]), "element " + i);
        }
        for (int i = 0; i < dstPad; i++) {
            assertEquals(7f, dst[i]);
            assertEquals(7f, dst[dst.length - 1 - i]);
        }
    }

    /**
     * A row written in chunks through {@link Softmax#copyMax} is copied exactly and yields its maximum (NaN
     * wins, as with {@link Math#max}): the same bits the exponentials would find themselves, on the vector
     * path and the scalar one, so exponentiating with it gives their result.
     */
    @Property(tries = 200)
    void copyMaxGivesTheRowsMaximumForItsExponentials(@ForAll @IntRange(min = 1, max = 5000) int n,
            @ForAll @IntRange(min = 1, max = 5000) int chunk, @ForAll @IntRange(min = 0, max = 9) int pad,
            @ForAll boolean nan, @ForAll long seed) {
        java.util.SplittableRandom r = new java.util.SplittableRandom(seed);
        float[] src = new float[n];
        for (int i = 0; i < n; i++) {
            src[i] = r.nextInt(20) == 0 ? Float.NEGATIVE_INFINITY : (float) (r.nextGaussian() * 20);
        }
        if (nan) {
            src[r.nextInt(n)] = Float.NaN;
        }
        float[] dst = new float[n + 2 * pad];
        java.util.Arrays.fill(dst, 7f);
        float[] vectorDst = dst.clone();
        float max = Float.NEGATIVE_INFINITY, vectorMax = max, expected = max;
        for (int from = 0; from < n; from += chunk) {
            int len = Math.min(chunk, n - from);
            max = Softmax.copyMax(src, from, dst, pad + from, len, max, n);
            // The vector path itself, whatever the chunk (Softmax takes it from VECTOR_MIN elements on).
            vectorMax = Softmax.VECTORISED ? VectorSoftmax.copyMax(src, from, vectorDst, pad + from, len, vectorMax)
                    : Softmax.copyMax(src, from, vectorDst, pad + from, len, vectorMax, n);
        }
        for (float v : src) {
            expected = Math.max(expected, v);
        }
        assertEquals(expected, max);
        assertEquals(expected, vectorMax);
        for (int i = 0; i < dst.length; i++) {
            float want = i < pad || i >= pad + n ? 7f : src[i - pad];
            assertEquals(Float.floatToRawIntBits(want), Float.floatToRawIntBits(dst[i]), "element " + i);
            assertEquals(Float.floatToRawIntBits(want), Float.floatToRawIntBits(vectorDst[i]), "element " + i);
        }
        if (nan) {
            return; // a NaN row's exponentials are NaN either way; callers never rank one
        }
        assertEquals(Float.floatToRawIntBits(maxOf(dst, pad, n)), Float.floatToRawIntBits(max)); // −0 and +0 apart
        float[] given = dst.clone();
        float norm = Softmax.exponentiate(dst, pad, n), givenNorm = Softmax.exponentiateRanking(given, pad, n, max);
        if (expected == Float.NEGATIVE_INFINITY) {
            // A row of only -inf (likely for short rows: one element in 20 is): NaN either way, as documented.
            assertTrue(Float.isNaN(norm) && Float.isNaN(givenNorm), norm + " " + givenNorm);
            return;
        }
        // The exponentials given copyMax's maximum equal those that find it themselves, up to the ranking
        // path's last bits (the vector EXP against Math.exp, and its order of summation).
        assertEquals(norm, givenNorm, 1e-6f * Math.abs(norm));
        for (int i = 0; i < dst.length; i++) {
            assertEquals(dst[i], given[i], 1e-6f * Math.max(Float.MIN_NORMAL, Math.abs(dst[i])), "element " + i);
        }
    }

    /**
     * A row of only -inf (a head every token is masked from) gives a NaN normaliser, as documented, on the
     * scalar path and the vector one, with its maximum found or given: callers skip such a row.
     */
    @org.junit.jupiter.api.Test
    void aRowOfOnlyMinusInfinityGivesNaN() {
        for (int n : new int[] {1, 3, Softmax.VECTOR_MIN + 3}) {
            float[] row = new float[n];
            java.util.Arrays.fill(row, Float.NEGATIVE_INFINITY);
            float[] copy = new float[n];
            float max = Softmax.copyMax(row, 0, copy, 0, n, Float.NEGATIVE_INFINITY, n);
            assertEquals(Float.NEGATIVE_INFINITY, max, "n = " + n);
            assertTrue(Float.isNaN(Softmax.exponentiate(row.clone(), 0, n)), "n = " + n);
            assertTrue(Float.isNaN(Softmax.exponentiateRanking(copy, 0, n, max)), "n = " + n);
        }
    }

    /** A long row goes through the vector path (when present) and still matches the scalar exponentials. */
    @org.junit.jupiter.api.Test
    void longRowsUseTheVectorPath() {
        int n = Softmax.VECTOR_MIN + 5;
        float[] x = new float[n];
        java.util.SplittableRandom r = new java.util.SplittableRandom(3);
        for (int i = 0; i < n; i++) {
            x[i] = (float) (r.nextDouble() * 40 - 30);
        }
        float[] y = x.clone();
        float scalar = Softmax.exponentiate(x, 0, n);
        float ranking = Softmax.exponentiateRanking(y, 0, n, maxOf(y, 0, n));
        assertEquals(scalar, ranking, 1e-5 * scalar);
        for (int i = 0; i < n; i++) {
            assertEquals(x[i], y[i], 1e-6f * Math.max(1f, Math.abs(x[i])), "element " + i);
        }
    }

    @org.junit.jupiter.api.Test
    void theBuildTestsTheVectorPath() {
        // The surefire argLine adds jdk.incubator.vector: on x86-64 with AVX2 the vector path must be on,
        // or the property above would test the scalar path twice.
        org.junit.jupiter.api.Assumptions.assumeTrue(System.getProperty("os.arch").equals("amd64"), "x86-64 only");
        assertTrue(ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent(), "tests run with jdk.incubator.vector");
        assertEquals(VectorSoftmax.lanes() >= 8, Softmax.VECTORISED);
    }

    /** The four-way dot product agrees with a plain double-precision sum. */
    @Property(tries = 200)
    void dotMatchesPlainSum(@ForAll @Size(min = 0, max = 40) List<@FloatRange(min = -4, max = 4) Float> a) {
        float[] x = new float[a.size()];
        float[] y = new float[a.size()];
        double expected = 0;
        for (int i = 0; i < x.length; i++) {
            x[i] = a.get(i);
            y[i] = a.get(a.size() - 1 - i);
            expected += (double) x[i] * y[i];
        }
        assertEquals(expected, Softmax.dot(x, 0, y, 0, x.length), 1e-3);
    }

    /** The row's maximum the way {@link Softmax#exponentiate} finds it ({@link Math#max}: NaN wins). */
    private static float maxOf(float[] x, int off, int n) {
        float max = Float.NEGATIVE_INFINITY;
        for (int i = off; i < off + n; i++) {
            max = Math.max(max, x[i]);
        }
        return max;
    }
}
