package io.kvoffload.bench.swarm;

import io.kvoffload.bench.cli.ClusterRadiusOptions;
import io.kvoffload.internal.swarm.ClusteringConfig;
import io.kvoffload.internal.swarm.IsolatedEntryPolicy;
import picocli.CommandLine.Option;

/**
 * Swarm's clustering options (Algorithm 1: {@code --tau}, from {@link ClusterRadiusOptions},
 * {@code --max-cluster-size}, {@code --max-replicas}, {@code --block}) as a picocli mixin of the
 * offline and drift benchmarks, with the {@link ClusteringConfig} they make (fixed radius, isolated
 * entries in positional blocks).
 */
final class ClusteringOptions extends ClusterRadiusOptions {

    @Option(names = "--max-cluster-size", defaultValue = "256", description = "Cluster size cap (default: ${DEFAULT-VALUE}).")
    int maxClusterSize;

    @Option(names = "--max-replicas", defaultValue = "4",
            description = "Clusters one entry may join (default: ${DEFAULT-VALUE}).")
    int maxReplicas;

    @Option(names = "--block", defaultValue = "16",
            description = "Positional block for isolated entries (default: ${DEFAULT-VALUE}).")
    int block;

    /** The clustering these options describe, profiled on {@code threads} threads. */
    ClusteringConfig config(int threads) {
        return new ClusteringConfig(radius(), maxClusterSize, maxReplicas,
                IsolatedEntryPolicy.POSITIONAL_BLOCKS, block, threads);
    }
}
