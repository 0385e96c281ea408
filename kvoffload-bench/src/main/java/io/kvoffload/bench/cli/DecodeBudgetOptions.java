package io.kvoffload.bench.cli;

import picocli.CommandLine.Option;

/**
 * The decode-run options of the commands that decode a stored workload through the real I/O path
 * ({@code --steps}, {@code --sparsity}), as a picocli mixin. A command picks its own defaults by
 * initialising the field, {@code @Mixin DecodeBudgetOptions decode = new DecodeBudgetOptions(48, 0.1);}.
 */
public final class DecodeBudgetOptions {

    @Option(names = "--steps", description = "Decoding steps per decoder and setting (default: ${DEFAULT-VALUE}).")
    public int steps;

    @Option(names = "--sparsity", description = "Token budget: the share of a layer's tokens a step reads"
            + " (default: ${DEFAULT-VALUE}).")
    public double sparsity;

    /** A command's own defaults. */
    public DecodeBudgetOptions(int steps, double sparsity) {
        this.steps = steps;
        this.sparsity = sparsity;
    }
}
