package io.kvoffload.bench.compare;

import java.util.List;

/**
 * The strategies of the through-I/O comparison ({@code kvo bench compare}): what each one selects
 * with and which stored layout its reads go through. Adding a strategy is one entry here.
 */
public final class IoStrategies {
    private IoStrategies() {}

    /** How a strategy's layer is laid out on the SSDs. */
    public enum Layout {
        /**
         * Consecutive tokens in small clusters (16 by default), one copy, Eq. 7 round robin: a
         * token-set selector's positions are read individually, each entry CRC-checked, and
         * adjacent ones merge into one read.
         */
        POSITIONAL,
        /** Swarm's offline phase: Algorithm 1 with replication, Eq. 7 placement. */
        SWARM,
        /** Fig. 12 ablation: expansion by distance to the medoid only. */
        MEDOID_ONLY,
        /** Fig. 12 ablation: every entry in one cluster at most. */
        NO_REPLICA,
        /** Swarm's clusters, every cluster starting on SSD 0 (placement without Eq. 7's pointer). */
        NO_BALANCE,
        /** KVSwap: groups of G tokens stored [K of G | V of G], round robin ({@code KvSwap.groupLayer}). */
        KVSWAP_GROUPS,
        /**
         * The strategy's own offline phase ({@code SelectionStrategy.layOut}), one sequence per such
         * strategy: SparF's page groups plus its dimension-major copy of K, the block-mass strategies'
         * pages of their own size.
         */
        OWN
    }

    /**
     * One strategy.
     *
     * @param name the name on the command line and in the reports
     * @param layout the layout its reads go through
     * @param selector for {@link Layout#POSITIONAL}: the token selector ({@link Strategies} name);
     *     null where the decoder selects (the medoid index over cluster layouts, KVSwap's predictor
     *     over group layouts)
     * @param description one line for the summary
     */
    public record Strategy(String name, Layout layout, String selector, String description) {
        /** Whether the decoder selects (by medoid score) rather than a token selector. */
        public boolean decoderSelects() {
            return selector == null;
        }

        /** The stored sequence its reads go to: one per layout, one per strategy with its {@link Layout#OWN} layout. */
        public String sequenceId() {
            return layout == Layout.OWN ? "own-" + name : layout.name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    /** Every strategy, in report order. */
    public static final List<Strategy> ALL = List.of(
            new Strategy("oracle", Layout.POSITIONAL, "oracle",
                    "No-Cluster oracle: exact top-k by full scores, entries read individually"),
            new Strategy("infllm", Layout.POSITIONAL, "infllm", "InfLLM: 128-token blocks by representative keys"),
            new Strategy("quest", Layout.POSITIONAL, "quest", "Quest: 16-token pages by key min/max bounds"),
            new Strategy("pqcache", Layout.POSITIONAL, "pqcache", "PQCache: product-quantised keys, top tokens"),
            new Strategy("clusterkv", Layout.POSITIONAL, "clusterkv", "ClusterKV: k-means clusters by q·centroid"),
            new Strategy("kvswap", Layout.KVSWAP_GROUPS, null,
                    "KVSwap: low-rank K cache predicts the top groups of G=4 tokens, group-major layout, reuse buffer"),
            new Strategy("sparq", Layout.POSITIONAL, "sparq", "SparQ: top-r query dimensions approximate scores"),
            new Strategy("sparf-memory", Layout.POSITIONAL, "sparf-memory",
                    "SparF over a whole float32 copy of K in DRAM (top-k tokens filtered inside page groups)"),
            new Strategy("sparf", Layout.OWN, "sparf", "InstInfer's SparF from flash: top-r dimension slices of a"
                    + " dimension-major K copy read first, then the best 16-token page groups whole"),
            new Strategy("sparf-qh", Layout.OWN, "sparf-qh", "SparF from flash, top-r dimensions per query head"
                    + " (Algorithm 1 as written; under GQA a KV head's slices are its query heads' union)"),
            new Strategy("swarm", Layout.SWARM, null, "Swarm: co-activation clusters, medoid index, replicas, Eq. 7"),
            new Strategy("mass-auto", Layout.OWN, "mass-auto", "The library's default: cmass-mix, or"
                    + " head-cmass-mix where the layout stores KV-head groups apart (--placement head-sharded);"
                    + " blocks and pages sized per layer (the finest that fill a read, at most 8,192 a layer)"),
            new Strategy("mass-auto-cal", Layout.OWN, "mass-auto-cal", "mass-auto, each layer choosing on its"
                    + " opening query among more query rows, blocks scored in parts and finer blocks (the one whose"
                    + " tokens hold the most of that query's exact attention)"),
            new Strategy("mass-auto-16", Layout.POSITIONAL, "mass-auto-16", "mass-auto with 16-token blocks and pages"
                    + " at every length (the default before blocks followed the layer's length)"),
            new Strategy("mass-auto-8", Layout.OWN, "mass-auto-8", "mass-auto over 8-token blocks and pages:"
                    + " tighter bounds and a higher ceiling at twice the index and the sweep"),
            new Strategy("cmass-mix", Layout.POSITIONAL, "cmass-mix", "mass-mix with each KV head's query heads"
                    + " clustered into half as many softmax rows (Ward), one token set for all heads"),
            new Strategy("mass-mix", Layout.POSITIONAL, "mass-mix", "16-token blocks ranked by per-head attention"
                    + " shares of int8 min/max/mean key summaries, one token set for all heads"),
            new Strategy("head-qmass-mix", Layout.POSITIONAL, "head-qmass-mix", "One token set per stored head group:"
                    + " (group, block) pairs ranked by each query head's own estimated shares, pooled"),
            new Strategy("swarm-mass", Layout.SWARM, "swarm-mass", "Swarm's clusters (its offline phase) ranked by"
                    + " mass-mix's per-head estimate instead of medoid scores"),
            new Strategy("swarm-qmass", Layout.SWARM, "swarm-qmass", "Swarm's clusters ranked by per-query-head"
                    + " attention-share estimates"),
            new Strategy("medoid-only", Layout.MEDOID_ONLY, null, "Swarm ablation Medoid-Only (Fig. 12)"),
            new Strategy("no-replica", Layout.NO_REPLICA, null, "Swarm ablation No-Replica (Fig. 12)"),
            new Strategy("no-balance", Layout.NO_BALANCE, null,
                    "Swarm ablation No-Balance placement: every cluster starts on SSD 0"));

    /** The default set: the strategies issue #7 names and the library's default (SparQ/SparF on request). */
    public static final String DEFAULTS = "oracle,infllm,quest,pqcache,clusterkv,kvswap,swarm,mass-auto,medoid-only,"
            + "no-replica,no-balance";

    /** The strategy called {@code name}. */
    public static Strategy byName(String name) {
        for (Strategy s : ALL) {
            if (s.name().equals(name)) {
                return s;
            }
        }
        throw new IllegalArgumentException("strategy = " + name + " is unknown; allowed: "
                + String.join(", ", ALL.stream().map(Strategy::name).toList()));
    }
}
