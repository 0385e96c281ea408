package io.kvoffload.internal.baseline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.attention.ExactAttention;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.internal.util.TopK;
import io.kvoffload.workload.WorkloadSpec;
import java.util.Arrays;
import java.util.SplittableRandom;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

class OracleSelectorTest {

    /** Four tokens, one head, d = 2: logits √2·(1, 0, 2, −1)/√2 rank tokens 2, 0, 1, 3. */
    @Example
    void handComputedRanking() {
        float[][] k = {{1, 0, 0, 1, 2, 0, -1, 0}};
        DenseLayerKv kv = new DenseLayerKv(4, 2, k, null);
        OracleSelector s = new OracleSelector(kv, 1);
        float[] q = {(float) Math.sqrt(2), 0};
        assertArrayEquals(new int[] {2}, Layers.select(s, q, 1));
        assertArrayEquals(new int[] {0, 2}, Layers.select(s, q, 2));
        assertArrayEquals(new int[] {0, 1, 2}, Layers.select(s, q, 3));
        float[] w = new float[4];
        s.weights(q, w);
        double z = Math.exp(1) + 1 + Math.exp(2) + Math.exp(-1); // logits are exactly 1, 0, 2, −1
        assertEquals(Math.exp(2) / z, w[2], 1e-6);
        assertEquals(1 / z, w[1], 1e-6);
        assertEquals(4L * 4 * 2, s.indexBytes());
        assertEquals(s.indexBytes(), s.lastScoredBytes());
    }

    /** GQA: two query heads on one KV head; the weights are the average of their softmaxes. */
    @Example
    void averagesTheQueryHeadsOfAGroup() {
        float[][] k = {{1, 0, 0, 1, 0, 0}};
        DenseLayerKv kv = new DenseLayerKv(3, 2, k, null);
        OracleSelector s = new OracleSelector(kv, 2);
        float r2 = (float) Math.sqrt(2);
        float[] q = {3 * r2, 0, 0, 2 * r2}; // head 0 likes token 0 (logit 3), head 1 token 1 (logit 2)
        float[] w = new float[3];
        s.weights(q, w);
        double a = Math.exp(3) + 2, b = Math.exp(2) + 2;
        assertEquals((Math.exp(3) / a + 1 / b) / 2, w[0], 1e-6);
        assertEquals((1 / a + Math.exp(2) / b) / 2, w[1], 1e-6);
        assertEquals((1 / a + 1 / b) / 2, w[2], 1e-6);
        assertArrayEquals(new int[] {0, 1}, Layers.select(s, q, 2));
    }

    /**
     * The oracle returns {@link ExactAttention}'s exact top-k: the same set, except that tokens whose
     * weights differ by float rounding only may swap places at the cut.
     */
    @Property(tries = 60)
    void equalsTheExactTopK(@ForAll @IntRange(min = 1, max = 500) int tokens, @ForAll @IntRange(min = 1, max = 2) int kvHeads,
            @ForAll @IntRange(min = 1, max = 5) int group, @ForAll @IntRange(min = 1, max = 500) int budget,
            @ForAll long seed) {
        DenseLayerKv kv = Layers.random(tokens, kvHeads, 16, false, seed);
        OracleSelector s = new OracleSelector(kv, kvHeads * group);
        float[] q = Layers.query(kvHeads * group, 16, false, new SplittableRandom(seed));
        float[] w = new ExactAttention(kvHeads * group, kvHeads, 16).weights(kv, q);
        int k = Math.min(budget, tokens);
        int[] expected = TopK.indices(w, k);
        int[] actual = Layers.select(s, q, budget);
        assertEquals(k, actual.length);
        float max = 0;
        for (float x : w) {
            max = Math.max(max, x);
        }
        int[] onlyOracle = Arrays.stream(actual).filter(t -> Arrays.binarySearch(expected, t) < 0).toArray();
        int[] onlyExact = Arrays.stream(expected).filter(t -> Arrays.binarySearch(actual, t) < 0).toArray();
        for (int a : onlyOracle) {
            for (int e : onlyExact) {
                assertTrue(Math.abs(w[a] - w[e]) <= 1e-6f * max, "oracle chose " + a + " (" + w[a] + ") over " + e + " ("
                        + w[e] + ")");
            }
        }
    }

    /** On the synthetic workload the weights have clear gaps: the sets are identical. */
    @Example
    void identicalToExactTopKOnTheSyntheticWorkload() {
        KvShape shape = new KvShape(1, 8, 2, 64, DType.BF16);
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(shape, 3000).seed(11).build());
        DenseLayerKv kv = DenseLayerKv.materialize(w.layer(0), false);
        OracleSelector s = new OracleSelector(kv, 8);
        ExactAttention attention = ExactAttention.of(shape);
        for (int step = 0; step < 4; step++) {
            float[] q = w.query(0, step);
            float[] weights = attention.weights(kv, q);
            float[] mine = new float[kv.tokens()];
            s.weights(q, mine);
            for (int t = 0; t < mine.length; t++) {
                assertEquals(weights[t], mine[t], 2e-5f * Math.max(1e-3f, weights[t])); // float rounding of large logits
            }
            assertArrayEquals(TopK.indices(weights, 150), Layers.select(s, q, 150));
        }
    }
}
