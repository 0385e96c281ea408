package io.kvoffload.internal.swarm;

import io.kvoffload.KvShape;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.internal.util.Softmax;
import io.kvoffload.strategy.FetchPlan;
import io.kvoffload.strategy.LayerKv;
import io.kvoffload.strategy.LayerSelector;

/**
 * A layer's choice between ways to spend the same sweep, made on the query of the step that opens it:
 * more query rows over the default's blocks, or, with half the rows ({@link BlockSize#partRows}), the
 * same blocks scored in more parts or finer blocks. Which ranks closer to the oracle depends on the
 * layer's attention: rows where a KV head's query heads attend apart (retrieval heads), parts or finer
 * blocks where what a head attends comes in runs shorter than a block. Keys alone do not tell, a query
 * does: each selector chooses for the opening query at a 10% budget, and the exact attention over the
 * layer's keys says how much of each query head's mass each choice holds. The others' indexes are
 * twice the default's (a summary per part or finer block), so one must hold at least {@link #MIN_GAIN}
 * more of the mass to be kept.
 *
 * <p>On issue #16's cells it changed 18 of 46 at 128K tokens and 8 of 66 at 16K–64K, each for the better
 * in recall and output error (docs/benchmarks.md, "Rows, parts or finer blocks, chosen on the opening
 * query"). It costs one exact attention over the layer and up to two more index builds when the layer
 * opens; per step, the index it keeps.
 */
final class SweepCalibration {
    private SweepCalibration() {}

    /** Attention mass (a mean over query heads, 0..1) another candidate must add to be worth its larger index. */
    static final double MIN_GAIN = 0.01;

    /** Tokens whose keys one pass reads (per KV head), so that a long layer is never held whole as floats. */
    private static final int RANGE = 4096;

    /**
     * The candidate that should serve the layer: each plans a step for {@code query} at a 10% budget
     * ({@code headGroups} as the layout stores them) and the one whose tokens hold the most of the exact
     * attention mass, averaged over the query heads, is chosen; the first (the default's index) unless
     * another holds at least {@link #MIN_GAIN} more, since every other has the larger index.
     */
    static int choose(LayerKv kv, int tokens, KvShape shape, int headGroups, int layer, float[] query,
            java.util.List<LayerSelector> candidates) {
        Checks.queryRows(query, shape.queryHeads(), shape.headDim());
        FetchPlan[] plans = new FetchPlan[candidates.size()];
        for (int i = 0; i < plans.length; i++) {
            plans[i] = plan(shape, headGroups, layer, tokens);
            candidates.get(i).select(query, plans[i]);
        }
        double[] mass = masses(kv, tokens, shape, query, plans);
        int best = 0;
        for (int i = 1; i < plans.length; i++) {
            if (mass[i] >= mass[0] + MIN_GAIN && mass[i] > mass[best]) {
                best = i;
            }
        }
        return best;
    }

    private static FetchPlan plan(KvShape shape, int headGroups, int layer, int tokens) {
        FetchPlan p = new FetchPlan();
        p.heads(shape.kvHeads(), headGroups);
        p.begin(layer, tokens, Math.max(1, tokens / 10));
        return p;
    }

    /**
     * The exact attention mass each plan's positions hold for {@code query} over tokens {@code [0,
     * tokens)} of {@code kv}, the mean over query heads of each head's softmax weights on the positions
     * its KV head is planned for (logits scaled by {@code 1/√headDim}, as attention scales them). One pass
     * over the keys, a range at a time, with each head's softmax kept online (its maximum and sum
     * rescaled as the maximum rises).
     */
    static double[] masses(LayerKv kv, int tokens, KvShape shape, float[] query, FetchPlan... plans) {
        int d = shape.headDim(), kvHeads = shape.kvHeads(), group = shape.queryHeads() / kvHeads;
        float scale = (float) (1.0 / Math.sqrt(d));
        long[][] in = new long[plans.length][(tokens + 63) >>> 6];
        float[] keys = new float[RANGE * d];
        float[][] logits = new float[group][RANGE];
        double[] total = new double[plans.length];
        double[] max = new double[group], sum = new double[group];
        double[][] held = new double[plans.length][group];
        for (int h = 0; h < kvHeads; h++) {
            for (int p = 0; p < plans.length; p++) {
                java.util.Arrays.fill(in[p], 0L);
                FetchPlan plan = plans[p];
                for (int i = 0, n = plan.size(); i < n; i++) {
                    long m = plan.kvHeadMask(i);
                    int t = plan.position(i);
                    if (t < tokens && (m == FetchPlan.ALL_HEADS || (m >>> h & 1L) != 0)) {
                        in[p][t >>> 6] |= 1L << t;
                    }
                }
                java.util.Arrays.fill(held[p], 0);
            }
            java.util.Arrays.fill(max, Double.NEGATIVE_INFINITY);
            java.util.Arrays.fill(sum, 0);
            for (int from = 0; from < tokens; from += RANGE) {
                int n = Math.min(RANGE, tokens - from);
                kv.keys(h, from, n, keys, 0);
                int g = 0;
                for (; g + 3 < group; g += 4) {
                    Softmax.logits4(query, (h * group + g) * d, d, keys, 0, n, scale, logits, g, 0);
                }
                for (; g < group; g++) {
                    for (int t = 0; t < n; t++) {
                        logits[g][t] = scale * Softmax.dot(query, (h * group + g) * d, keys, t * d, d);
                    }
                }
                for (g = 0; g < group; g++) {
                    float[] l = logits[g];
                    double top = max[g];
                    for (int t = 0; t < n; t++) {
                        top = Math.max(top, l[t]);
                    }
                    if (top > max[g]) { // rescale what was summed against the lower maximum
                        double r = Math.exp(max[g] - top);
                        sum[g] *= r;
                        for (double[] hp : held) {
                            hp[g] *= r;
                        }
                        max[g] = top;
                    }
                    for (int t = 0; t < n; t++) {
                        double e = Math.exp(l[t] - top);
                        sum[g] += e;
                        int at = from + t;
                        for (int p = 0; p < plans.length; p++) {
                            if ((in[p][at >>> 6] >>> at & 1L) != 0) {
                                held[p][g] += e;
                            }
                        }
                    }
                }
            }
            for (int p = 0; p < plans.length; p++) {
                for (int g = 0; g < group; g++) {
                    total[p] += held[p][g] / sum[g];
                }
            }
        }
        for (int p = 0; p < plans.length; p++) {
            total[p] /= shape.queryHeads();
        }
        return total;
    }
}
