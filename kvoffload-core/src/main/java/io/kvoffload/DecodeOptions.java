package io.kvoffload;

import io.kvoffload.internal.util.Checks;
import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.strategy.Strategies;

/**
 * How a {@link KvDecoder} selects and fetches each layer's KV during decoding (Swarm's online
 * phase). Immutable; build with {@link #builder()}.
 *
 * @param sparsity share of a layer's tokens the attention reads per step, sinks and window
 *     included: clusters are taken in medoid-score order until this many tokens are selected
 *     (the last cluster whole); in (0, 1], default 0.10 (the papers' baseline setting)
 * @param sinkTokens the first tokens of the sequence, always attended and kept in DRAM; default 4
 * @param localWindow the newest tokens, always attended and kept in DRAM; tokens leaving it are
 *     assigned to clusters (Eq. 9); default 256 (Swarm)
 * @param pipelineDepth fetches that may be in flight or held as views at once (layer l+1 is fetched
 *     while layer l computes: at least 2 for that); 1..16, default 2
 * @param cachePolicy which hot clusters stay in DRAM between steps
 * @param cacheBytes DRAM for hot clusters, shared equally by the layers; 0 disables the cache;
 *     {@value #AUTO} (the default) takes an eighth of the engine's DRAM budget
 * @param scheduling the bucket scheduler's policy, or one of its ablations (Swarm Fig. 14)
 * @param maintenance how tokens leaving the local window join clusters (Swarm Table 5); under
 *     {@link Selector#KVSWAP}, any value but {@link Maintenance#OFF} writes full groups that left
 *     the window to the SSDs (the rolling buffer's flush, every {@code blockTokens} tokens or so)
 * @param selector which strategy predicts and fetches a layer's KV: {@link Selector#SWARM} (the
 *     default) for clustered layers, {@link Selector#KVSWAP} for layers laid out in groups
 *     ({@link KvSequence#groupLayer}); a layer without the matching layout is attended in full
 *     from DRAM
 * @param budgetTokens KVSwap: tokens predicted per step (MG; M = ⌈budgetTokens / G⌉ groups), on
 *     top of sinks and window; {@value #AUTO} (the default) takes {@code ⌈sparsity × tokens⌉};
 *     else 1..2^24 (the paper's default is 400)
 * @param reuseSlots KVSwap: groups per layer kept in DRAM between steps (the reuse buffer, C); hits
 *     need no I/O; {@value #AUTO} (the default) takes M, the paper's setting; 0 disables it; else
 *     1..2^20, raised to M when smaller
 * @param reusePolicy KVSwap: which slot a missed group overwrites
 * @param strategy a plug-in {@link SelectionStrategy} that chooses each step's positions (a
 *     built-in baseline such as {@code Strategies.named("quest")}, or one of the engine's own); the
 *     pipeline fetches them from the layer's layout ({@link SelectionStrategy#layOut}). Null (the
 *     default): {@link #selector()} decides
 */
