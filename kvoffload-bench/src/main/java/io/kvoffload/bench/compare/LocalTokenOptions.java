package io.kvoffload.bench.compare;

import picocli.CommandLine.Option;

/**
 * The tokens every strategy keeps resident in DRAM inside its budget, the first {@code --sinks} and
 * the newest {@code --window}, as a picocli mixin of {@code compare} and {@code select-eval}, with
 * where they fall in a layer of {@code n} tokens.
 */
final class LocalTokenOptions {

    @Option(names = "--window", defaultValue = "256", description = "Local window (default: ${DEFAULT-VALUE}).")
    int window;

    @Option(names = "--sinks", defaultValue = "4", description = "Sink tokens (default: ${DEFAULT-VALUE}).")
    int sinks;

    /** The sink tokens of a layer of {@code n}: positions {@code 0 .. sinkEnd(n)}. */
    int sinkEnd(int n) {
        return Math.min(sinks, n);
    }

    /** The first position of the window in a layer of {@code n}: after the sinks, which it never overlaps. */
    int windowFrom(int n) {
        return Math.max(sinkEnd(n), n - window);
    }

    /** The resident tokens of a layer of {@code n}: sinks and window, each counted once. */
    int resident(int n) {
        return sinkEnd(n) + (n - windowFrom(n));
    }
}
