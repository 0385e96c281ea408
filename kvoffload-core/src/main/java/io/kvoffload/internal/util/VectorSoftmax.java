package io.kvoffload.internal.util;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link Softmax#exponentiateRanking} through the Vector API, whose {@code EXP} the JIT compiles to a
 * vector math routine (0.7 ns an element against about 5 ns for {@code Math.exp} on this project's
 * machines). Loaded only when {@link Softmax} found {@code jdk.incubator.vector} in the boot layer, so
 * the library runs without it.
 */
final class VectorSoftmax {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    /** Vectors summed in float before the partial sum moves to the double total (bounds the rounding). */
    private static final int FLUSH = 64;

    private VectorSoftmax() {}

    static int lanes() {
        return S.length();
    }

    /** {@link Softmax#copyMax} through the Vector API. */
    static float copyMax(float[] src, int srcOff, float[] dst, int dstOff, int n, float max) {
        int lanes = S.length(), bound = S.loopBound(n);
        FloatVector top = FloatVector.broadcast(S, max);
        int i = 0;
        for (; i < bound; i += lanes) {
            FloatVector v = FloatVector.fromArray(S, src, srcOff + i);
            v.intoArray(dst, dstOff + i);
            top = top.max(v);
        }
        return Softmax.copyMaxScalar(src, srcOff + i, dst, dstOff + i, n - i, top.reduceLanes(VectorOperators.MAX));
    }

    /** {@link Softmax#exponentiateRanking}: {@code max} is the row's maximum. */
    static float exponentiate(float[] x, int off, int n, float max) {
        return exponentiate(x, off, x, off, n, max);
    }

    /** {@link Softmax#exponentiateRanking(float[], int, float[], int, int, float)}. */
    static float exponentiate(float[] src, int srcOff, float[] dst, int dstOff, int n, float max) {
        int lanes = S.length(), bound = S.loopBound(n);
        double total = 0;
        int i = 0;
        while (i < bound) {
            FloatVector sum = FloatVector.zero(S);
            int stop = Math.min(bound, i + FLUSH * lanes);
            for (; i < stop; i += lanes) {
                FloatVector e = FloatVector.fromArray(S, src, srcOff + i).sub(max).lanewise(VectorOperators.EXP);
                e.intoArray(dst, dstOff + i);
                sum = sum.add(e);
            }
            total += sum.reduceLanes(VectorOperators.ADD);
        }
        for (; i < n; i++) {
            float e = (float) Math.exp(src[srcOff + i] - max);
            dst[dstOff + i] = e;
            total += e;
        }
        return (float) (1.0 / total);
    }
}
