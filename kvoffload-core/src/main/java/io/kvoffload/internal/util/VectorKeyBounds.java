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

    /**
     * {@link KeyBounds#ofParts}. The whole run's vectors start from the identities of their operations
     * (−∞, +∞ and −0, which adds nothing to any float, a negative zero included), not from {@code null}:
     * a vector that may be null is boxed on the heap.
     */
    static void ofParts(float[] keys, int at, int d, int n, int part, float[] hi, float[] lo, float[] sum, int o,
            float[] wHi, float[] wLo, float[] wSum, int wo) {
        int lanes = S.length(), bound = S.loopBound(d);
        for (int j = 0; j < bound; j += lanes) {
            FloatVector wh = FloatVector.broadcast(S, Float.NEGATIVE_INFINITY);
            FloatVector wl = FloatVector.broadcast(S, Float.POSITIVE_INFINITY);
            FloatVector ws = FloatVector.broadcast(S, -0f);
            for (int p = 0, t = 0; t < n; p++, t += part) {
                int a = at + t * d + j;
                FloatVector h = FloatVector.fromArray(S, keys, a), l = h, s = h;
                ws = ws.add(h);
                for (int u = t + 1, end = Math.min(n, t + part); u < end; u++) {
                    a += d;
                    FloatVector v = FloatVector.fromArray(S, keys, a);
                    h = h.blend(v, h.compare(VectorOperators.LT, v));
                    l = l.blend(v, l.compare(VectorOperators.GT, v));
                    s = s.add(v);
                    ws = ws.add(v);
                }
                h.intoArray(hi, o + p * d + j);
                l.intoArray(lo, o + p * d + j);
                s.intoArray(sum, o + p * d + j);
                wh = wh.blend(h, wh.compare(VectorOperators.LT, h));
                wl = wl.blend(l, wl.compare(VectorOperators.GT, l));
            }
            wh.intoArray(wHi, wo + j);
            wl.intoArray(wLo, wo + j);
            ws.intoArray(wSum, wo + j);
        }
        if (bound < d) {
            KeyBounds.scalarParts(keys, at, d, n, part, hi, lo, sum, o, wHi, wLo, wSum, wo, bound);
        }
    }
}
