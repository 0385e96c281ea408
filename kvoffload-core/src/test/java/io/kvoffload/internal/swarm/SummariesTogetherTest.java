package io.kvoffload.internal.swarm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.internal.sequence.SequenceLayerKv;
import io.kvoffload.internal.swarm.BlockMassIndex.Combination;
import io.kvoffload.internal.swarm.BlockMassIndex.Scoring;
import io.kvoffload.internal.swarm.BlockMassIndex.Spec;
import io.kvoffload.strategy.LayerContext;
import io.kvoffload.strategy.LayerKv;
import io.kvoffload.strategy.LayerSelector;
import io.kvoffload.strategy.Strategies;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Indexes built together over one stored layer ({@link BlockMassIndex#summariseTogether}, what a
 * calibrating strategy weighs on a layer's opening query) read its keys once between them, and are the
 * indexes built one by one, bit for bit.
 */
class SummariesTogetherTest {
    static final KvShape SHAPE = new KvShape(1, 16, 2, 32, DType.BF16);
    static final int TOKENS = 9000; // not a multiple of the 4,096-token ranges
    static final List<Spec> SPECS = List.of(
            new Spec(16, Scoring.MIX, Combination.CLUSTERED_HEAD_MASS, 6f, true, false),
            new Spec(16, Scoring.MIX, Combination.CLUSTERED_HEAD_MASS, 6f, true, true),
            new Spec(8, Scoring.MIX, Combination.CLUSTERED_HEAD_MASS, 6f, true, true),
            new Spec(3, Scoring.MEAN, Combination.HEAD_MASS, 0f, false, false));

    @TempDir
    Path dir;

    /** A stored layer of {@code shape}, as a strategy opens it over the SSDs: keys read range by range. */
    interface StoredLayer {
        void test(KvEngine engine, SequenceLayerKv kv, long layerBytes, float[] query);
    }

    private void stored(KvShape shape, int tokens, long seed, StoredLayer body) {
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(shape, tokens).seed(seed).build());
        try (KvEngine e = KvEngine.open(TestEngines.config(TestEngines.deviceDirs(dir, 2), "portable").build())) {
            TestEngines.store(e, "s", w, tokens, (s, l) -> { });
            try (KvSequence s = e.openSequence("s"); SequenceLayerKv kv = new SequenceLayerKv(s, 0, tokens)) {
                body.test(e, kv, (long) tokens * shape.entryBytes(), w.query(0, 2));
            }
        }
    }

    @Test
    void aStoredLayerIsReadOnceForAllAndEachIndexIsTheOneBuiltAlone() {
        stored(SHAPE, TOKENS, 5, (e, kv, layer, query) -> {
            List<Spec> aligned = SPECS.subList(0, 3);
            long before = e.stats().totalBytesRead();
            List<BlockMassIndex> together = BlockMassIndex.summariseTogether(kv, TOKENS, SHAPE.queryHeads(), aligned, null);
            long read = e.stats().totalBytesRead() - before;
            assertTrue(read >= layer && read < layer * 3 / 2, read + " bytes read for three indexes of a " + layer
                    + "-byte layer");
            for (int i = 0; i < aligned.size(); i++) {
                assertSameIndex(alone(kv, aligned.get(i)), together.get(i), query, "spec " + i);
            }
            // 3-token blocks do not tile the 4,096-token ranges: built one after another, still the same.
            List<BlockMassIndex> mixed = BlockMassIndex.summariseTogether(kv, TOKENS, SHAPE.queryHeads(), SPECS, null);
            for (int i = 0; i < SPECS.size(); i++) {
                assertSameIndex(alone(kv, SPECS.get(i)), mixed.get(i), query, "spec " + i + " of four");
            }
        });
    }

    /**
     * Summaries built in another's pass (blocks of 16 from their halves, {@code KeyBounds.ofParts}) or
     * copied from an identical one (two of 8-token blocks) are each the index built alone, bit for bit,
     * also where the last block is short (9,000 tokens), on the scalar path and on the Vector API's.
     */
    @Test
    void blocksFromTheirHalvesAndCopiesAreTheIndexesBuiltAlone() {
        List<Spec> specs = List.of(
                new Spec(16, Scoring.MIX, Combination.CLUSTERED_HEAD_MASS, 6f, false, false),
                new Spec(8, Scoring.MIX, Combination.CLUSTERED_HEAD_MASS, 6f, false, false),
                new Spec(8, Scoring.MIX, Combination.HEAD_MASS, 6f, false, false),
                new Spec(32, Scoring.BOUND, Combination.HEAD_MASS, 6f, false, false),
                new Spec(4, Scoring.BOUND, Combination.HEAD_MASS, 6f, false, false),
                // 4,500 and 2,250 blocks on 2 KV heads: enough runs for the Vector API's path (KeyBounds.vectorised)
                new Spec(4, Scoring.MIX, Combination.CLUSTERED_HEAD_MASS, 6f, false, false),
                new Spec(2, Scoring.MIX, Combination.CLUSTERED_HEAD_MASS, 6f, false, false));
        stored(SHAPE, TOKENS, 7, (e, kv, layer, query) -> {
            List<BlockMassIndex> together = BlockMassIndex.summariseTogether(kv, TOKENS, SHAPE.queryHeads(), specs, null);
            for (int i = 0; i < specs.size(); i++) {
                assertSameIndex(alone(kv, specs.get(i)), together.get(i), query, "spec " + i);
            }
        });
    }

    /**
     * {@code mass-auto-cal} opening a stored layer reads it once: its candidates' summaries and the opening
     * query's exact attention take each range of keys in one pass (twice the layer when the attention was
     * a pass of its own; each candidate read it once more before that).
     */
    @Test
    void aCalibratingOpeningReadsAStoredLayerOnce() {
        KvShape glm = new KvShape(1, 32, 2, 128, DType.BF16); // a layer with candidates to weigh at this length
        stored(glm, 16384, 6, (e, kv, layer, query) -> {
            LayerContext context = SweepCalibrationTest.context(glm, kv, query);
            long before = e.stats().totalBytesRead();
            try (LayerSelector sel = Strategies.named("mass-auto-cal").openLayer(context)) {
                long read = e.stats().totalBytesRead() - before;
                assertTrue(read >= layer && read < layer * 3 / 2, read + " bytes read to open a " + layer
                        + "-byte layer");
            }
        });
    }

    private static BlockMassIndex alone(LayerKv kv, Spec s) {
        return new BlockMassIndex(kv, TOKENS, SHAPE.queryHeads(), s.blockTokens(), s.scoring(), s.combination(),
                s.pruneLogit(), s.scoreParts(), s.partsFirst());
    }

    private static void assertSameIndex(BlockMassIndex want, BlockMassIndex got, float[] query, String what) {
        assertEquals(want.memoryBytes(), got.memoryBytes(), what);
        float[] a = new float[want.blocks()], b = new float[got.blocks()];
        want.score(query, a);
        got.score(query, b);
        assertArrayEquals(a, b, what);
    }
}
