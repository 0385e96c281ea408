package io.kvoffload.internal.sequence;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A stored layer's keys read head by head over the same range of tokens come from one read of the
 * SSDs: the last range read is kept for the other heads (an index summarises a layer that way), and
 * every head's keys are the stored ones.
 */
class SequenceLayerKvTest {
    static final KvShape SHAPE = new KvShape(1, 8, 4, 32, DType.BF16);
    static final int TOKENS = 6000;

    @TempDir
    Path dir;

    @Test
    void theHeadsOfOneRangeShareOneRead() {
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(11).build());
        try (KvEngine e = KvEngine.open(TestEngines.config(TestEngines.deviceDirs(dir, 2), "portable").build())) {
            TestEngines.store(e, "s", w, TOKENS, (s, l) -> { });
            try (KvSequence s = e.openSequence("s"); SequenceLayerKv kv = new SequenceLayerKv(s, 0, TOKENS)) {
                int d = SHAPE.headDim();
                float[] got = new float[1024 * d];
                float[] want = new float[1024 * d];
                long before = e.stats().totalBytesRead();
                kv.keys(0, 1000, 1024, got, 0);
                long first = e.stats().totalBytesRead() - before;
                assertTrue(first > 0, "the first range is read from the SSDs");
                for (int h = 0; h < SHAPE.kvHeads(); h++) {
                    for (int[] range : new int[][] {{1000, 1024}, {2024, 1024}, {1500, 7}}) {
                        long at = e.stats().totalBytesRead();
                        kv.keys(h, range[0], range[1], got, 0);
                        assertEquals(at, e.stats().totalBytesRead(), "head " + h + ", tokens " + range[0] + "+" + range[1]
                                + " come from the range already read");
                        w.layer(0).keys(h, range[0], range[1], want, 0);
                        assertArrayEquals(bf16(want, range[1] * d), java.util.Arrays.copyOf(got, range[1] * d),
                                "head " + h + ", tokens " + range[0] + "+" + range[1]);
                    }
                }
                long at = e.stats().totalBytesRead();
                kv.keys(2, 5500, 500, got, 0); // beyond the range kept: read anew, up to the layer's end
                assertTrue(e.stats().totalBytesRead() > at, "a range outside the one kept is read");
                w.layer(0).keys(2, 5500, 500, want, 0);
                assertArrayEquals(bf16(want, 500 * d), java.util.Arrays.copyOf(got, 500 * d));
                kv.keys(3, 999, 2, got, 0); // straddles the kept range's start: read anew
                w.layer(0).keys(3, 999, 2, want, 0);
                assertArrayEquals(bf16(want, 2 * d), java.util.Arrays.copyOf(got, 2 * d));
            }
        }
    }

    /**
     * The exact attention of a query over a stored layer (what a calibrating strategy weighs its
     * candidates by) reads the layer's keys once, not once a KV head, and gives the weights it gives
     * over the same keys in memory, bit for bit.
     */
    @Test
    void exactAttentionOverAStoredLayerReadsItOnce() {
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(12).build());
        try (KvEngine e = KvEngine.open(TestEngines.config(TestEngines.deviceDirs(dir, 2), "portable").build())) {
            TestEngines.store(e, "s", w, TOKENS, (s, l) -> { });
            float[] query = w.query(0, 3);
            io.kvoffload.attention.ExactAttention exact = io.kvoffload.attention.ExactAttention.of(SHAPE);
            try (KvSequence s = e.openSequence("s"); SequenceLayerKv kv = new SequenceLayerKv(s, 0, TOKENS)) {
                long before = e.stats().totalBytesRead();
                float[][] stored = exact.headWeights(kv, query);
                long read = e.stats().totalBytesRead() - before;
                long layer = (long) TOKENS * SHAPE.entryBytes();
                assertTrue(read >= layer && read < layer * 3 / 2, read + " bytes read for a " + layer + "-byte layer");
                float[][] inMemory = exact.headWeights(io.kvoffload.strategy.DenseLayerKv.materialize(kv, false), query);
                for (int h = 0; h < stored.length; h++) {
                    assertArrayEquals(inMemory[h], stored[h], "query head " + h);
                }
            }
        }
    }

    /** The floats as BF16 stores them (round to nearest even), as the layer's reads decode them. */
    private static float[] bf16(float[] x, int n) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            int bits = Float.floatToRawIntBits(x[i]);
            bits += 0x7FFF + ((bits >>> 16) & 1);
            out[i] = Float.intBitsToFloat(bits & 0xFFFF0000);
        }
        return out;
    }
}
