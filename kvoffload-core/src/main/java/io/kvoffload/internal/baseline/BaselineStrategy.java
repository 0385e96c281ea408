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
        AbstractSelector build(LayerKv kv, int queryHeads, int localWindow, int sinkTokens);
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
        AbstractSelector selector = factory.build(context.keys(), context.shape().queryHeads(), context.localWindow(),
                context.sinkTokens());
        return new Layer(selector, context.sinkTokens(), context.localWindow());
    }

    @Override
    public String toString() {
        return "BaselineStrategy{" + name + "}";
    }

    /**
     * Hands the selector's choice among the tokens the pipeline does not already hold (between the
     * sinks and the window) to the plan: the plan's budget in fresh rows, as every strategy spends it.
     * The output buffer grows with the largest budget seen.
     */
    private static final class Layer implements LayerSelector {
        private final AbstractSelector selector;
        private final int sinks;
        private final int window;
        private int[] out = new int[0];

        Layer(AbstractSelector selector, int sinks, int window) {
            this.selector = selector;
            this.sinks = sinks;
            this.window = window;
        }

        @Override
        public void select(float[] query, FetchPlan plan) {
            int tokens = selector.tokens();
            int from = Math.min(sinks, tokens);
            // The window starts `window` tokens before the layer's end; tokens past the selector's are
            // in it (appended after the layer was opened).
            int to = (int) Math.max(from, Math.min(tokens, (long) plan.tokens() - window));
            int budget = Math.min(plan.budget(), to - from);
            if (budget <= 0) {
                return;
            }
            if (out.length < budget) {
                out = new int[budget];
            }
            int n = selector.selectBetween(query, budget, from, to, out);
            plan.addAll(out, n);
        }

        @Override
        public long memoryBytes() {
            return selector.indexBytes();
        }
    }
}
