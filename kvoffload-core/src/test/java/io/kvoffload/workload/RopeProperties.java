package io.kvoffload.workload;

import static org.junit.jupiter.api.Assertions.assertEquals;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;

/** RoPE's defining property: a rotated query-key dot product depends only on the position difference. */
class RopeProperties {

    @Property(tries = 200)
    void dotProductDependsOnlyOnThePositionDifference(@ForAll @IntRange(min = 0, max = 3) int dimIndex,
            @ForAll @LongRange(min = 0, max = 1_000_000) long m, @ForAll @LongRange(min = 0, max = 1_000_000) long n,
            @ForAll @LongRange(min = 0, max = 1_000_000) long shift, @ForAll long seed) {
        int d = new int[] {64, 80, 96, 128}[dimIndex];
        Rope rope = new Rope(d, 500_000);
        float[] q = new float[d], k = new float[d];
        long qs = Hashing.key(seed, 1), ks = Hashing.key(seed, 2);
        for (int c = 0; c < d; c++) {
            q[c] = Hashing.component(qs, c);
            k[c] = Hashing.component(ks, c);
        }
        double a = dot(rotated(rope, q, m), rotated(rope, k, n));
        double b = dot(rotated(rope, q, m + shift), rotated(rope, k, n + shift));
        assertEquals(a, b, 1e-3 * d, "q at " + m + ", k at " + n + ", both shifted by " + shift);
    }

    @Property(tries = 100)
    void rotationKeepsEveryPairsNorm(@ForAll @LongRange(min = 0, max = 10_000_000) long position, @ForAll long seed) {
        Rope rope = new Rope(128, 500_000);
        float[] v = new float[128];
        for (int c = 0; c < 128; c++) {
            v[c] = Hashing.component(Hashing.key(seed, 3), c);
        }
        float[] r = rotated(rope, v, position);
        for (int p = 0; p < 64; p++) {
            double before = Math.hypot(v[p], v[p + 64]);
            double after = Math.hypot(r[p], r[p + 64]);
            assertEquals(before, after, 1e-4 * Math.max(1, before));
        }
    }

    private static float[] rotated(Rope rope, float[] v, long position) {
        float[] out = new float[v.length];
        rope.rotate(v, 0, position, out, 0);
        return out;
    }

    private static double dot(float[] a, float[] b) {
        double s = 0;
        for (int i = 0; i < a.length; i++) {
            s += (double) a[i] * b[i];
        }
        return s;
    }
}
