package io.kvoffload.bench.swarm;

import picocli.CommandLine.Option;

/**
 * The options of the offline-phase benchmarks that profile one synthetic layer
 * ({@code --profile-queries}, {@code --eval-queries}, {@code --sparsity}, {@code --seed}), as a
 * picocli mixin: the decoding queries Swarm's co-activation profile sees, the held-out queries that
 * measure the result after them, the share of tokens a query activates and the workload's seed. A
 * command picks its held-out count by initialising the field,
 * {@code @Mixin ProfileOptions profiling = new ProfileOptions(16);}.
 */
final class ProfileOptions {

    @Option(names = "--profile-queries", description = "Offline profiled queries (default: ${DEFAULT-VALUE}).")
    int queries = 64;

    @Option(names = "--eval-queries", description = "Held-out decoding queries, after the profiled ones"
            + " (default: ${DEFAULT-VALUE}).")
    int evalQueries;

    @Option(names = "--sparsity", description = "Share of tokens a query activates (default: ${DEFAULT-VALUE}).")
    double sparsity = 0.1;

    @Option(names = "--seed", description = "Workload seed (default: ${DEFAULT-VALUE}).")
    long seed = 24301;

    ProfileOptions(int evalQueries) {
        this.evalQueries = evalQueries;
    }
}
