package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.testing.PerHeadViews;
import io.kvoffload.testing.TestEngines;
import java.nio.file.Path;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Passkey retrieval through the decoder with the default strategy at its default 10% budget. Every KV
 * head holds a needle of its own, a token at a random place among Gaussian keys; one query head of
 * each KV head looks for its needle, which then holds about half of that head's attention, and the
 * other query heads look in random directions. Every needle must be in the view for its KV head, its
 * row bit-exact, under both placements, on a GQA, a narrow and an MHA shape. A selection of 10% of the
 * tokens at random would hold all of a layer's needles with probability 0.1^kvHeads; Quest, which ranks
 * pages by their bounds summed over the heads, holds all of them on 0 to 4 of 8 such layers
 * (docs/benchmarks.md, "Needles").
 */
class NeedleRetrievalTest {
    static final int TOKENS = 16384;

    @TempDir
    Path root;

    static Stream<Arguments> cases() {
        Stream.Builder<Arguments> b = Stream.builder();
        for (int[] s : new int[][] {{32, 8, 128}, {12, 2, 64}, {8, 8, 64}}) {
            for (Placement p : Placement.values()) {
                b.add(Arguments.of(s[0], s[1], s[2], p));
            }
        }
        return b.build();
    }

    @ParameterizedTest(name = "{0}q/{1}kv × {2}, {3}")
    @MethodSource("cases")
    void everyKvHeadsNeedleIsInTheViewForThatHead(int queryHeads, int kvHeads, int headDim, Placement placement) {
        KvShape shape = new KvShape(1, queryHeads, kvHeads, headDim, DType.BF16);
        int d = headDim, group = queryHeads / kvHeads;
        Random rnd = new Random(31L * queryHeads + kvHeads + headDim);
        int[] needles = new int[kvHeads];
        float[][] look = new float[kvHeads][];
        for (int h = 0; h < kvHeads; h++) {
            needles[h] = 64 + rnd.nextInt(TOKENS - 1024); // clear of the sinks and of the 256-token window
            look[h] = unit(rnd, d);
        }
        // The stored keys are Gaussian × 1.5 (PerHeadViews.store), so a query of length √d / 1.5 gives the
        // other tokens logits of standard deviation 1; the needle lies ln(tokens) + 0.5 above their mean,
        // which gives it about as much attention as all of them together.
        float margin = (float) (Math.log(TOKENS) + 0.5);
        float qNorm = (float) Math.sqrt(d) / 1.5f;
        KvConfig config = TestEngines.config(TestEngines.deviceDirs(root, 4), "portable").blockTokens(16)
                .placement(placement).deviceCapacityBytes(64L << 20).dramBudgetBytes(256L << 20).build();
        try (KvEngine engine = KvEngine.open(config)) {
            PerHeadViews.Layer layer = PerHeadViews.store(engine, "needles", shape, TOKENS, 7, "mass-auto", (keys, l) -> {
                for (int h = 0; h < kvHeads; h++) {
                    for (int j = 0; j < d; j++) {
                        keys[(needles[h] * kvHeads + h) * d + j] += 1.5f * margin * look[h][j];
                    }
                }
            })[0];
            float[] query = new float[queryHeads * d];
            for (int q = 0; q < queryHeads; q++) {
                float[] dir = q % group == 0 ? look[q / group] : unit(rnd, d);
                for (int j = 0; j < d; j++) {
                    query[q * d + j] = dir[j] * qNorm;
                }
            }
            for (int h = 0; h < kvHeads; h++) { // the scenario is what it claims: each needle draws its head
                double w = weight(layer, query, h * group, needles[h]);
                assertTrue(w > 0.1 && w < 0.95, "needle of KV head " + h + " holds " + w + " of its query head's attention");
            }
            try (KvSequence seq = engine.openSequence("needles"); KvDecoder dec = seq.decoder(DecodeOptions.defaults());
                    KvView v = dec.prefetch(0, query).await()) {
                long entries = 0; // a row of a head-sharded view holds some KV heads: count what it holds
                for (int r = 0; r < v.tokenCount(); r++) {
                    entries += Long.bitCount(PerHeadViews.heldHeads(v, r));
                }
                long budget = (long) Math.ceil(TOKENS * DecodeOptions.defaults().sparsity());
                assertTrue(entries <= kvHeads * budget, "the view holds " + (double) entries / kvHeads
                        + " tokens' entries; the budget is " + budget);
                for (int h = 0; h < kvHeads; h++) {
                    boolean found = false;
                    for (int r = 0; r < v.tokenCount() && !found; r++) {
                        found = v.position(r) == needles[h] && (PerHeadViews.heldHeads(v, r) >>> h & 1) != 0;
                    }
                    assertTrue(found, "KV head " + h + "'s needle at " + needles[h] + " is not in the view for that head");
                }
                PerHeadViews.assertHeldHeadsBitExact(v, layer);
            }
        }
    }

    private static float[] unit(Random rnd, int d) {
        float[] u = new float[d];
        double n = 0;
        for (int j = 0; j < d; j++) {
            u[j] = (float) rnd.nextGaussian();
            n += u[j] * u[j];
        }
        for (int j = 0; j < d; j++) {
            u[j] /= (float) Math.sqrt(n);
        }
        return u;
    }

    /** Query head {@code q}'s exact softmax weight on {@code token}, from the stored keys. */
    private static double weight(PerHeadViews.Layer layer, float[] query, int q, int token) {
        KvShape shape = layer.shape();
        int d = shape.headDim(), kv = shape.kvHeads(), h = q / shape.groupSize(), tokens = layer.keys().length / (kv * d);
        double[] logits = new double[tokens];
        double max = Double.NEGATIVE_INFINITY;
        for (int t = 0; t < tokens; t++) {
            double s = 0;
            for (int j = 0; j < d; j++) {
                s += (double) query[q * d + j] * layer.keys()[(t * kv + h) * d + j];
            }
            logits[t] = s / Math.sqrt(d);
            max = Math.max(max, logits[t]);
        }
        double sum = 0;
        for (double l : logits) {
            sum += Math.exp(l - max);
        }
        return Math.exp(logits[token] - max) / sum;
    }
}
