package io.kvoffload.internal.kvswap;

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

    private static final Object THREADS;
    private static final java.lang.reflect.Method ALLOCATED;

    static {
        try {
            THREADS = Class.forName("java.lang.management.ManagementFactory").getMethod("getThreadMXBean").invoke(null);
            ALLOCATED = Class.forName("com.sun.management.ThreadMXBean").getMethod("getCurrentThreadAllocatedBytes");
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * Bytes the current thread allocated so far, through com.sun.management.ThreadMXBean. Reached
     * reflectively: the tests compile inside the core module, which does not read java.management,
     * but they run on the class path, where it is visible.
     */
    static long allocatedBytes() {
        try {
            return (Long) ALLOCATED.invoke(THREADS);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("no per-thread allocation counter on this JVM", e);
        }
    }

    /** Bytes {@code work} allocates on this thread, less what reading the counter itself costs. */
    static long allocatedBy(Runnable work) {
        long overhead = Long.MAX_VALUE;
        for (int i = 0; i < 3; i++) { // the counter boxes its result: measure that and take it off
            long a = allocatedBytes();
            long b = allocatedBytes();
            overhead = Math.min(overhead, b - a);
        }
        long before = allocatedBytes();
        work.run();
        return Math.max(0, allocatedBytes() - before - overhead);
    }
}
