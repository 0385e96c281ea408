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
}
