package io.kvoffload.bench.swarm;

import io.kvoffload.internal.swarm.CoActivationProfile;
import io.kvoffload.attention.QualityMetrics;
import java.util.BitSet;

/**
 * Cluster quality measured on evaluation queries the clustering never saw:
 * <ul>
 * <li><b>mean member–medoid distance</b> (Swarm Table 5's measure): the co-activation distance
 *     {@code d(member, medoid)} of the evaluation profile, averaged over members (other than the
 *     medoid) activated at least once in evaluation; lower is better;</li>
 * <li><b>co-activation mass captured</b>: of the pairs of entries co-activated in one query's
 *     attention core (its top 1% by exact weight, pinned entries aside), the share that have a
 *     cluster in common, i.e. that one cluster read brings in together, averaged over queries;
 *     higher is better (a random clustering of mean size s scores about s/N);</li>
 * <li><b>attention-mass recall at a budget</b>: clusters fetched best-first by their representative's
 *     score until the budget of entries is reached, plus the pinned entries; higher is better.</li>
 * </ul>
 */
final class ClusterQuality {
    private ClusterQuality() {}

    static double meanMedoidDistance(ClusterSet cs, CoActivationProfile eval) {
        double sum = 0;
        long n = 0;
        for (int c = 0; c < cs.members().length; c++) {
            int m = cs.medoids()[c];
            for (int e : cs.members()[c]) {
                if (e != m && eval.activations(e) > 0) {
                    sum += eval.distance(e, m);
                    n++;
                }
            }
        }
        return n == 0 ? Double.NaN : sum / n;
    }

    /**
     * Of the pairs of entries in one query's attention core (its most attended entries), the share
     * that have a cluster in common, so that fetching one brings the other. Replicas count: a pair
     * shares a cluster if any cluster of one entry holds the other.
     */
    static double pairsCaptured(ClusterSet cs, int[] core) {
        int[] mark = new int[cs.entries()];
        for (int e : core) {
            mark[e] = -1; // in the core, not yet counted
        }
        long together = 0;
        int[] stamp = new int[cs.entries()];
        int round = 0;
        for (int x : core) {
            round++;
            for (int c : cs.clustersOf()[x]) {
                for (int y : cs.members()[c]) {
                    if (y != x && mark[y] == -1 && stamp[y] != round) {
                        stamp[y] = round;
                        together++;
                    }
                }
            }
        }
        long pairs = (long) core.length * (core.length - 1);
        return pairs == 0 ? Double.NaN : together / (double) pairs; // both counted each pair twice
    }

    /** Result of one budgeted selection. */
    record Selection(double recall, int fetched) {}

    /**
     * Takes clusters by descending score until {@code budget} distinct entries are fetched (the last
     * cluster may overshoot), adds the pinned entries, and measures the attention-mass recall.
     */
    static Selection select(ClusterSet cs, float[] clusterScores, float[] weights, int budget, BitSet pinned) {
        Integer[] order = new Integer[cs.members().length];
        for (int c = 0; c < order.length; c++) {
            order[c] = c;
        }
        java.util.Arrays.sort(order, (a, b) -> Float.compare(clusterScores[b], clusterScores[a]));
        BitSet chosen = new BitSet(cs.entries());
        int fetched = 0;
        for (int c : order) {
            if (fetched >= budget) {
                break;
            }
            for (int e : cs.members()[c]) {
                if (!chosen.get(e) && !pinned.get(e)) {
                    chosen.set(e);
                    fetched++;
                }
            }
        }
        chosen.or(pinned);
        return new Selection(QualityMetrics.attentionMassRecall(weights, chosen.stream().toArray()), fetched);
    }
}
