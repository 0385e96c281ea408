package io.kvoffload.bench.compare;

import io.kvoffload.KvShape;
import io.kvoffload.Placement;
import io.kvoffload.strategy.kvswap.GroupOptions;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * How {@code compare} stores and caches every strategy's layer ({@code --placement},
 * {@code --cache-share}, KVSwap's adapter rank {@code --kvswap-rank}), as a picocli mixin of
 * {@code compare} and of {@code compare-sweep}, which hands them on to each cell's compare run.
 */
final class StoreOptions {

    @Option(names = "--placement", defaultValue = "token-striped",
            description = "Entry placement: token-striped, or head-sharded (each KV-head group of a token its own extent,"
                    + " on its own SSD: per-head strategies read only their heads' groups; default: ${DEFAULT-VALUE}).")
    String placement;

    @Option(names = "--cache-share", defaultValue = "0.05",
            description = "Hot-cluster cache per layer as a share of the layer's KV (every strategy's pipeline fills it"
                    + " with the units it read whole; KVSwap keeps its own reuse buffer besides) (default: ${DEFAULT-VALUE}).")
    double cacheShare;

    @Option(names = "--kvswap-rank", defaultValue = "0",
            description = "Rank of KVSwap's low-rank K adapter: 0 for kvHeads × headDim / " + GroupOptions.DEFAULT_COMPRESSION
                    + " (the same compression at any KV-head count), or 1..kvHeads × headDim (the paper's is headDim)"
                    + " (default: ${DEFAULT-VALUE}).")
    int kvswapRank;

    /** KVSwap's adapter options of these runs: the paper's NVMe setting (G = 4), at {@code --kvswap-rank}. */
    GroupOptions kvswap() {
        return GroupOptions.defaults().withRank(kvswapRank);
    }

    /** The rank KVSwap's adapter gets on {@code shape} ({@code --kvswap-rank}, or σ = 8 for 0). */
    int kvswapRank(KvShape shape) {
        return kvswap().rankFor(shape);
    }

    /** {@code --kvswap-rank} as a report names it whatever the shape: the number, or the automatic rank's rule. */
    String kvswapRankName() {
        return kvswapRank == GroupOptions.AUTO_RANK ? "kvHeads × headDim / " + GroupOptions.DEFAULT_COMPRESSION
                : String.valueOf(kvswapRank);
    }

    /** {@code --placement} as the library's enum (the names of {@code KvConfig}'s JSON). */
    Placement placement() {
        return switch (placement) {
            case "token-striped" -> Placement.TOKEN_STRIPED;
            case "head-sharded" -> Placement.HEAD_SHARDED;
            default -> throw new IllegalArgumentException("--placement = " + placement
                    + "; allowed: token-striped, head-sharded");
        };
    }

    /** These options as arguments of a compare run. */
    List<String> args() {
        return List.of("--placement", placement, "--cache-share", String.valueOf(cacheShare), "--kvswap-rank",
                String.valueOf(kvswapRank));
    }
}
