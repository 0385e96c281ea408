package io.kvoffload.internal.util;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link KeyBounds#of} through the Vector API: a vector of dimensions at a time, its running largest,
 * smallest and summed elements in registers over the run's keys. The bounds are taken by compare and
 * blend, not {@code max}/{@code min}, whose NaN and signed-zero rules cost several instructions a lane
 * on AVX2 (the keys are finite). Loaded only where {@link Softmax#VECTORISED}.
 */
final class VectorKeyBounds {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;

    private VectorKeyBounds() {}

    static void of(float[] keys, int at, int d, int n, float[] hi, float[] lo, float[] sum, int o) {
        int lanes = S.length(), bound = S.loopBound(d);
        for (int j = 0; j < bound; j += lanes) {
            FloatVector h = FloatVector.fromArray(S, keys, at + j), l = h, s = h;
            for (int t = 1, a = at + d + j; t < n; t++, a += d) {
                FloatVector v = FloatVector.fromArray(S, keys, a);
                h = h.blend(v, h.compare(VectorOperators.LT, v));
                l = l.blend(v, l.compare(VectorOperators.GT, v));
                s = s.add(v);
            }
            h.intoArray(hi, o + j);
            l.intoArray(lo, o + j);
            s.intoArray(sum, o + j);
        }
        if (bound < d) {
            KeyBounds.scalar(keys, at, d, n, hi, lo, sum, o, bound);
        }
    }
}
