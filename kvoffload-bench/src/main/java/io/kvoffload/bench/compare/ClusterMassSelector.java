package io.kvoffload.bench.compare;

import io.kvoffload.internal.swarm.Clustering;
import io.kvoffload.internal.util.Softmax;
import io.kvoffload.strategy.FetchPlan;
import io.kvoffload.strategy.LayerKv;
import io.kvoffload.strategy.LayerSelector;

/**
 * {@code select-eval}'s {@code swarm-mass} and {@code swarm-qmass} (issue #16, candidate "rank Swarm's
 * clusters with the per-head mass estimate"): Swarm's offline clustering (co-activation clusters, the
 * rest in positional blocks) as the unit, ranked the way {@code mass-mix} ranks blocks — per cluster,
 * KV head and dimension the fused rows {@code (max + mean)/2} and {@code (min + mean)/2}, a head's
 * cluster logit {@code Σ_j q_j × (q_j ≥ 0 ? hi : lo) + ln(size)}, a softmax per head over all clusters
 * and the shares summed — then whole clusters in score order until the budget. An experiment in float32
 * (no int8, no pruning): it measures quality, not speed.
 */
final class ClusterMassSelector implements LayerSelector {
    private final Clustering clustering;
    private final int clusters, kvHeads, headDim, queryHeads, group;
    private final boolean perQueryHead;
    private final float[][] hi, lo; // [head][j * clusters + c]
    private final float[] logSize;
    private final float[] logits, scores;
    private final int sinkEnd, windowFrom, tokens;
    private final int[] seen;
    private int epoch;
    private final Integer[] order;

    ClusterMassSelector(Clustering clustering, LayerKv kv, int queryHeads, int sinks, int window, boolean perQueryHead) {
        this.clustering = clustering;
        this.clusters = clustering.clusterCount();
        this.kvHeads = kv.kvHeads();
        this.headDim = kv.headDim();
        this.queryHeads = queryHeads;
        this.group = queryHeads / kvHeads;
        this.perQueryHead = perQueryHead;
        this.tokens = clustering.entries();
        this.sinkEnd = Math.min(sinks, tokens);
        this.windowFrom = Math.max(sinkEnd, tokens - Math.min(window, tokens));
        int d = headDim;
        hi = new float[kvHeads][d * clusters];
        lo = new float[kvHeads][d * clusters];
        logSize = new float[clusters];
        float[] key = new float[d];
        float[] mx = new float[d], mn = new float[d], sum = new float[d];
        for (int h = 0; h < kvHeads; h++) {
            for (int c = 0; c < clusters; c++) {
                java.util.Arrays.fill(mx, Float.NEGATIVE_INFINITY);
                java.util.Arrays.fill(mn, Float.POSITIVE_INFINITY);
                java.util.Arrays.fill(sum, 0f);
                int n = clustering.size(c);
                for (int i = 0; i < n; i++) {
                    kv.keys(h, clustering.member(c, i), 1, key, 0);
                    for (int j = 0; j < d; j++) {
                        mx[j] = Math.max(mx[j], key[j]);
                        mn[j] = Math.min(mn[j], key[j]);
                        sum[j] += key[j];
                    }
                }
                for (int j = 0; j < d; j++) {
                    float mu = sum[j] / n;
                    hi[h][j * clusters + c] = 0.5f * (mx[j] + mu);
                    lo[h][j * clusters + c] = 0.5f * (mn[j] + mu);
                }
                if (h == 0) {
                    logSize[c] = (float) Math.log(n);
                }
            }
        }
        logits = new float[clusters];
        scores = new float[clusters];
        seen = new int[tokens];
        order = new Integer[clusters];
    }

    @Override
    public void select(float[] query, FetchPlan plan) {
        int d = headDim;
        float scale = (float) (1 / Math.sqrt(d));
        java.util.Arrays.fill(scores, 0f);
        float[] q = new float[d];
        int rows = perQueryHead ? queryHeads : kvHeads;
        for (int r = 0; r < rows; r++) {
            int h = perQueryHead ? r / group : r;
            java.util.Arrays.fill(q, 0f);
            if (perQueryHead) {
                for (int j = 0; j < d; j++) {
                    q[j] = query[r * d + j] * scale;
                }
            } else {
                for (int g = 0; g < group; g++) {
                    for (int j = 0; j < d; j++) {
                        q[j] += query[(h * group + g) * d + j] * scale / group;
                    }
                }
            }
            System.arraycopy(logSize, 0, logits, 0, clusters);
            for (int j = 0; j < d; j++) {
                float[] row = q[j] >= 0 ? hi[h] : lo[h];
                float c = q[j];
                int o = j * clusters;
                for (int k = 0; k < clusters; k++) {
                    logits[k] += c * row[o + k];
                }
            }
            float norm = Softmax.exponentiate(logits, 0, clusters);
            for (int k = 0; k < clusters; k++) {
                scores[k] += logits[k] * norm;
            }
        }
        if (++epoch == Integer.MAX_VALUE) {
            java.util.Arrays.fill(seen, 0);
            epoch = 1;
        }
        // The pipeline attends sinks and window; plan.budget() is what is left of the total.
        for (int t = 0; t < sinkEnd; t++) {
            seen[t] = epoch;
        }
        for (int t = windowFrom; t < tokens; t++) {
            seen[t] = epoch;
        }
        for (int k = 0; k < clusters; k++) {
            order[k] = k;
        }
        java.util.Arrays.sort(order, (a, b) -> Float.compare(scores[b], scores[a]));
        int added = 0, budget = plan.budget();
        for (int i = 0; i < clusters && added < budget; i++) {
            int c = order[i];
            int n = clustering.size(c), fresh = 0;
            for (int m = 0; m < n; m++) {
                fresh += seen[clustering.member(c, m)] != epoch ? 1 : 0;
            }
            if (fresh == 0 || added + fresh > budget) {
                continue; // never more rows than the budget: a cluster that does not fit is skipped
            }
            for (int m = 0; m < n; m++) {
                int t = clustering.member(c, m);
                if (seen[t] != epoch) {
                    seen[t] = epoch;
                    plan.add(t);
                    added++;
                }
            }
        }
    }
}
