package io.kvoffload.internal.util;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link Softmax#logits} through the Vector API, a vector of tokens at a time: the tile's keys are
 * transposed dimension-major, and each lane then adds its own token's products in exactly the order,
 * and with the same separate multiply and add, as {@link Softmax#logits}' scalar loops (four heads with
 * one sum each, a pair with even and odd dimensions apart, a last head with {@link Softmax#dot}'s four
 * sums). So every logit is the same float either way, and the exact reference, which a selection of
 * every token must reproduce bit for bit, does not depend on whether the Vector API is there. Loaded only
 * where {@link Softmax#VECTORISED}.
 */
final class VectorLogits {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;

    private VectorLogits() {}

    /**
     * {@link Softmax#logits} for the first tokens of {@code count} that fill whole vectors; returns how
     * many it did (the caller does the rest element by element).
     */
    static int logits(float[] q, int q0, int heads, int d, float[] k, int base, int count, float scale, float[][] out,
            int outFrom) {
        int lanes = S.length(), bound = S.loopBound(count);
        if (bound == 0) {
            return 0;
        }
        float[] tile = new float[d * lanes]; // element (i, lane) at [i × lanes + lane]
        for (int t0 = 0; t0 < bound; t0 += lanes) {
            for (int l = 0; l < lanes; l++) {
                for (int i = 0, src = base + (t0 + l) * d; i < d; i++) {
                    tile[i * lanes + l] = k[src + i];
                }
            }
            int g = 0, at = outFrom + t0;
            for (; g + 3 < heads; g += 4) {
                four(q, q0 + g * d, d, tile, scale, out[g], out[g + 1], out[g + 2], out[g + 3], at);
            }
            for (; g + 1 < heads; g += 2) {
                pair(q, q0 + g * d, d, tile, scale, out[g], out[g + 1], at);
            }
            if (g < heads) {
                one(q, q0 + g * d, d, tile, scale, out[g], at);
            }
        }
        return bound;
    }

    /** {@link Softmax#logits4}' sums: one per head, dimension after dimension. */
    private static void four(float[] q, int a0, int d, float[] tile, float scale, float[] o0, float[] o1, float[] o2,
            float[] o3, int at) {
        int lanes = S.length(), a1 = a0 + d, a2 = a1 + d, a3 = a2 + d;
        FloatVector s0 = FloatVector.zero(S), s1 = s0, s2 = s0, s3 = s0;
        for (int i = 0; i < d; i++) {
            FloatVector kv = FloatVector.fromArray(S, tile, i * lanes);
            s0 = s0.add(kv.mul(q[a0 + i]));
            s1 = s1.add(kv.mul(q[a1 + i]));
            s2 = s2.add(kv.mul(q[a2 + i]));
            s3 = s3.add(kv.mul(q[a3 + i]));
        }
        s0.mul(scale).intoArray(o0, at);
        s1.mul(scale).intoArray(o1, at);
        s2.mul(scale).intoArray(o2, at);
        s3.mul(scale).intoArray(o3, at);
    }

    /** Two heads: even and odd dimensions in sums of their own, then added. */
    private static void pair(float[] q, int a0, int d, float[] tile, float scale, float[] o0, float[] o1, int at) {
        int lanes = S.length(), a1 = a0 + d;
        FloatVector s0 = FloatVector.zero(S), s1 = s0, s2 = s0, s3 = s0;
        int i = 0;
        for (; i + 1 < d; i += 2) {
            FloatVector k0 = FloatVector.fromArray(S, tile, i * lanes), k1 = FloatVector.fromArray(S, tile, (i + 1) * lanes);
            s0 = s0.add(k0.mul(q[a0 + i]));
            s1 = s1.add(k0.mul(q[a1 + i]));
            s2 = s2.add(k1.mul(q[a0 + i + 1]));
            s3 = s3.add(k1.mul(q[a1 + i + 1]));
        }
        for (; i < d; i++) {
            FloatVector kv = FloatVector.fromArray(S, tile, i * lanes);
            s0 = s0.add(kv.mul(q[a0 + i]));
            s1 = s1.add(kv.mul(q[a1 + i]));
        }
        s0.add(s2).mul(scale).intoArray(o0, at);
        s1.add(s3).mul(scale).intoArray(o1, at);
    }

    /** One head: {@link Softmax#dot}'s four sums. */
    private static void one(float[] q, int a, int d, float[] tile, float scale, float[] o, int at) {
        int lanes = S.length();
        FloatVector s0 = FloatVector.zero(S), s1 = s0, s2 = s0, s3 = s0;
        int i = 0;
        for (; i + 3 < d; i += 4) {
            s0 = s0.add(FloatVector.fromArray(S, tile, i * lanes).mul(q[a + i]));
            s1 = s1.add(FloatVector.fromArray(S, tile, (i + 1) * lanes).mul(q[a + i + 1]));
            s2 = s2.add(FloatVector.fromArray(S, tile, (i + 2) * lanes).mul(q[a + i + 2]));
            s3 = s3.add(FloatVector.fromArray(S, tile, (i + 3) * lanes).mul(q[a + i + 3]));
        }
        for (; i < d; i++) {
            s0 = s0.add(FloatVector.fromArray(S, tile, i * lanes).mul(q[a + i]));
        }
        s0.add(s1).add(s2.add(s3)).mul(scale).intoArray(o, at);
    }
}
