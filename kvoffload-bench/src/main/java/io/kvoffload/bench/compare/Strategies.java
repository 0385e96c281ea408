package io.kvoffload.bench.compare;

import io.kvoffload.internal.baseline.BaselineSelector;
import io.kvoffload.internal.baseline.ClusterKVSelector;
import io.kvoffload.internal.baseline.InfLLMSelector;
import io.kvoffload.internal.baseline.OracleSelector;
import io.kvoffload.internal.baseline.PQCacheSelector;
import io.kvoffload.internal.baseline.QuestSelector;
import io.kvoffload.internal.baseline.SparFSelector;
import io.kvoffload.internal.baseline.SparQSelector;
import io.kvoffload.internal.swarm.SwarmSelector;
import io.kvoffload.internal.swarm.ClusteringConfig;
import io.kvoffload.strategy.LayerKv;
import java.lang.foreign.Arena;
import java.util.List;

/**
 * Builds every strategy of the comparison by name with the parameters of its reference (see
 * docs/baselines.md), so the quality harness and the JMH benchmark measure the same selectors.
 */
public final class Strategies {
    /** Every strategy, in the order reports list them. */
    public static final List<String> ALL = List.of("oracle", "swarm", "quest", "infllm", "pqcache", "clusterkv", "sparq",
            "sparf");

    private Strategies() {}

    /**
     * What the strategies share.
     *
     * @param queryHeads query heads of the model
     * @param localWindow newest tokens kept by the strategies that keep a local window (InfLLM,
     *     PQCache, SparQ/SparF, Swarm)
     * @param seed seed of the k-means of PQCache and ClusterKV
     * @param sparqRank query dimensions SparQ/SparF keep per head; 0 for their default {@code headDim / 8}
     * @param swarmSinks attention sinks Swarm pins (the engine keeps them in DRAM)
     * @param swarmProfile queries Swarm's offline phase profiles (needed only for "swarm")
     * @param swarmSparsity share of the tokens one profiled query activates
     * @param swarmConfig Algorithm 1's settings
     */
    public record Params(int queryHeads, int localWindow, long seed, int sparqRank, int swarmSinks, List<float[]> swarmProfile,
            double swarmSparsity, ClusteringConfig swarmConfig) {}

    /**
     * Builds strategy {@code name} on {@code kv}.
     *
     * @param arena owns Swarm's medoid index; the selector is usable until it closes
     * @throws IllegalArgumentException for an unknown name
     */
    public static BaselineSelector build(String name, LayerKv kv, Params p, Arena arena) {
        return switch (name) {
            case "oracle" -> new OracleSelector(kv, p.queryHeads());
            case "quest" -> new QuestSelector(kv, p.queryHeads());
            case "infllm" -> new InfLLMSelector(kv, p.queryHeads(), p.localWindow());
            case "pqcache" -> new PQCacheSelector(kv, p.queryHeads(), p.localWindow(), p.seed());
            case "clusterkv" -> new ClusterKVSelector(kv, p.queryHeads(), p.seed());
            case "sparq" -> p.sparqRank() > 0 ? new SparQSelector(kv, p.queryHeads(), p.sparqRank(), p.localWindow())
                    : new SparQSelector(kv, p.queryHeads(), p.localWindow());
            case "sparf" -> p.sparqRank() > 0
                    ? new SparFSelector(kv, p.queryHeads(), p.sparqRank(), p.localWindow(), SparFSelector.DEFAULT_GROUP_SIZE)
                    : new SparFSelector(kv, p.queryHeads(), p.localWindow());
            case "swarm" -> SwarmSelector.build(kv, p.queryHeads(), p.swarmProfile(), p.swarmSparsity(), p.swarmConfig(),
                    p.swarmSinks(), p.localWindow(), arena);
            default -> throw new IllegalArgumentException("strategy = " + name + " is unknown; allowed: " + String.join(", ", ALL));
        };
    }
}
