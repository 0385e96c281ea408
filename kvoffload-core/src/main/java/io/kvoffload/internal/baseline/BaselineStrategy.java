package io.kvoffload.internal.baseline;

import io.kvoffload.strategy.FetchPlan;
import io.kvoffload.strategy.LayerContext;
import io.kvoffload.strategy.LayerSelector;
import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.strategy.LayerKv;
import java.util.List;

/**
 * A baseline selector of the comparison (Quest, InfLLM, PQCache, ClusterKV, SparQ, SparF, the exact
 * oracle) as a {@link SelectionStrategy}: its index is built from the layer's stored keys when a
 * decoder opens the layer, and each step's token set is fetched by the pipeline from the default
 * positional layout, on the same scheduler, I/O path and checksums as every other strategy.
 * Parameters are the references' defaults (docs/baselines.md).
 */
public final class BaselineStrategy implements SelectionStrategy {
    /** Builds one layer's selector. */
    @FunctionalInterface
    interface Factory {
        BaselineSelector build(LayerKv kv, int queryHeads, int localWindow, int sinkTokens);
    }

    /** Seed of PQCache's and ClusterKV's k-means (fixed: a layer's index is the same in every decoder). */
    private static final long SEED = 42;

    private final String name;
    private final Factory factory;

    private BaselineStrategy(String name, Factory factory) {
        this.name = name;
        this.factory = factory;
    }

    /** Every baseline, in the order reports list them. */
    public static List<SelectionStrategy> all() {
        return List.of(
                new BaselineStrategy("oracle", (kv, qh, w, s) -> new OracleSelector(kv, qh)),
                new BaselineStrategy("quest", (kv, qh, w, s) -> new QuestSelector(kv, qh)),
                new BaselineStrategy("infllm", (kv, qh, w, s) -> new InfLLMSelector(kv, qh, w)),
                new BaselineStrategy("pqcache", (kv, qh, w, s) -> new PQCacheSelector(kv, qh, w, SEED)),
                new BaselineStrategy("clusterkv", (kv, qh, w, s) -> new ClusterKVSelector(kv, qh, SEED)),
                new BaselineStrategy("sparq", (kv, qh, w, s) -> new SparQSelector(kv, qh, w)),
                new BaselineStrategy("sparf-memory", (kv, qh, w, s) -> new SparFSelector(kv, qh, w)));
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public LayerSelector openLayer(LayerContext context) {
        BaselineSelector selector = factory.build(context.keys(), context.shape().queryHeads(), context.localWindow(),
                context.sinkTokens());
        return new Layer(selector);
    }

    @Override
    public String toString() {
        return "BaselineStrategy{" + name + "}";
    }

    /** Hands the selector's token set to the plan; its output buffer grows with the largest budget seen. */
    private static final class Layer implements LayerSelector {
        private final BaselineSelector selector;
        private int[] out = new int[0];

        Layer(BaselineSelector selector) {
            this.selector = selector;
        }

        @Override
        public void select(float[] query, FetchPlan plan) {
            int budget = Math.min(plan.budget(), selector.tokens());
            if (budget <= 0) {
                return;
            }
            int most = selector.maxSelected(budget);
            if (out.length < most) {
                out = new int[most];
            }
            int n = selector.select(query, budget, out);
            plan.addAll(out, n);
        }

        @Override
        public long memoryBytes() {
            return selector.indexBytes();
        }
    }
}
