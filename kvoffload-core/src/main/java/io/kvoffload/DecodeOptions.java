package io.kvoffload;

import io.kvoffload.internal.util.Checks;
import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.strategy.Strategies;

/**
 * How a {@link KvDecoder} selects and fetches each layer's KV: what every strategy shares (the token
 * budget, sinks, window, pipeline depth, DRAM cache, the scheduler's policy) and the strategy,
 * which carries its own options ({@link io.kvoffload.strategy.swarm.Swarm},
 * {@link io.kvoffload.strategy.kvswap.KvSwap}, a built-in baseline or a plug-in). Immutable; build
 * with {@link #builder()}.
 *
 * @param sparsity share of a layer's tokens the attention reads per step, sinks and window
 *     included (the strategy fills what they leave); in (0, 1], default 0.10 (the papers' baseline
 *     setting)
 * @param budgetTokens tokens the strategy selects per step on top of sinks and window, when set:
 *     1..2^24 (KVSwap's MG); {@value #AUTO} (the default) takes {@code ⌈sparsity × tokens⌉} less the
 *     sinks and window, for every strategy alike (KVSwap rounds it up to whole groups of G, at least
 *     one), so strategies compared at one sparsity read the same number of rows
 * @param sinkTokens the first tokens of the sequence, always attended and kept in DRAM; default 4
 * @param localWindow the newest tokens, always attended and kept in DRAM; default 256
 * @param pipelineDepth fetches that may be in flight or held as views at once (layer l+1 is fetched
 *     while layer l computes: at least 2 for that); 1..16, default 2
 * @param cacheBytes DRAM for a strategy's hot-entry cache (Swarm's hot clusters), shared equally by
 *     the layers; 0 disables it; {@value #AUTO} (the default) takes an eighth of the engine's DRAM
 *     budget
 * @param scheduling the bucket scheduler's policy, or one of its ablations ([Swarm] Fig. 14)
 * @param strategy what chooses each step's entries; default {@link Strategies#defaultStrategy()}
 */
public record DecodeOptions(double sparsity, int budgetTokens, int sinkTokens, int localWindow, int pipelineDepth,
        long cacheBytes, Scheduling scheduling, SelectionStrategy strategy) {

    /** Bucket scheduling policy ([Swarm] §6.1, Fig. 14). */
    public enum Scheduling {
        /** De-duplicate, rarest replica first, least-loaded SSD (Eq. 8). */
        BALANCED,
        /** First replica of every entry, no de-duplication. */
        STATIC,
        /** De-duplicate, but always the first replica. */
        NO_BALANCE,
        /** Balance, but an entry shared by clusters is read once per cluster. */
        NO_DEDUP
    }

    /** {@link #cacheBytes()} and {@link #budgetTokens()} value that sizes them automatically. */
    public static final int AUTO = -1;

    public DecodeOptions {
        if (!(sparsity > 0 && sparsity <= 1)) {
            throw new IllegalArgumentException("sparsity = " + sparsity + " is out of range; allowed: (0, 1]");
        }
        if (budgetTokens != AUTO) {
            Checks.inRange("budgetTokens", budgetTokens, 1, 1 << 24);
        }
        Checks.inRange("sinkTokens", sinkTokens, 0, 1 << 20);
        Checks.inRange("localWindow", localWindow, 0, 1 << 24);
        Checks.inRange("pipelineDepth", pipelineDepth, 1, 16);
        Checks.inRange("cacheBytes", cacheBytes, AUTO, Long.MAX_VALUE);
        Checks.notNull("scheduling", scheduling);
        Checks.notNull("strategy", strategy);
    }

    /** The defaults: 10% sparsity, 4 sinks, a 256-token window, 2 in flight, a cache of an eighth of the DRAM budget, {@link Strategies#defaultStrategy()}. */
    public static DecodeOptions defaults() {
        return builder().build();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A builder starting from these options. */
    public Builder toBuilder() {
        return new Builder().sparsity(sparsity).budgetTokens(budgetTokens).sinkTokens(sinkTokens)
                .localWindow(localWindow).pipelineDepth(pipelineDepth).cacheBytes(cacheBytes).scheduling(scheduling)
                .strategy(strategy);
    }

    /** Builder for {@link DecodeOptions}; values are validated when {@link #build()} runs. */
    public static final class Builder {
        private double sparsity = 0.10;
        private int budgetTokens = AUTO;
        private int sinkTokens = 4;
        private int localWindow = 256;
        private int pipelineDepth = 2;
        private long cacheBytes = AUTO;
        private Scheduling scheduling = Scheduling.BALANCED;
        private SelectionStrategy strategy = Strategies.defaultStrategy();

        private Builder() {}

        public Builder sparsity(double v) {
            sparsity = v;
            return this;
        }

        public Builder budgetTokens(int v) {
            budgetTokens = v;
            return this;
        }

        public Builder sinkTokens(int v) {
            sinkTokens = v;
            return this;
        }

        public Builder localWindow(int v) {
            localWindow = v;
            return this;
        }

        public Builder pipelineDepth(int v) {
            pipelineDepth = v;
            return this;
        }

        public Builder cacheBytes(long v) {
            cacheBytes = v;
            return this;
        }

        public Builder scheduling(Scheduling v) {
            scheduling = v;
            return this;
        }

        /** The strategy, with its own options (e.g. {@code Swarm.builder()...build()}, {@code KvSwap.defaults()}). */
        public Builder strategy(SelectionStrategy v) {
            strategy = v;
            return this;
        }

        /**
         * The strategy {@link Strategies#named called} {@code name}, with its default options.
         *
         * @throws IllegalArgumentException if no strategy has that name
         */
        public Builder strategy(String name) {
            strategy = Strategies.named(name);
            return this;
        }

        public DecodeOptions build() {
            return new DecodeOptions(sparsity, budgetTokens, sinkTokens, localWindow, pipelineDepth, cacheBytes,
                    scheduling, strategy);
        }
    }
}
