package io.kvoffload.strategy.swarm;

import io.kvoffload.KvSequence;
import io.kvoffload.internal.util.Checks;

/**
 * Options of the Swarm offline phase ({@link Swarm#clusterLayer(KvSequence, int, java.util.List, ClusterOptions)}): how co-activation is
 * profiled and how clusters are formed [Swarm §5.1–5.2, Algorithm 1].
 *
 * @param radius the cluster radius τ of Eq. 4–5, in [0, 1); ignored when {@code radiusQuantile > 0}
 * @param radiusQuantile if in (0, 1], τ is this quantile of the distances of co-activated pairs
 * @param maxClusterSize cap on members per cluster (so one cluster cannot dominate a device), 1..2^30
 * @param maxReplicas cap on copies of one entry across clusters, 1..2^30 (2^30: the paper's unlimited)
 * @param sparsity share of tokens a profiled query activates when the library computes activations
 *     from queries, (0, 1]
 * @param perQueryNormaliser Eq. 2 normaliser: true divides by the number of profiled queries (the
 *     paper's worked example), false by the sum of all counts (the translation's reading)
 * @param sinkTokens leading tokens excluded from profiling (kept in DRAM by the engine anyway)
 * @param windowTokens trailing tokens excluded from profiling (the local window)
 * @param placement which SSD each cluster starts on (Eq. 7 round robin, or the No-Balance ablation)
 */
public record ClusterOptions(double radius, double radiusQuantile, int maxClusterSize, int maxReplicas,
        double sparsity, boolean perQueryNormaliser, int sinkTokens, int windowTokens, Placement placement) {

    /** How clusters are spread over the SSDs (Swarm §5.2, Tier 2). */
    public enum Placement {
        /**
         * Eq. 7: a running pointer {@code p} (entries placed so far) makes cluster {@code c} start on
         * SSD {@code p mod N}; member {@code i} goes to {@code (start + i) mod N}. Every cluster
         * spreads over all SSDs and the SSDs fill evenly.
         */
        ROUND_ROBIN,
        /**
         * Ablation ("No-Balance" placement): every cluster starts on SSD 0, member {@code i} on SSD
         * {@code i mod N}. Small clusters pile up on the first SSDs, so reads concentrate there.
         */
        FIRST_DEVICE
    }

    /** Options without a placement choice: {@link Placement#ROUND_ROBIN}. */
    public ClusterOptions(double radius, double radiusQuantile, int maxClusterSize, int maxReplicas, double sparsity,
            boolean perQueryNormaliser, int sinkTokens, int windowTokens) {
        this(radius, radiusQuantile, maxClusterSize, maxReplicas, sparsity, perQueryNormaliser, sinkTokens,
                windowTokens, Placement.ROUND_ROBIN);
    }

    public ClusterOptions {
        if (!(radius >= 0 && radius < 1)) {
            throw new IllegalArgumentException("radius = " + radius + " is out of range; allowed: [0, 1)");
        }
        if (!(radiusQuantile >= 0 && radiusQuantile <= 1)) {
            throw new IllegalArgumentException("radiusQuantile = " + radiusQuantile
                    + " is out of range; allowed: 0 (use radius) or (0, 1]");
        }
        Checks.inRange("maxClusterSize", maxClusterSize, 1, 1 << 30);
        Checks.inRange("maxReplicas", maxReplicas, 1, 1 << 30);
        if (!(sparsity > 0 && sparsity <= 1)) {
            throw new IllegalArgumentException("sparsity = " + sparsity + " is out of range; allowed: (0, 1]");
        }
        Checks.inRange("sinkTokens", sinkTokens, 0, Integer.MAX_VALUE);
        Checks.inRange("windowTokens", windowTokens, 0, Integer.MAX_VALUE);
        Checks.notNull("placement", placement);
    }

    /** τ = 0.35, clusters of at most 256, at most 4 copies, 10% sparsity, per-query normaliser, 4 sinks, 256 window, Eq. 7 placement. */
    public static ClusterOptions defaults() {
        return new ClusterOptions(0.35, 0, 256, 4, 0.10, true, 4, 256);
    }

    public ClusterOptions withRadius(double tau) {
        return new ClusterOptions(tau, 0, maxClusterSize, maxReplicas, sparsity, perQueryNormaliser, sinkTokens,
                windowTokens, placement);
    }

    public ClusterOptions withRadiusQuantile(double q) {
        return new ClusterOptions(radius, q, maxClusterSize, maxReplicas, sparsity, perQueryNormaliser, sinkTokens,
                windowTokens, placement);
    }

    public ClusterOptions withMaxClusterSize(int n) {
        return new ClusterOptions(radius, radiusQuantile, n, maxReplicas, sparsity, perQueryNormaliser, sinkTokens,
                windowTokens, placement);
    }

    public ClusterOptions withMaxReplicas(int n) {
        return new ClusterOptions(radius, radiusQuantile, maxClusterSize, n, sparsity, perQueryNormaliser, sinkTokens,
                windowTokens, placement);
    }

    public ClusterOptions withSparsity(double s) {
        return new ClusterOptions(radius, radiusQuantile, maxClusterSize, maxReplicas, s, perQueryNormaliser,
                sinkTokens, windowTokens, placement);
    }

    public ClusterOptions withExcluded(int sinks, int window) {
        return new ClusterOptions(radius, radiusQuantile, maxClusterSize, maxReplicas, sparsity, perQueryNormaliser,
                sinks, window, placement);
    }

    public ClusterOptions withPlacement(Placement p) {
        return new ClusterOptions(radius, radiusQuantile, maxClusterSize, maxReplicas, sparsity, perQueryNormaliser,
                sinkTokens, windowTokens, p);
    }
}
