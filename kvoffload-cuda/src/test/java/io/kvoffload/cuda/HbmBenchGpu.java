package io.kvoffload.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/**
 * Runs {@link HbmBench} under Surefire. Not in the default suite (the name matches no include
 * pattern); gpu-test.sh names it. Tokens and layers come from -Dkvoffload.bench.tokens / .layers.
 */
class HbmBenchGpu {
    @Test
    void hbmBenchmark() {
        GpuTestSupport.requireGpu();
        int rc = HbmBench.run(Integer.getInteger("kvoffload.bench.tokens", 4096),
                Integer.getInteger("kvoffload.bench.layers", 32));
        assertEquals(0, rc, "HbmBench exit code (3: gathered H2D bandwidth below 80% of plain pinned cudaMemcpy)");
    }
}
