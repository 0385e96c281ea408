package io.kvoffload.testing;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * The current thread's allocated bytes, for allocation-free tests. Read through a method handle: the
 * core module does not read {@code java.management}, and {@code invokeExact} returns the {@code long}
 * without boxing it.
 */
public final class Allocations {
    private static final MethodHandle ALLOCATED;
    private static final Object BEAN;

    static {
        try {
            Class<?> factory = Class.forName("java.lang.management.ManagementFactory");
            BEAN = factory.getMethod("getThreadMXBean").invoke(null);
            Class<?> bean = Class.forName("com.sun.management.ThreadMXBean");
            ALLOCATED = MethodHandles.publicLookup()
                    .findVirtual(bean, "getCurrentThreadAllocatedBytes", MethodType.methodType(long.class))
                    .asType(MethodType.methodType(long.class, Object.class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private Allocations() {}

    public static long allocated() {
        try {
            return (long) ALLOCATED.invokeExact(BEAN);
        } catch (Throwable e) {
            throw new IllegalStateException(e);
        }
    }

    /** What one pair of reads around no work costs, after warming the read itself up. */
    public static long overhead() {
        for (int i = 0; i < 1000; i++) {
            allocated();
        }
        return -allocated() + allocated();
    }

    /**
     * The least that {@code work} allocated on this thread over {@code windows} runs, less the
     * counter's own cost. A JIT recompilation can rematerialise a few eliminated objects once; code
     * that allocates per call shows it in every window, so the least is what the code itself costs.
     */
    public static long leastOverWindows(Runnable work, int windows) {
        long overhead = overhead();
        long least = Long.MAX_VALUE;
        for (int w = 0; w < windows; w++) {
            long before = allocated();
            work.run();
            least = Math.min(least, Math.max(0, allocated() - before - overhead));
        }
        return least;
    }
}
