package io.kvoffload.bench.compare;

import picocli.CommandLine.Option;

/**
 * Swarm's offline phase as {@code compare} and {@code compare-quality} both run it: the decoding
 * queries it profiles ({@code --profile-queries}) and its cluster radius ({@code --tau}), as a
 * picocli mixin.
 */
final class SwarmProfileOptions {

    @Option(names = "--profile-queries", defaultValue = "64",
            description = "Decoding queries Swarm's offline phase profiles (default: ${DEFAULT-VALUE}).")
    int profileQueries;

    @Option(names = "--tau", defaultValue = "0.35", description = "Swarm's cluster radius (default: ${DEFAULT-VALUE}).")
    double tau;
}
