package io.kvoffload.internal.swarm;

import io.kvoffload.internal.util.Checks;

/**
 * Settings of {@link CoActivationClustering}.
 *
 * @param radius how τ is chosen; default {@code fixed(0.35)} (the paper's worked example, with the
 *     per-query normaliser: members co-activated by at least 65% of the profiled queries)
 * @param maxClusterSize cap on members per cluster, 1..2^30 ({@link #UNLIMITED}); default 256. Expansion stops when a
 *     cluster is full. Why cap: a cluster is read as a whole, so its size is the read amplification
 *     when one member is needed, and entries co-activated with nearly everything (heavy hitters)
 *     would otherwise pull every frequent entry into the first cluster.
 * @param maxReplicas cap on the clusters one entry may join, 1..2^30; default 4. A candidate already
 *     in {@code maxReplicas} clusters is skipped. Why: Algorithm 1 orders candidates by distance to the
 *     medoid, and an entry activated by nearly every query (a heavy hitter) is the closest candidate of
 *     every medoid, so without a cap it is replicated into every cluster and, with the size cap, crowds
 *     out the entries the cluster exists for (measured: 1.85× storage at τ = 0.35 on the synthetic
 *     workload, 80 replicas per frequent entry). {@link #UNLIMITED} runs Algorithm 1 as published.
 * @param isolatedPolicy what to do with entries no candidate list holds; default positional blocks
 * @param isolatedBlockSize tokens per positional block, 1..2^20; default 16 (16 entries of 4 KiB are
 *     four 16 KiB reads over four SSDs, the size Haas &amp; Leis find needed for full bandwidth)
 * @param parallelism threads for the pair search, 1..256; default: available processors
 * @param expansion how a candidate joins a cluster; default Eq. 5 ({@link ExpansionRule#MEAN_DISTANCE}),
 *     {@link ExpansionRule#MEDOID_ONLY} is Fig. 12's ablation
 */
public record ClusteringConfig(ClusterRadius radius, int maxClusterSize, int maxReplicas,
        IsolatedEntryPolicy isolatedPolicy, int isolatedBlockSize, int parallelism, ExpansionRule expansion) {

    /** A configuration with the published expansion rule (Eq. 5). */
    public ClusteringConfig(ClusterRadius radius, int maxClusterSize, int maxReplicas,
            IsolatedEntryPolicy isolatedPolicy, int isolatedBlockSize, int parallelism) {
        this(radius, maxClusterSize, maxReplicas, isolatedPolicy, isolatedBlockSize, parallelism,
                ExpansionRule.MEAN_DISTANCE);
    }

    /** No cap (for {@code maxClusterSize} and {@code maxReplicas}): Algorithm 1 as published. */
    public static final int UNLIMITED = 1 << 30;

    public ClusteringConfig {
        Checks.notNull("radius", radius);
        Checks.inRange("maxClusterSize", maxClusterSize, 1, UNLIMITED);
        Checks.inRange("maxReplicas", maxReplicas, 1, UNLIMITED);
        Checks.notNull("isolatedPolicy", isolatedPolicy);
        Checks.inRange("isolatedBlockSize", isolatedBlockSize, 1, 1 << 20);
        Checks.inRange("parallelism", parallelism, 1, 256);
        Checks.notNull("expansion", expansion);
    }

    /** The defaults above. */
    public static ClusteringConfig defaults() {
        return new ClusteringConfig(ClusterRadius.fixed(0.35), 256, 4, IsolatedEntryPolicy.POSITIONAL_BLOCKS, 16,
                Math.min(256, Runtime.getRuntime().availableProcessors()));
    }

    public ClusteringConfig withRadius(ClusterRadius r) {
        return new ClusteringConfig(r, maxClusterSize, maxReplicas, isolatedPolicy, isolatedBlockSize, parallelism, expansion);
    }

    public ClusteringConfig withMaxClusterSize(int size) {
        return new ClusteringConfig(radius, size, maxReplicas, isolatedPolicy, isolatedBlockSize, parallelism, expansion);
    }

    public ClusteringConfig withMaxReplicas(int replicas) {
        return new ClusteringConfig(radius, maxClusterSize, replicas, isolatedPolicy, isolatedBlockSize, parallelism, expansion);
    }

    public ClusteringConfig withIsolatedPolicy(IsolatedEntryPolicy policy, int blockSize) {
        return new ClusteringConfig(radius, maxClusterSize, maxReplicas, policy, blockSize, parallelism, expansion);
    }

    public ClusteringConfig withParallelism(int threads) {
        return new ClusteringConfig(radius, maxClusterSize, maxReplicas, isolatedPolicy, isolatedBlockSize, threads, expansion);
    }

    public ClusteringConfig withExpansion(ExpansionRule rule) {
        return new ClusteringConfig(radius, maxClusterSize, maxReplicas, isolatedPolicy, isolatedBlockSize, parallelism,
                rule);
    }
}
