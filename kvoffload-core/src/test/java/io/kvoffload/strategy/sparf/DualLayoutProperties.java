package io.kvoffload.strategy.sparf;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvoffload.DType;
import io.kvoffload.DecodeOptions;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.strategy.FetchPlan;
import io.kvoffload.strategy.LayerContext;
import io.kvoffload.strategy.LayerSelector;
import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.strategy.UnitReads;
import io.kvoffload.testing.TestEngines;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/**
 * The dual layout round-trips bit-exact: every dimension slice SparF wrote, read back from the SSDs
 * through the pipeline's auxiliary read, holds exactly the stored key elements {@code K[t, head, dim]}
 * of its slice's tokens, for any dtype, token count, head shape and device count.
 */
class DualLayoutProperties {

    /** Reads every unit of the layer's dual layout before each step and compares it with the keys. */
    private record ReadEverySlice(KvShape shape, MemorySegment keys, int tokens, List<String> mismatches)
            implements SelectionStrategy {
        @Override
        public String name() {
            return "read-every-slice";
        }

        @Override
        public LayerSelector openLayer(LayerContext context) {
            int units = context.units().unitCount();
            return new LayerSelector() {
                @Override
                public void planUnits(float[] query, FetchPlan plan, UnitReads reads) {
                    for (int u = units - 1; u >= 0; u--) { // any order: the scheduler sorts and merges
                        reads.add(u);
                    }
                }

                @Override
                public void select(float[] query, FetchPlan plan) {
                    UnitReads reads = plan.units();
                    int heads = shape.kvHeads(), d = shape.headDim(), eb = shape.dtype().bytes();
                    int slice = SparF.sliceTokens(shape.dtype());
                    for (int u = 0; u < units; u++) {
                        int s = u / (heads * d), h = u / d % heads, i = u % d;
                        long at = reads.offset(u);
                        for (int t = s * slice; t < Math.min(tokens, (s + 1) * slice); t++) {
                            for (int b = 0; b < eb; b++) {
                                byte want = keys.get(java.lang.foreign.ValueLayout.JAVA_BYTE,
                                        (((long) t * heads + h) * d + i) * eb + b);
                                byte got = reads.data().get(java.lang.foreign.ValueLayout.JAVA_BYTE,
                                        at + (long) (t - s * slice) * eb + b);
                                if (want != got) {
                                    mismatches.add("unit " + u + " token " + t + " byte " + b);
                                    return;
                                }
                            }
                        }
                    }
                }
            };
        }
    }

    @Property(tries = 8)
    void dimensionSlicesReadBackEqualTheKeys(@ForAll @IntRange(min = 1, max = 4200) int tokens,
            @ForAll @IntRange(min = 0, max = 2) int dtype, @ForAll @IntRange(min = 1, max = 2) int kvHeads,
            @ForAll @IntRange(min = 1, max = 3) int devices, @ForAll long seed) throws Exception {
        KvShape shape = new KvShape(1, 2 * kvHeads, kvHeads, 8 * kvHeads, DType.values()[dtype]);
        Path root = Files.createTempDirectory("dual-layout");
        try (KvEngine e = KvEngine.open(TestEngines.config(TestEngines.deviceDirs(root, devices), "portable").build());
                Arena arena = Arena.ofConfined()) {
            MemorySegment k = arena.allocate((long) tokens * shape.halfEntryBytes());
            MemorySegment v = arena.allocate((long) tokens * shape.halfEntryBytes());
            SplittableRandom rnd = new SplittableRandom(seed);
            for (long i = 0; i < k.byteSize(); i++) {
                // Random bit patterns, NaNs included: the copy is of bytes, not of numbers.
                k.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
                v.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
            }
            try (KvSequence s = e.createSequence("s", shape)) {
                s.appendTokens(new int[tokens]);
                s.appendKv(0, k, v);
                new SparF().layOut(s, 0);
                s.commit();
            }
            List<String> mismatches = new ArrayList<>();
            ReadEverySlice check = new ReadEverySlice(shape, k, tokens, mismatches);
            DecodeOptions o = DecodeOptions.builder().strategy(check).sparsity(0.5).sinkTokens(0).localWindow(0).build();
            try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(o)) {
                float[] q = new float[shape.queryHeads() * shape.headDim()];
                d.prefetch(0, q).await().close();
            }
            assertEquals(List.of(), mismatches);
        } finally {
            TestEngines.deleteRecursively(root);
        }
    }
}
