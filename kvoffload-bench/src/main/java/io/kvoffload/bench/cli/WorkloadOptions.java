package io.kvoffload.bench.cli;

import picocli.CommandLine.Option;

/**
 * The synthetic-workload size options several commands share ({@code --tokens}, {@code --layers},
 * {@code --seed}), as a picocli mixin. A command picks its own defaults by initialising the field,
 * {@code @Mixin WorkloadOptions workload = new WorkloadOptions(16384, 2, 24301);}: picocli keeps that
 * instance and shows the initial values as {@code ${DEFAULT-VALUE}}.
 */
public final class WorkloadOptions {

    @Option(names = "--tokens", description = "Context length: tokens per layer (default: ${DEFAULT-VALUE}).")
    public int tokens;

    @Option(names = "--layers", description = "Layers, each with its own keys and queries (default: ${DEFAULT-VALUE}).")
    public int layers;

    @Option(names = "--seed", description = "Workload seed (default: ${DEFAULT-VALUE}).")
    public long seed;

    /** A command's own defaults. */
    public WorkloadOptions(int tokens, int layers, long seed) {
        this.tokens = tokens;
        this.layers = layers;
        this.seed = seed;
    }
}
