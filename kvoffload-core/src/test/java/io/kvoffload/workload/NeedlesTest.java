package io.kvoffload.workload;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.testing.ReferenceSoftmax;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** {@link Needles}: where they go, what the query sees, and the arguments it refuses. */
class NeedlesTest {
    static final KvShape SHAPE = new KvShape(1, 8, 2, 32, DType.F32);

    @Test
    void theNeedleDrawsItsShareOfTheLookingHeadAndTheOthersLookElsewhere() {
        int tokens = 4096;
        float scale = 1.5f;
        Needles n = Needles.draw(SHAPE, tokens, 100, 3000, 0.5, scale, false, false, 11);
        Random rnd = new Random(3);
        float[][] keys = new float[2][tokens * 32];
        for (float[] k : keys) {
            for (int i = 0; i < k.length; i++) {
                k[i] = (float) rnd.nextGaussian() * scale;
            }
        }
        n.plantHeadMajor(keys);
        float[] q = n.query();
        for (int h = 0; h < 2; h++) {
            int p = n.position(h);
            assertTrue(p >= 100 && p < 3000, "position " + p);
            double looker = weight(keys[h], q, h * 4, p, tokens);
            assertTrue(looker > 0.3 && looker < 0.7, "the looking head gives its needle about half: " + looker);
            double other = weight(keys[h], q, h * 4 + 1, p, tokens);
            assertTrue(other < 0.01, "a head that looks elsewhere gives it what any token gets: " + other);
        }
        assertNotEquals(n.position(0), n.position(1), "each KV head its own needle (seed 11)");
        assertEquals(Math.log(tokens - 1.0) + 0.5, Needles.margin(tokens, 0.5), 1e-9);
    }

    @Test
    void bothLayoutsPlantTheSameKeysAndOneTokenServesEveryHead() {
        int tokens = 512, d = 32;
        Needles n = Needles.draw(SHAPE, tokens, 10, 400, 0.1, 1f, true, true, 5);
        assertEquals(n.position(0), n.position(1));
        float[][] headMajor = new float[2][tokens * d];
        float[] tokenMajor = new float[tokens * 2 * d];
        n.plantHeadMajor(headMajor);
        n.plantTokenMajor(tokenMajor);
        for (int h = 0; h < 2; h++) {
            for (int t = 0; t < tokens; t++) {
                float[] a = java.util.Arrays.copyOfRange(headMajor[h], t * d, t * d + d);
                float[] b = java.util.Arrays.copyOfRange(tokenMajor, (t * 2 + h) * d, (t * 2 + h) * d + d);
                assertArrayEquals(a, b, "token " + t + ", head " + h);
            }
        }
        float[] q = n.query();
        for (int g = 1; g < 4; g++) { // every query head of a KV head looks along the same direction
            assertArrayEquals(java.util.Arrays.copyOfRange(q, 0, d), java.util.Arrays.copyOfRange(q, g * d, g * d + d));
        }
    }

    @Test
    void badArgumentsAreNamed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Needles.draw(SHAPE, 100, 50, 50, 0.5, 1f, false, false, 1));
        assertTrue(e.getMessage().contains("[50, 50)"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Needles.draw(SHAPE, 100, 0, 90, 1.0, 1f, false, false, 1));
        assertTrue(e.getMessage().contains("share = 1.0"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Needles.draw(SHAPE, 100, 0, 90, 0.5, 0f, false, false, 1));
        assertTrue(e.getMessage().contains("keyScale = 0.0"), e.getMessage());
        Needles n = Needles.draw(SHAPE, 100, 0, 90, 0.5, 1f, false, false, 1);
        e = assertThrows(IllegalArgumentException.class, () -> n.plantHeadMajor(new float[1][3200]));
        assertTrue(e.getMessage().contains("keys.length"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> n.plantTokenMajor(new float[64]));
        assertTrue(e.getMessage().contains("keys"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> n.position(2));
        assertTrue(e.getMessage().contains("kvHead"), e.getMessage());
    }

    /** Query head {@code q}'s softmax weight on {@code token} over one KV head's keys. */
    private static double weight(float[] keys, float[] query, int q, int token, int tokens) {
        int d = 32;
        double[] logits = new double[tokens];
        for (int t = 0; t < tokens; t++) {
            for (int j = 0; j < d; j++) {
                logits[t] += (double) query[q * d + j] * keys[t * d + j];
            }
            logits[t] /= Math.sqrt(d);
        }
        return ReferenceSoftmax.inPlace(logits)[token];
    }
}
