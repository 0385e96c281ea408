package io.kvoffload.internal.util;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.FloatRange;
import net.jqwik.api.constraints.IntRange;

class Int8RoundingProperties {
    /**
     * Rows long enough for the vector path (the tests run with jdk.incubator.vector, as the build runs
     * them) give the bytes, spread and largest magnitude of the definition, element by element: ties
     * (x.5 steps), negative zeros, values far outside ±127 steps and odd tails included, and only the
     * row's range of the output is written.
     */
    @Property(tries = 120)
    void roundingIsTheDefinitionElementByElement(@ForAll @IntRange(min = 0, max = 3000) int n,
            @ForAll @IntRange(min = 0, max = 9) int pad, @ForAll Int8Rounding.Mode mode,
            @ForAll @FloatRange(min = 0.01f, max = 1000f) float scale, @ForAll long seed) {
        java.util.SplittableRandom r = new java.util.SplittableRandom(seed);
        float[] v = new float[n + 2 * pad];
        for (int i = 0; i < v.length; i++) {
            v[i] = switch (r.nextInt(6)) {
                case 0 -> (r.nextInt(400) - 200) * 0.5f * scale;          // whole and half steps: ties
                case 1 -> -0f;
                case 2 -> (float) (r.nextGaussian() * 1e9);                 // far outside the clamp
                default -> (float) ((r.nextDouble() - 0.5) * 300 * scale);  // within and around ±127 steps
            };
        }
        byte[] out = new byte[v.length];
        java.util.Arrays.fill(out, (byte) 99);
        int spread = Int8Rounding.round(v, pad, n, scale, mode, out);

        byte[] expected = new byte[v.length];
        java.util.Arrays.fill(expected, (byte) 99);
        int lo = 127, hi = -127;
        float big = 0;
        for (int i = pad; i < pad + n; i++) {
            float x = v[i] / scale;
            double step = switch (mode) {
                case UP -> Math.ceil(x);
                case DOWN -> Math.floor(x);
                case NEAREST -> Math.rint(x);
            };
            expected[i] = (byte) Math.max(-127, Math.min(127, step));
            lo = Math.min(lo, expected[i]);
            hi = Math.max(hi, expected[i]);
            big = Math.max(big, Math.abs(v[i]));
        }
        assertArrayEquals(expected, out);
        assertEquals(Math.max(0, hi - lo), spread);
        assertEquals(big, Int8Rounding.absMax(v, pad, n));
    }
}
