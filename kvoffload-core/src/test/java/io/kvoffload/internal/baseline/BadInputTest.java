package io.kvoffload.internal.baseline;

import io.kvoffload.internal.swarm.SwarmSelector;
import static io.kvoffload.internal.baseline.Layers.assertMessage;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kvoffload.strategy.DenseLayerKv;
import java.lang.foreign.Arena;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Every argument error names the argument, its value and what is allowed. */
class BadInputTest {
    private static final DenseLayerKv KV = Layers.random(200, 2, 8, false, 1);

    @Test
    void selectArguments() {
        try (Arena arena = Arena.ofConfined()) {
            for (String name : Layers.NAMES) {
                BaselineSelector s = Layers.build(name, KV, 4, 1, arena);
                float[] q = new float[32];
                int[] out = new int[200];
                assertMessage(() -> s.select(new float[31], 10, out), "query.length = 31", "queryHeads × headDim = 32");
                assertMessage(() -> s.select(q, 0, out), "budgetTokens = 0", "positive");
                assertMessage(() -> s.maxSelected(-3), "budgetTokens = -3");
                assertMessage(() -> s.select(q, 10, new int[0]), "out.length = 0", "maxSelected(10)");
                float[] nan = q.clone();
                nan[5] = Float.NaN;
                assertMessage(() -> s.select(nan, 10, out), "query[5] = NaN", "finite");
                assertThrows(NullPointerException.class, () -> s.select(null, 10, out), name);
            }
        }
    }

    @Test
    void constructorArguments() {
        assertMessage(() -> new OracleSelector(KV, 3), "queryHeads = 3", "multiple of kvHeads = 2");
        assertMessage(() -> new QuestSelector(KV, 2, 0), "pageSize = 0", "1..65536");
        assertMessage(() -> new InfLLMSelector(KV, 2, 128, 256, 128, 200, -1), "representatives = 200", "1..128");
        assertMessage(() -> new InfLLMSelector(KV, 2, 128, 256, 128, 4, -5), "topBlocks = -5");
        assertMessage(() -> new PQCacheSelector(KV, 2, 32, 16, 3, 64, 5, 100, 1), "subspaces = 3", "divide headDim = 8");
        assertMessage(() -> new PQCacheSelector(KV, 2, 32, 16, 2, 300, 5, 100, 1), "centroids = 300", "1..256");
        assertMessage(() -> new ClusterKVSelector(KV, 2, 16, 0, 5, 100, 1), "tokensPerCluster = 0");
        assertMessage(() -> new SparQSelector(KV, 2, 9, 0), "rank = 9", "1..8");
        assertMessage(() -> new SparFSelector(KV, 2, 2, 0, 0), "groupSize = 0");
        assertMessage(() -> new SparQSelector(KV, 2, 2, -1), "localWindow = -1");
        float[][] keys = {new float[16]};
        keys[0][13] = Float.POSITIVE_INFINITY;
        DenseLayerKv bad = new DenseLayerKv(2, 8, keys, null);
        assertMessage(() -> new QuestSelector(bad, 1), "key of token 1, KV head 0, dimension 5 = Infinity", "finite");
        assertThrows(NullPointerException.class, () -> new OracleSelector(null, 1));
        try (Arena arena = Arena.ofConfined()) {
            SwarmSelector swarm = (SwarmSelector) Layers.build("swarm", KV, 4, 1, arena);
            assertMessage(() -> new SwarmSelector(swarm.index(), -1, 0), "sinks = -1");
            assertMessage(() -> swarm.score(new float[32], new float[0]), "dst.length = 0");
            assertMessage(() -> SwarmSelector.build(KV, 4, List.of(new float[32]), 0.1,
                    io.kvoffload.internal.swarm.ClusteringConfig.defaults(), 4, -2, arena), "localWindow = -2");
        }
        QuestSelector quest = new QuestSelector(KV, 2);
        assertMessage(() -> quest.pageScores(new float[16], new float[1]), "dst.length = 1");
        OracleSelector oracle = new OracleSelector(KV, 2);
        assertMessage(() -> oracle.weights(new float[15], new float[200]), "query.length = 15");
    }
}
