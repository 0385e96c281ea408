package io.kvoffload.bench.cli;

import picocli.CommandLine.Option;

/**
 * The options of the prefix-reuse benchmarks (fork, remote pull): the prompt prefix reused
 * ({@code --prefix-tokens}), the engines' block size ({@code --block-tokens}) and the timed runs
 * per side whose medians are reported ({@code --reps}), as a picocli mixin with one set of defaults.
 */
public final class PrefixOptions {

    @Option(names = "--prefix-tokens", description = "Prompt prefix reused (default: ${DEFAULT-VALUE}).")
    public int prefixTokens = 32768;

    @Option(names = "--block-tokens", description = "Tokens per block of the engines (64 × 4 KiB entries = 256 KiB"
            + " blocks) (default: ${DEFAULT-VALUE}).")
    public int blockTokens = 64;

    @Option(names = "--reps", description = "Timed runs per side; medians (default: ${DEFAULT-VALUE}).")
    public int reps = 5;
}
