package io.kvoffload.internal.swarm;

import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.strategy.swarm.ClusterSummary;
import java.util.BitSet;
import java.util.function.IntFunction;
import org.slf4j.Logger;

/**
 * How much of a layer Swarm's co-activation actually clustered: the share of its tokens that sit in
 * at least one of Algorithm 1's clusters (the rest are positional blocks that one medoid key
 * represents poorly, issue #16). Near zero the medoid index is in effect fixed-size blocks, which an
 * engine should hear about rather than find out from the recall.
 */
public final class CoActivationCoverage {
    private CoActivationCoverage() {}

    /** Distinct tokens in the layout's co-activation clusters over its clustered tokens (replicas count once). */
    public static double share(ClusterLayout layout) {
        return share(layout.clusteredTokens(), layout.coActivationClusters(), layout::members);
    }

    /** Distinct entries in the clustering's co-activation clusters over its entries (replicas count once). */
    public static double share(Clustering clustering) {
        return share(clustering.entries(), clustering.coActivationClusters(), clustering::members);
    }

    private static double share(int tokens, int coActivationClusters, IntFunction<int[]> members) {
        if (tokens == 0) {
            return 0;
        }
        BitSet in = new BitSet(tokens);
        for (int c = 0; c < coActivationClusters; c++) {
            for (int t : members.apply(c)) {
                in.set(t);
            }
        }
        return in.cardinality() / (double) tokens;
    }

    /**
     * Logs a WARN on {@code log} when the summary's co-activation share is below
     * {@link ClusterSummary#LOW_CO_ACTIVATION_SHARE}; returns whether it did.
     */
    public static boolean warnIfLow(Logger log, ClusterSummary s) {
        if (!s.lowCoActivation()) {
            return false;
        }
        log.warn("layer {}: only {}% of its {} tokens are in co-activation clusters ({} of {} clusters, τ = {});"
                + " the rest are positional blocks that one medoid key represents poorly. Profile from more or"
                + " more recent queries, or raise τ.", s.layer(), String.format(java.util.Locale.ROOT, "%.2f",
                100 * s.coActivationShare()), s.tokens(), s.coActivationClusters(), s.clusters(), s.tau());
        return true;
    }
}
