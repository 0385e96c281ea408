package io.kvoffload.strategy;

import io.kvoffload.KvShape;

/**
 * The example of docs/architecture.md, "Writing a strategy": the newest {@code recent} tokens plus
 * the blocks of 16 tokens whose mean key scores highest against the query (summed over the query
 * heads of each KV head). Its index is one mean key per block and KV head.
 */
public final class RecentAndTopBlocks implements SelectionStrategy {
    private final int recent;

    public RecentAndTopBlocks(int recent) {
        this.recent = recent;
    }

    @Override
    public String name() {
        return "recent-top-blocks";
    }

    @Override
    public LayerSelector openLayer(LayerContext ctx) {
        KvShape shape = ctx.shape();
        LayerKv kv = ctx.keys();
        int tokens = ctx.tokens(), d = shape.headDim(), heads = shape.kvHeads(), page = pageTokens();
        int blocks = (tokens + page - 1) / page;
        float[] means = new float[blocks * heads * d]; // [block][kvHead][dim]
        float[] key = new float[page * d];
        for (int h = 0; h < heads; h++) {
            for (int b = 0; b < blocks; b++) {
                int from = b * page, n = Math.min(page, tokens - from);
                kv.keys(h, from, n, key, 0);
                for (int t = 0; t < n; t++) {
                    for (int i = 0; i < d; i++) {
                        means[(b * heads + h) * d + i] += key[t * d + i] / n;
                    }
                }
            }
        }
        int groupSize = shape.queryHeads() / heads;
        float[] scores = new float[blocks];
        return new LayerSelector() {
            @Override
            public void select(float[] query, FetchPlan plan) {
                int newest = Math.max(0, plan.tokens() - recent);
                for (int t = newest; t < plan.tokens(); t++) {
                    plan.add(t);
                }
                for (int b = 0; b < blocks; b++) {
                    float s = 0;
                    for (int q = 0; q < shape.queryHeads(); q++) {
                        int base = (b * heads + q / groupSize) * d;
                        for (int i = 0; i < d; i++) {
                            s += query[q * d + i] * means[base + i];
                        }
                    }
                    scores[b] = s;
                }
                // Highest-scoring blocks until the budget is spent (a simple selection; a real one would use a heap).
                for (int left = plan.budget() - (plan.tokens() - newest); left > 0; left -= page) {
                    int best = -1;
                    for (int b = 0; b < blocks; b++) {
                        if (scores[b] != Float.NEGATIVE_INFINITY && (best < 0 || scores[b] > scores[best])) {
                            best = b;
                        }
                    }
                    if (best < 0) {
                        break;
                    }
                    scores[best] = Float.NEGATIVE_INFINITY;
                    for (int t = best * page; t < Math.min(tokens, best * page + page); t++) {
                        plan.add(t);
                    }
                }
            }

            @Override
            public long memoryBytes() {
                return means.length * 4L;
            }
        };
    }
}
