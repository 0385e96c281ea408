package io.kvoffload.workload;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.Arrays;

/** The seed check every generated workload passes: the seed alone decides keys, values and queries. */
final class SeedDeterminism {
    private SeedDeterminism() {}

    /**
     * {@code seeded} and {@code sameSeed} (built alike) give equal keys (KV head 1, 64 tokens from
     * {@code keysFrom}), values (KV head 0, 64 tokens from {@code valuesFrom}) and query of step
     * {@code step} in {@code layer}; {@code otherSeed} gives other keys and another query.
     */
    static void assertSeedDecides(Workload seeded, Workload sameSeed, Workload otherSeed, int layer, int keysFrom,
            int valuesFrom, int step) {
        int n = 64 * seeded.shape().headDim();
        float[] a = new float[n], b = new float[n], c = new float[n];
        seeded.layer(layer).keys(1, keysFrom, 64, a, 0);
        sameSeed.layer(layer).keys(1, keysFrom, 64, b, 0);
        otherSeed.layer(layer).keys(1, keysFrom, 64, c, 0);
        assertArrayEquals(a, b);
        assertFalse(Arrays.equals(a, c));
        seeded.layer(layer).values(0, valuesFrom, 64, a, 0);
        sameSeed.layer(layer).values(0, valuesFrom, 64, b, 0);
        assertArrayEquals(a, b);
        assertArrayEquals(seeded.query(layer, step), sameSeed.query(layer, step));
        assertFalse(Arrays.equals(seeded.query(layer, step), otherSeed.query(layer, step)));
    }
}
