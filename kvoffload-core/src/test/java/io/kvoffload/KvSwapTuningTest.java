package io.kvoffload;

import io.kvoffload.strategy.kvswap.KvSwapTuning;
import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.strategy.kvswap.GroupSummary;
import io.kvoffload.strategy.kvswap.KvSwap;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.kvswap.CalibrationSet;
import io.kvoffload.internal.kvswap.KvSwapConfig;
import io.kvoffload.internal.kvswap.ParameterTuner;
import io.kvoffload.internal.kvswap.ReuseBuffer;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.BitSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The tuner's JSON (what {@code kvo bench kvswap-tune} writes) loads as a {@link KvSwapTuning} that
 * drives {@link KvSwap#groupLayer} and the decoder; bad files are rejected with the key, value
 * and allowed range.
 */
class KvSwapTuningTest {
    static final KvShape SHAPE = KvDecoderTest.SHAPE;
    static final int TOKENS = KvDecoderTest.TOKENS;

    @TempDir
    Path root;

    static ParameterTuner.Builder tuner() {
        // The compressed caches take 16 KiB per unit of rank (2 layers × 4096 tokens × 2 bytes).
        return ParameterTuner.builder(SHAPE, TOKENS, 1, 1536L << 10).budgetTokens(96).computeSecondsPerLayer(2e-4)
                .maxReuseLevels(2).groupSizes(4, 8, 16).reusePolicy(ReuseBuffer.Policy.REPLACE_UNREQUESTED).rollingGroups(2);
    }

    static KvSwapConfig tune(ParameterTuner.Builder b) {
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(3).build());
        return b.build().tune(CalibrationSet.of(w.layer(0), w.queries(0, 8), w.shape().queryHeads()), ParameterTuner.Progress.NONE);
    }

    @Test
    void tunerFileDrivesGroupLayerAndTheDecoder() throws Exception {
        KvSwapConfig c = tune(tuner());
        Path file = root.resolve("kvswap.json");
        c.write(file); // what TuneCommand writes
        KvSwapTuning t = KvSwapTuning.load(file);
        assertEquals(c.groupSize(), t.groupSize());
        assertEquals(c.rank(), t.rank());
        assertEquals(c.budgetTokens(), t.budgetTokens());
        assertEquals(c.groups(), t.groups());
        assertEquals(c.reuseSlots(), t.reuseSlots());
        assertEquals(KvSwap.ReusePolicy.REPLACE_UNREQUESTED, t.reusePolicy());
        assertEquals(2 * c.groupSize(), t.localWindow());
        assertEquals(c.compressionRatio(), t.compressionRatio());
        t.checkShape(SHAPE);

        DecodeOptions o = t.applyTo(DecodeOptions.builder().strategy(Swarm.defaults())).sinkTokens(4).build();
        KvSwap k = (KvSwap) o.strategy();
        assertEquals(t.budgetTokens(), o.budgetTokens());
        assertEquals(t.reuseSlots(), k.reuseSlots());
        assertEquals(t.localWindow(), o.localWindow());
        assertEquals(KvSwap.ReusePolicy.REPLACE_UNREQUESTED, k.reusePolicy());
        assertEquals(t.groupOptions(), k.groupOptions());

        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(11).build());
        KvConfig config = TestEngines.config(TestEngines.deviceDirs(root, 2), "portable").blockTokens(16)
                .deviceCapacityBytes(64L << 20).build();
        try (KvEngine e = KvEngine.open(config)) {
            try (KvSequence s = e.createSequence("s", SHAPE)) {
                SwarmOfflinePhaseTest.store(s, w);
                for (int l = 0; l < SHAPE.layers(); l++) {
                    GroupSummary sum = KvSwap.groupLayer(s, l, t.groupOptions());
                    assertEquals(t.groupSize(), sum.groupSize());
                    assertEquals(t.rank(), sum.rank());
                    assertEquals(TOKENS / t.groupSize() * t.groupSize(), sum.groupedTokens());
                }
                s.commit();
            }
            byte[][] expected = SwarmOfflinePhaseTest.expected(w, 0);
            try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(o)) {
                for (int step = 0; step < 3; step++) {
                    try (KvView v = d.prefetch(0, w.query(0, step)).await()) {
                        BitSet seen = new BitSet();
                        int half = SHAPE.halfEntryBytes();
                        int row = SHAPE.headDim() * SHAPE.dtype().bytes();
                        for (int r = 0; r < v.tokenCount(); r++) {
                            int p = v.position(r);
                            seen.set(p);
                            MemorySegment ek = MemorySegment.ofArray(expected[0]).asSlice((long) p * half, row);
                            assertEquals(-1, v.keys(0).asSlice((long) r * row, row).mismatch(ek), "K of " + p);
                        }
                        // Sinks, the tuned rolling buffer, and M groups.
                        assertEquals(4, seen.get(0, 4).cardinality());
                        int windowStart = TOKENS - t.localWindow();
                        assertEquals(t.localWindow(), seen.get(windowStart, TOKENS).cardinality());
                        assertTrue(v.tokenCount() <= 4 + t.localWindow() + t.groups() * t.groupSize());
                    }
                }
                assertEquals(3L * t.groups(), d.stats().clustersSelected());
            }
        }
    }

    @Test
    void badFilesNameTheKeyTheValueAndTheAllowedRange() throws Exception {
        String json = tune(tuner()).toJson();
        Path file = root.resolve("bad.json");

        Files.writeString(file, json.replaceFirst("\"groupSize\"\\s*:\\s*\\d+", "\"groupSize\" : 0"),
                StandardCharsets.UTF_8);
        String m = assertThrows(IllegalArgumentException.class, () -> KvSwapTuning.load(file)).getMessage();
        assertTrue(m.contains(file.toString()) && m.contains("groupSize = 0") && m.contains("allowed: 1..4096"), m);

        Files.writeString(file, json.replaceFirst("\"rank\"\\s*:\\s*\\d+,", ""), StandardCharsets.UTF_8);
        m = assertThrows(IllegalArgumentException.class, () -> KvSwapTuning.load(file)).getMessage();
        assertTrue(m.contains("missing key 'rank'"), m);

        Files.writeString(file, json.replaceFirst("\"reuseSlots\"\\s*:\\s*\\d+", "\"reuseSlots\" : -3"),
                StandardCharsets.UTF_8);
        m = assertThrows(IllegalArgumentException.class, () -> KvSwapTuning.load(file)).getMessage();
        assertTrue(m.contains("reuseSlots = -3") && m.contains("allowed:"), m);

        Files.writeString(file, json.replaceFirst("\"format\"\\s*:\\s*\"[^\"]*\"", "\"format\" : \"other\""),
                StandardCharsets.UTF_8);
        m = assertThrows(IllegalArgumentException.class, () -> KvSwapTuning.load(file)).getMessage();
        assertTrue(m.contains("format = 'other'") && m.contains("allowed: kvoffload-kvswap-config"), m);

        String f32 = tune(tuner().compressedKDtype(DType.F32)).toJson();
        m = assertThrows(IllegalArgumentException.class, () -> KvSwapTuning.fromJson(f32)).getMessage();
        assertTrue(m.contains("compressedKDtype = 'F32'") && m.contains("allowed: F16"), m);

        KvSwapTuning t = KvSwapTuning.fromJson(json);
        m = assertThrows(IllegalArgumentException.class,
                () -> t.checkShape(new KvShape(2, 8, 4, 64, DType.BF16))).getMessage();
        assertTrue(m.contains("shape.kvHeads() = 4") && m.contains("allowed: 2"), m);

        m = assertThrows(IllegalArgumentException.class, () -> new KvSwapTuning(SHAPE, TOKENS, 1, 4, 129, 96, 24,
                KvSwap.ReusePolicy.FIFO, 1)).getMessage();
        assertEquals("rank = 129 is out of range; allowed: 1..128", m);
        m = assertThrows(IllegalArgumentException.class, () -> new KvSwapTuning(SHAPE, TOKENS, 1, 4, 64, 96, 23,
                KvSwap.ReusePolicy.FIFO, 1)).getMessage();
        assertEquals("reuseSlots = 23 is out of range; allowed: 24..1048576", m);
    }
}
