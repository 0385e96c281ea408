package io.kvoffload.internal.kvswap;

import io.kvoffload.testing.Allocations;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.function.Executable;

/** Shared helpers of the KVSwap tests: random keys and adapters, message checks, allocation counting. */
final class KvSwapFixtures {
    private KvSwapFixtures() {}

    /** Gaussian floats. */
    static float[] gaussian(SplittableRandom rnd, int n) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = (float) rnd.nextGaussian();
        }
        return a;
    }

    /** A random (not orthogonal) projection: enough for properties of selection and storage. */
    static LowRankAdapter randomAdapter(SplittableRandom rnd, int kvHeads, int headDim, int rank) {
        return LowRankAdapter.of(kvHeads, headDim, rank, gaussian(rnd, kvHeads * headDim * rank));
    }

    /** A cache of {@code tokens} random keys. */
    static CompressedKCache randomCache(SplittableRandom rnd, LowRankAdapter a, int tokens) {
        CompressedKCache c = new CompressedKCache(a, io.kvoffload.DType.F32, tokens);
        c.append(gaussian(rnd, tokens * a.inputDim()), 0, tokens);
        return c;
    }

    /** Asserts {@code call} throws IllegalArgumentException whose message contains every fragment. */
    static void assertMessage(Executable call, String... fragments) {
        assertMessage(IllegalArgumentException.class, call, fragments);
    }

    static void assertMessage(Class<? extends Throwable> type, Executable call, String... fragments) {
        Throwable e = assertThrows(type, call);
        for (String f : fragments) {
            assertTrue(e.getMessage() != null && e.getMessage().contains(f),
                    "message '" + e.getMessage() + "' should contain '" + f + "'");
        }
    }

    /** Bytes {@code work} allocates on this thread (the least over 5 runs, see {@link Allocations#leastOverWindows}). */
    static long allocatedBy(Runnable work) {
        return Allocations.leastOverWindows(work, 5);
    }
}
