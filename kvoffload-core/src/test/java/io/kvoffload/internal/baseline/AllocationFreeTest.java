package io.kvoffload.internal.baseline;

import static io.kvoffload.testing.Allocations.allocated;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.foreign.Arena;
import org.junit.jupiter.api.Test;

/**
 * {@code select} allocates nothing once warmed up (the JMH {@code SelectorBench} with {@code -prof gc}
 * measures the same on compiled code).
 *
 * <p>The thread's allocation counter is read through a method handle: the tests are compiled into
 * the core module, which does not read {@code java.management}, and an exact {@code invokeExact}
 * returns the {@code long} without boxing it.
 */
class AllocationFreeTest {
    static int[] escape;



    @Test
    void selectDoesNotAllocate() {
        for (int i = 0; i < 1000; i++) { // links and compiles the counter read itself
            allocated();
        }
        long overhead = -allocated() + allocated(); // what one read around no work costs
        long control = allocated();
        escape = new int[1000];
        assertTrue(allocated() - control - overhead >= 4000, "the counter sees a 4 KB array");
        KvShape shape = new KvShape(1, 4, 2, 32, DType.BF16);
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(shape, 2000).seed(3).build());
        DenseLayerKv kv = DenseLayerKv.materialize(w.layer(0), false);
        float[][] queries = new float[4][];
        for (int i = 0; i < queries.length; i++) {
            queries[i] = w.query(0, i);
        }
        try (Arena arena = Arena.ofConfined()) {
            for (String name : Layers.NAMES) {
                BaselineSelector s = Layers.build(name, kv, 4, 5, arena);
                int[] out = new int[Math.max(400, s.maxSelected(400))];
                AbstractSelector between = s instanceof AbstractSelector a ? a : null; // the pipeline's call
                for (int i = 0; i < 200; i++) { // warm-up
                    s.select(queries[i % 4], i % 2 == 0 ? 400 : 37, out);
                    if (between != null) {
                        between.selectBetween(queries[i % 4], i % 2 == 0 ? 400 : 37, 4, 1990 - i % 3, out);
                    }
                }
                int[] sink = {0};
                // The least over 5 windows: a one-off JIT deoptimisation does not count, a per-call object would.
                long allocated = io.kvoffload.testing.Allocations.leastOverWindows(() -> {
                    for (int i = 0; i < 50; i++) {
                        sink[0] += s.select(queries[i % 4], i % 2 == 0 ? 400 : 37, out);
                        if (between != null) {
                            sink[0] += between.selectBetween(queries[i % 4], i % 2 == 0 ? 400 : 37, 4, 1990 - i % 3, out);
                        }
                    }
                }, 5);
                assertEquals(0, allocated, name + " allocated " + allocated + " bytes in 50 selects and selectBetweens (" + sink[0]
                        + " tokens)");
            }
        }
    }
}