public record DecodeOptions(double sparsity, int sinkTokens, int localWindow, int pipelineDepth,
        CachePolicy cachePolicy, long cacheBytes, Scheduling scheduling, Maintenance maintenance, Selector selector,
        int budgetTokens, int reuseSlots, ReusePolicy reusePolicy, SelectionStrategy strategy) {

    /** The online selection strategy. */
    public enum Selector {
        /** Swarm (papers/000): medoid scores pick co-activated clusters. */
        SWARM,
        /** KVSwap (papers/003): a low-rank K predictor picks groups of G tokens; a reuse buffer skips repeats. */
        KVSWAP
    }

    /** KVSwap reuse-buffer replacement (papers/003 §3.4.3). */
    public enum ReusePolicy {
        /** The paper's FIFO: the slot filled longest ago goes first (skipping groups this step requested). */
        FIFO,
        /** The public artifact's: misses overwrite slots whose group this step did not request, in slot order. */
        REPLACE_UNREQUESTED
    }

    /** Hot-cluster cache policy in DRAM. */
    public enum CachePolicy {
        /** Swarm Eq. 6: a min-heap of clusters by cost-effectiveness score. */
        COST_EFFECTIVENESS,
        /** Least recently activated cluster is evicted first (the paper's comparison policy). */
        LRU
    }

    /** Bucket scheduling policy (Swarm §6.1, Fig. 14). */
    public enum Scheduling {
        /** De-duplicate, rarest replica first, least-loaded SSD. */
        SWARM,
        /** First replica of every entry, no de-duplication. */
        STATIC,
        /** De-duplicate, but always the first replica. */
        NO_BALANCE,
        /** Balance, but an entry shared by clusters is read once per cluster. */
        NO_DEDUP
    }

    /** Online cluster maintenance for tokens leaving the local window (Swarm Eq. 9, Table 5). */
    public enum Maintenance {
        /** Eq. 9: join every cluster whose medoid co-activated with the token often enough; else a new cluster. */
        SWARM,
        /** Comparison policy: join the smallest cluster. */
        MIN_SIZE,
        /** Comparison policy: join the cluster with the least distance. */
        MIN_DIFF,
        /** Tokens stay in the DRAM window (it grows); nothing is written to clusters (or, under KVSwap, to groups). */
        OFF
    }

    /** The strategy a decoder with these options runs: {@link #strategy()}, else the one {@link #selector()} names. */
    public SelectionStrategy resolvedStrategy() {
        return strategy != null ? strategy : Strategies.named(selector.name().toLowerCase(java.util.Locale.ROOT));
    }

    /** {@link #cacheBytes()} value that sizes the cache from the engine's DRAM budget. */
    public static final long AUTO = -1;

    public DecodeOptions {
        if (!(sparsity > 0 && sparsity <= 1)) {
            throw new IllegalArgumentException("sparsity = " + sparsity + " is out of range; allowed: (0, 1]");
        }
        Checks.inRange("sinkTokens", sinkTokens, 0, 1 << 20);
        Checks.inRange("localWindow", localWindow, 0, 1 << 24);
        Checks.inRange("pipelineDepth", pipelineDepth, 1, 16);
        Checks.notNull("cachePolicy", cachePolicy);
        Checks.inRange("cacheBytes", cacheBytes, AUTO, Long.MAX_VALUE);
        Checks.notNull("scheduling", scheduling);
        Checks.notNull("maintenance", maintenance);
        Checks.notNull("selector", selector);
        if (budgetTokens != AUTO) {
            Checks.inRange("budgetTokens", budgetTokens, 1, 1 << 24);
        }
        if (reuseSlots != AUTO) {
            Checks.inRange("reuseSlots", reuseSlots, 0, 1 << 20);
        }
        Checks.notNull("reusePolicy", reusePolicy);
    }

    /** The Swarm-only options (the KVSwap ones at their defaults). */
    public DecodeOptions(double sparsity, int sinkTokens, int localWindow, int pipelineDepth, CachePolicy cachePolicy,
            long cacheBytes, Scheduling scheduling, Maintenance maintenance) {
        this(sparsity, sinkTokens, localWindow, pipelineDepth, cachePolicy, cacheBytes, scheduling, maintenance,
                Selector.SWARM, (int) AUTO, (int) AUTO, ReusePolicy.FIFO, null);
    }

    /** The defaults: 10% sparsity, 4 sinks, a 256-token window, 2 in flight, an Eq. 6 cache of an eighth of the DRAM budget, Swarm scheduling and maintenance. */
    public static DecodeOptions defaults() {
        return builder().build();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A builder starting from these options. */
    public Builder toBuilder() {
        return new Builder().sparsity(sparsity).sinkTokens(sinkTokens).localWindow(localWindow)
                .pipelineDepth(pipelineDepth).cachePolicy(cachePolicy).cacheBytes(cacheBytes).scheduling(scheduling)
                .maintenance(maintenance).selector(selector).budgetTokens(budgetTokens).reuseSlots(reuseSlots)
                .reusePolicy(reusePolicy).strategy(strategy);
    }

    /** Builder for {@link DecodeOptions}; every setter validates when {@link #build()} runs. */
    public static final class Builder {
        private double sparsity = 0.10;
        private int sinkTokens = 4;
        private int localWindow = 256;
        private int pipelineDepth = 2;
        private CachePolicy cachePolicy = CachePolicy.COST_EFFECTIVENESS;
        private long cacheBytes = AUTO;
        private Scheduling scheduling = Scheduling.SWARM;
        private Maintenance maintenance = Maintenance.SWARM;
        private Selector selector = Selector.SWARM;
        private int budgetTokens = (int) AUTO;
        private int reuseSlots = (int) AUTO;
        private ReusePolicy reusePolicy = ReusePolicy.FIFO;
        private SelectionStrategy strategy;

        private Builder() {}

        /** A plug-in strategy chooses each step's positions ({@link DecodeOptions#strategy()}); null: {@link #selector} decides. */
        public Builder strategy(SelectionStrategy v) {
            strategy = v;
            return this;
        }

        /**
         * The strategy {@link Strategies#named called} {@code name}.
         *
         * @throws IllegalArgumentException if no strategy has that name
         */
        public Builder strategy(String name) {
            strategy = Strategies.named(name);
            return this;
        }

        public Builder sparsity(double v) {
            sparsity = v;
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

        public Builder cachePolicy(CachePolicy v) {
            cachePolicy = v;
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

        public Builder maintenance(Maintenance v) {
            maintenance = v;
            return this;
        }

        public Builder selector(Selector v) {
            selector = v;
            return this;
        }

        public Builder budgetTokens(int v) {
            budgetTokens = v;
            return this;
        }

        public Builder reuseSlots(int v) {
            reuseSlots = v;
            return this;
        }

        public Builder reusePolicy(ReusePolicy v) {
            reusePolicy = v;
            return this;
        }

        /**
         * KVSwap with the settings an offline tuning chose ({@link KvSwapTuning#load}): selector
         * {@link Selector#KVSWAP}, {@code budgetTokens} (MG), {@code reuseSlots} (C),
         * {@code reusePolicy}, and {@code localWindow} = the tuned rolling buffer
         * ({@code rollingGroups × G}). Setters called afterwards override them.
         */
        public Builder kvswap(KvSwapTuning tuning) {
            Checks.notNull("tuning", tuning);
            selector = Selector.KVSWAP;
            budgetTokens = tuning.budgetTokens();
            reuseSlots = tuning.reuseSlots();
            reusePolicy = tuning.reusePolicy();
            localWindow = tuning.localWindow();
            return this;
        }

        public DecodeOptions build() {
            return new DecodeOptions(sparsity, sinkTokens, localWindow, pipelineDepth, cachePolicy, cacheBytes,
                    scheduling, maintenance, selector, budgetTokens, reuseSlots, reusePolicy, strategy);
        }
    }
}
