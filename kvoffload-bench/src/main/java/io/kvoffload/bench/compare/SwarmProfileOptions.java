package io.kvoffload.bench.compare;

import io.kvoffload.bench.cli.ClusterRadiusOptions;
import picocli.CommandLine.Option;

/**
 * Swarm's offline phase as {@code compare} and {@code compare-quality} both run it: the decoding
 * queries it profiles ({@code --profile-queries}) and its cluster radius ({@code --tau}, from
 * {@link ClusterRadiusOptions}), as a picocli mixin.
 */
final class SwarmProfileOptions extends ClusterRadiusOptions {

    @Option(names = "--profile-queries", defaultValue = "64",
            description = "Decoding queries Swarm's offline phase profiles (default: ${DEFAULT-VALUE}).")
    int profileQueries;
}
