package io.kvoffload.bench.cli;

import io.kvoffload.internal.swarm.ClusterRadius;
import picocli.CommandLine.Option;

/**
 * Swarm's cluster radius ({@code --tau}), as the base of the mixins of the commands that cluster a
 * layer the way Swarm does ({@code compare}'s and {@code compare-quality}'s offline phase, the
 * offline and drift benchmarks' clustering options): they extend this class (picocli reads the
 * options a mixin inherits), so the flag and its default are declared once.
 */
public abstract class ClusterRadiusOptions {

    @Option(names = "--tau", defaultValue = "0.35", description = "Swarm's cluster radius τ (default: ${DEFAULT-VALUE}).")
    public double tau;

    /** The fixed radius {@code --tau}. */
    public ClusterRadius radius() {
        return ClusterRadius.fixed(tau);
    }
}
