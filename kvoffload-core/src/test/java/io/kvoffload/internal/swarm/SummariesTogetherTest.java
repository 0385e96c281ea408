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

    @Test
    void aStoredLayerIsReadOnceForAllAndEachIndexIsTheOneBuiltAlone() {
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(5).build());
        float[] query = w.query(0, 2);
        try (KvEngine e = KvEngine.open(TestEngines.config(TestEngines.deviceDirs(dir, 2), "portable").build())) {
            TestEngines.store(e, "s", w, TOKENS, (s, l) -> { });
            long layer = (long) TOKENS * SHAPE.entryBytes();
            try (KvSequence s = e.openSequence("s"); SequenceLayerKv kv = new SequenceLayerKv(s, 0, TOKENS)) {
                List<Spec> aligned = SPECS.subList(0, 3);
                long before = e.stats().totalBytesRead();
                List<BlockMassIndex> together = BlockMassIndex.summariseTogether(kv, TOKENS, SHAPE.queryHeads(), aligned);
                long read = e.stats().totalBytesRead() - before;
                assertTrue(read >= layer && read < layer * 3 / 2, read + " bytes read for three indexes of a " + layer
                        + "-byte layer");
                for (int i = 0; i < aligned.size(); i++) {
                    assertSameIndex(alone(kv, aligned.get(i)), together.get(i), query, "spec " + i);
                }
                // 3-token blocks do not tile the 4,096-token ranges: built one after another, still the same.
                List<BlockMassIndex> mixed = BlockMassIndex.summariseTogether(kv, TOKENS, SHAPE.queryHeads(), SPECS);
                for (int i = 0; i < SPECS.size(); i++) {
                    assertSameIndex(alone(kv, SPECS.get(i)), mixed.get(i), query, "spec " + i + " of four");
                }
            }
        }
    }

    /**
     * {@code mass-auto-cal} opening a stored layer reads its keys once for its candidates and once for
     * the opening query's exact attention: twice the layer, where each candidate read it once before.
     */
    @Test
    void aCalibratingOpeningReadsAStoredLayerTwice() {
        KvShape glm = new KvShape(1, 32, 2, 128, DType.BF16); // a layer with candidates to weigh at this length
        int tokens = 16384;
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(glm, tokens).seed(6).build());
        float[] query = w.query(0, 2);
        try (KvEngine e = KvEngine.open(TestEngines.config(TestEngines.deviceDirs(dir, 2), "portable").build())) {
            TestEngines.store(e, "s", w, tokens, (s, l) -> { });
            long layer = (long) tokens * glm.entryBytes();
            try (KvSequence s = e.openSequence("s"); SequenceLayerKv kv = new SequenceLayerKv(s, 0, tokens)) {
                LayerContext context = context(glm, kv, query);
                long before = e.stats().totalBytesRead();
                try (LayerSelector sel = Strategies.named("mass-auto-cal").openLayer(context)) {
                    long read = e.stats().totalBytesRead() - before;
                    // Twice: the candidates were weighed (one pass for the exact attention), and their summaries
                    // came from one pass between them (two or three candidates read it two or three times before).
                    assertTrue(read >= 2 * layer && read < layer * 5 / 2, read + " bytes read to open a " + layer
                            + "-byte layer");
                }
            }
        }
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

    private static LayerContext context(KvShape shape, LayerKv kv, float[] opening) {
        return new LayerContext() {
            @Override public KvShape shape() { return shape; }
            @Override public int layer() { return 0; }
            @Override public int tokens() { return kv.tokens(); }
            @Override public int laidOutTokens() { return kv.tokens(); }
            @Override public int sinkTokens() { return 4; }
            @Override public int localWindow() { return 64; }
            @Override public LayerKv keys() { return kv; }
            @Override public int headGroups() { return shape.kvHeads(); }
            @Override public float[] openingQuery() { return opening; }
        };
    }
}
