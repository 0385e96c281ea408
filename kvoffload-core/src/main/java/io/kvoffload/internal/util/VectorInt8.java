package io.kvoffload.internal.util;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link Int8Rounding} through the Vector API. The quotient {@code v / scale} is the scalar path's float;
 * it is rounded exactly (truncated toward zero, then moved a step where the mode says so; to nearest
 * by adding and taking away 1.5 × 2^23, which leaves an integer, ties to even, for every |x| < 2^22),
 * clamped to ±127 and narrowed: the same byte as {@code Math.ceil}, {@code floor} or {@code rint} of
 * that float. Loaded only where {@link Softmax#VECTORISED}.
 */
final class VectorInt8 {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    /** Bytes as many as {@link #S}'s floats. */
    private static final VectorSpecies<Byte> B = VectorSpecies.of(byte.class, VectorShape.forBitSize(S.length() * Byte.SIZE));
    private static final float ROUNDER = 0x1.8p23f;

    private VectorInt8() {}

    static float absMax(float[] v, int from, int n) {
        int lanes = S.length(), bound = S.loopBound(n);
        FloatVector big = FloatVector.zero(S);
        for (int b = 0; b < bound; b += lanes) {
            big = big.max(FloatVector.fromArray(S, v, from + b).abs());
        }
        return Int8Rounding.absMax(v, from + bound, n - bound, big.reduceLanes(VectorOperators.MAX));
    }

    /** The whole vectors of {@link Int8Rounding#round}; widens {@code range} (smallest, largest) and returns the elements done. */
    static int round(float[] v, int from, int n, float scale, Int8Rounding.Mode mode, byte[] out, int[] range) {
        int lanes = S.length(), bound = S.loopBound(n);
        FloatVector lo = FloatVector.broadcast(S, 127f), hi = FloatVector.broadcast(S, -127f);
        for (int b = 0; b < bound; b += lanes) {
            FloatVector x = FloatVector.fromArray(S, v, from + b).div(scale);
            FloatVector r;
            if (mode == Int8Rounding.Mode.NEAREST) {
                r = x.add(ROUNDER).sub(ROUNDER);
            } else {
                // Beyond ±2^22 a float is an integer already, and the clamp below takes it to ±127.
                FloatVector t = (FloatVector) x.convert(VectorOperators.F2I, 0).convert(VectorOperators.I2F, 0);
                VectorMask<Float> big = x.abs().compare(VectorOperators.GE, 0x1p22f);
                t = t.blend(x, big);
                r = mode == Int8Rounding.Mode.UP
                        ? t.add(1f, t.compare(VectorOperators.LT, x))
                        : t.sub(1f, t.compare(VectorOperators.GT, x));
            }
            r = r.max(-127f).min(127f);
            lo = lo.min(r);
            hi = hi.max(r);
            ((ByteVector) r.convertShape(VectorOperators.F2B, B, 0)).intoArray(out, from + b);
        }
        if (bound > 0) {
            range[0] = Math.min(range[0], (int) lo.reduceLanes(VectorOperators.MIN));
            range[1] = Math.max(range[1], (int) hi.reduceLanes(VectorOperators.MAX));
        }
        return bound;
    }
}
