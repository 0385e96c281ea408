package io.kvoffload.workload;

import static io.kvoffload.workload.SyntheticWorkloadTest.assertMessage;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kvoffload.attention.QualityMetrics;
import io.kvoffload.attention.ExactAttention;
import io.kvoffload.internal.util.TopK;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.strategy.LayerKv;
import io.kvoffload.DType;
import io.kvoffload.KvShape;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class ExactAttentionTest {

    /** One head, headDim 1 (scale 1): logits 0, ln 2, ln 3 give weights 1/6, 2/6, 3/6. */
    private static DenseLayerKv threeTokens() {
        float[] k = {0f, (float) Math.log(2), (float) Math.log(3)};
        float[] v = {1f, 2f, 3f};
        return new DenseLayerKv(3, 1, new float[][] {k}, new float[][] {v});
    }

    @Test
    void handComputedWeightsAndOutputs() {
        ExactAttention a = new ExactAttention(1, 1, 1);
        ExactAttention.Result r = a.compute(threeTokens(), new float[] {1f});
        assertArrayEquals(new float[] {1f / 6, 2f / 6, 3f / 6}, r.weights(), 1e-6f);
        assertEquals(14.0 / 6, r.output()[0], 1e-6); // (1·1 + 2·2 + 3·3) / 6
        float[] sparse = a.sparseOutput(threeTokens(), new float[] {1f}, new int[] {2, 1, 2});
        assertEquals(13.0 / 5, sparse[0], 1e-6); // softmax over {1, 2}: (2·2 + 3·3) / 5
        assertEquals(Math.abs(13.0 / 5 - 14.0 / 6) / (14.0 / 6), QualityMetrics.relativeError(r.output(), sparse), 1e-6);
        assertEquals(5.0 / 6, QualityMetrics.attentionMassRecall(r.weights(), new int[] {1, 2}), 1e-6);
    }

    @Test
    void groupedQueryHeadsAverageTheirSoftmaxes() {
        // Two query heads read the one KV head: head 0 with q = 1, head 1 with q = 0 (uniform).
        ExactAttention a = new ExactAttention(2, 1, 1);
        float[] w = a.weights(threeTokens(), new float[] {1f, 0f});
        for (int t = 0; t < 3; t++) {
            assertEquals(((t + 1) / 6.0 + 1 / 3.0) / 2, w[t], 1e-6);
        }
    }

    @Test
    void headWeightsAreEachQueryHeadsSoftmaxAndAverageToTheWeights() {
        ExactAttention a = new ExactAttention(2, 1, 1);
        float[] q = {1f, 0f};
        float[][] rows = a.headWeights(threeTokens(), q);
        assertArrayEquals(new float[] {1f / 6, 2f / 6, 3f / 6}, rows[0], 1e-6f);
        assertArrayEquals(new float[] {1f / 3, 1f / 3, 1f / 3}, rows[1], 1e-6f);
        float[] w = a.weights(threeTokens(), q);
        for (int t = 0; t < 3; t++) {
            assertEquals((rows[0][t] + rows[1][t]) / 2, w[t], 1e-7);
        }
    }

    @Test
    void perHeadSetsAttendEachKvHeadsOwnTokens() {
        // Two KV heads, one query head each, headDim 1: head 0 over {1, 2}, head 1 over {0} only.
        float[] k = {0f, (float) Math.log(2), (float) Math.log(3)};
        DenseLayerKv kv = new DenseLayerKv(3, 1, new float[][] {k, k}, new float[][] {{1f, 2f, 3f}, {5f, 6f, 7f}});
        ExactAttention a = new ExactAttention(2, 2, 1);
        float[] q = {1f, 1f};
        float[] out = a.sparseOutput(kv, q, new int[][] {{2, 1}, {0}});
        assertEquals(13.0 / 5, out[0], 1e-6);
        assertEquals(5.0, out[1], 1e-6);
        // The same set for every head is the shared-set output, bit for bit.
        int[] set = {0, 2};
        assertArrayEquals(a.sparseOutput(kv, q, set), a.sparseOutput(kv, q, new int[][] {set, set}));
        assertMessage(() -> a.sparseOutput(kv, q, new int[][] {set}), "selected.length = 1", "kvHeads = 2");
        assertMessage(() -> a.sparseOutput(kv, q, new int[][] {set, {}}), "selected[1] is empty");
    }

    @Test
    void theFullSetReproducesDenseAttentionExactly() {
        KvShape shape = new KvShape(1, 6, 2, 16, DType.F32); // group of 3: the 4-head kernel's remainder path
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(shape, 700).build());
        ExactAttention a = ExactAttention.of(shape);
        float[] q = w.query(0, 3);
        LayerKv lazy = w.layer(0);
        ExactAttention.Result dense = a.compute(lazy, q);
        int[] all = IntStream.range(0, 700).toArray();
        assertEquals(0.0, QualityMetrics.relativeError(dense.output(), a.sparseOutput(lazy, q, all)));
        assertEquals(1.0, QualityMetrics.attentionMassRecall(dense.weights(), all), 1e-6);
        assertEquals(1.0, QualityMetrics.topKRecall(dense.weights(), all, 50));
        double sum = 0;
        for (float x : dense.weights()) {
            sum += x;
        }
        assertEquals(1.0, sum, 1e-4);
        // Materialised and lazy layers give the same answer.
        assertArrayEquals(dense.weights(), a.weights(DenseLayerKv.materialize(lazy, false), q));
    }

    @Test
    void aTopSelectionRecallsMostOfTheMassOnTheSyntheticWorkload() {
        KvShape shape = new KvShape(1, 8, 2, 128, DType.BF16);
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(shape, 4096).build());
        ExactAttention a = ExactAttention.of(shape);
        float[] q = w.query(0, 0);
        ExactAttention.Result r = a.compute(w.layer(0), q);
        int[] top = TopK.indices(r.weights(), 410); // 10%
        double recall = QualityMetrics.attentionMassRecall(r.weights(), top);
        double error = QualityMetrics.relativeError(r.output(), a.sparseOutput(w.layer(0), q, top));
        assertEquals(1.0, recall, 0.2);
        assertEquals(0.0, error, 0.3);
    }

    @Test
    void rejectsMismatchedShapes() {
        ExactAttention a = new ExactAttention(2, 1, 1);
        assertMessage(() -> a.weights(threeTokens(), new float[3]), "query.length = 3", "queryHeads × headDim = 2");
        assertMessage(() -> new ExactAttention(3, 2, 8), "queryHeads = 3", "multiple of kvHeads = 2");
        assertMessage(() -> new ExactAttention(2, 2, 0), "headDim = 0", "1..16384");
        assertMessage(() -> a.sparseOutput(threeTokens(), new float[2], new int[] {3}), "selected token = 3", "0..2");
        assertMessage(() -> a.sparseOutput(threeTokens(), new float[2], new int[0]), "selected is empty");
        ExactAttention b = new ExactAttention(2, 2, 1);
        assertMessage(() -> b.weights(threeTokens(), new float[2]), "kvHeads = 1", "expects kvHeads = 2");
        DenseLayerKv keysOnly = new DenseLayerKv(3, 1, new float[][] {{0, 0, 0}}, null);
        assertThrows(IllegalStateException.class, () -> a.sparseOutput(keysOnly, new float[2], new int[] {0}));
        assertMessage(() -> new DenseLayerKv(3, 2, new float[][] {{0, 0}}, null), "keys[0].length = 2", "= 6");
    }
}
