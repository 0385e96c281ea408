package io.kvoffload.internal.util;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/**
 * The vector path of {@link KeyBounds} writes the scalar path's floats: the same largest and smallest
 * elements (a zero's sign aside) and bit-identical sums, for head dims on and off the vector width,
 * runs of one key and more, ties, signed zeros and offsets off the vector boundaries. And both are
 * what the definition says, element by element.
 */
class KeyBoundsProperties {

    @Property(tries = 300)
    void vectorPathEqualsTheScalarPathAndTheDefinition(@ForAll @IntRange(min = 1, max = 140) int d,
            @ForAll @IntRange(min = 1, max = 20) int n, @ForAll long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        int at = r.nextInt(10), o = r.nextInt(10); // off the vector boundaries in the keys and the outputs
        float[] keys = new float[at + n * d];
        for (int i = 0; i < keys.length; i++) {
            int kind = r.nextInt(8);
            keys[i] = kind == 0 ? -0f : kind == 1 ? 0f : kind == 2 ? 1.5f : (float) (r.nextGaussian() * 3);
        }
        float[][] scalar = {new float[o + d], new float[o + d], new float[o + d]};
        float[][] vector = {new float[o + d], new float[o + d], new float[o + d]};
        KeyBounds.of(keys, at, d, n, scalar[0], scalar[1], scalar[2], o, false);
        if (Softmax.VECTORISED) { // the Vector API is in the test JVM's boot layer (pom's argLine)
            KeyBounds.of(keys, at, d, n, vector[0], vector[1], vector[2], o, true);
        } else {
            vector = scalar;
        }
        for (int j = 0; j < d; j++) {
            float hi = Float.NEGATIVE_INFINITY, lo = Float.POSITIVE_INFINITY, sum = 0;
            for (int t = 0; t < n; t++) {
                float v = keys[at + t * d + j];
                hi = Math.max(hi, v);
                lo = Math.min(lo, v);
                sum = t == 0 ? v : sum + v;
            }
            String where = "dimension " + j + " of " + d + ", " + n + " keys";
            assertEquals(hi == 0 ? 0f : hi, scalar[0][o + j] == 0 ? 0f : scalar[0][o + j], where);
            assertEquals(lo == 0 ? 0f : lo, scalar[1][o + j] == 0 ? 0f : scalar[1][o + j], where);
            assertEquals(Float.floatToIntBits(sum), Float.floatToIntBits(scalar[2][o + j]), where);
            assertEquals(scalar[0][o + j] == 0 ? 0f : scalar[0][o + j], vector[0][o + j] == 0 ? 0f : vector[0][o + j], where);
            assertEquals(scalar[1][o + j] == 0 ? 0f : scalar[1][o + j], vector[1][o + j] == 0 ? 0f : vector[1][o + j], where);
            assertEquals(Float.floatToIntBits(scalar[2][o + j]), Float.floatToIntBits(vector[2][o + j]), where);
        }
    }

    /**
     * {@link KeyBounds#ofParts} writes, for each part and for the whole run, the floats {@link KeyBounds#of}
     * writes for that run alone (a zero's sign aside; sums bit for bit), on either path.
     */
    @Property(tries = 300)
    void partsAndTheWholeRunAreEachTheRunAlone(@ForAll @IntRange(min = 1, max = 140) int d,
            @ForAll @IntRange(min = 1, max = 40) int n, @ForAll @IntRange(min = 1, max = 9) int part,
            @ForAll boolean vector, @ForAll long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        int at = r.nextInt(10), o = r.nextInt(10), wo = r.nextInt(10);
        float[] keys = new float[at + n * d];
        for (int i = 0; i < keys.length; i++) {
            int kind = r.nextInt(8);
            keys[i] = kind == 0 ? -0f : kind == 1 ? 0f : kind == 2 ? 1.5f : (float) (r.nextGaussian() * 3);
        }
        boolean v = vector && Softmax.VECTORISED;
        int parts = (n + part - 1) / part;
        float[] hi = new float[o + parts * d], lo = new float[o + parts * d], sum = new float[o + parts * d];
        float[] wHi = new float[wo + d], wLo = new float[wo + d], wSum = new float[wo + d];
        KeyBounds.ofParts(keys, at, d, n, part, hi, lo, sum, o, wHi, wLo, wSum, wo, v);
        float[][] alone = {new float[d], new float[d], new float[d]};
        for (int p = 0; p < parts; p++) {
            KeyBounds.of(keys, at + p * part * d, d, Math.min(part, n - p * part), alone[0], alone[1], alone[2], 0, v);
            assertSame(alone, 0, new float[][] {hi, lo, sum}, o + p * d, d, "part " + p + " of " + n + " keys, d " + d);
        }
        KeyBounds.of(keys, at, d, n, alone[0], alone[1], alone[2], 0, v);
        assertSame(alone, 0, new float[][] {wHi, wLo, wSum}, wo, d, "the run of " + n + " keys, d " + d);
    }

    private static void assertSame(float[][] want, int wo, float[][] got, int go, int d, String what) {
        for (int j = 0; j < d; j++) {
            String where = what + ", dimension " + j;
            for (int k = 0; k < 2; k++) {
                float a = want[k][wo + j], b = got[k][go + j];
                assertEquals(a == 0 ? 0f : a, b == 0 ? 0f : b, where);
            }
            assertEquals(Float.floatToIntBits(want[2][wo + j]), Float.floatToIntBits(got[2][go + j]), where);
        }
    }
}
