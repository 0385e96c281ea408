package io.kvoffload.bench.kvswap;

import picocli.CommandLine.Option;

/**
 * The options of the KVSwap benchmarks that sweep the group size G ({@code --budget},
 * {@code --group-sizes}, {@code --reuse-group}, {@code --quality-queries}, {@code --steps}), as a
 * picocli mixin: the paper's MG token budget, the G values of the sweep, the G of the reuse-buffer
 * runs, and how many decoding steps are scored and replayed. A command picks its step counts by
 * initialising the field, {@code @Mixin GroupSweepOptions sweep = new GroupSweepOptions(12, 150);}.
 */
final class GroupSweepOptions {

    @Option(names = "--budget", description = "MG: tokens selected per step (default: ${DEFAULT-VALUE}).")
    int budget = 400;

    @Option(names = "--group-sizes", split = ",", defaultValue = "1,2,4,8,16",
            description = "Group sizes of the sweep (default: ${DEFAULT-VALUE}).")
    int[] groupSizes;

    @Option(names = "--reuse-group", description = "G of the reuse-buffer runs (default: ${DEFAULT-VALUE}).")
    int reuseGroup = 4;

    @Option(names = "--quality-queries", description = "Decoding steps scored against exact attention"
            + " (default: ${DEFAULT-VALUE}).")
    int qualityQueries;

    @Option(names = "--steps", description = "Consecutive decoding steps replayed through the reuse buffer"
            + " (default: ${DEFAULT-VALUE}).")
    int steps;

    GroupSweepOptions(int qualityQueries, int steps) {
        this.qualityQueries = qualityQueries;
        this.steps = steps;
    }
}
