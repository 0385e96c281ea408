package io.kvoffload.internal.swarm;

import io.kvoffload.internal.util.Checks;
import io.kvoffload.internal.util.IntList;
import java.util.Arrays;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Swarm's correlation-aware clustering with replication (§5.1, Algorithm 1) over a
 * {@link CoActivationProfile}:
 * <ol>
 * <li>the pairs within the radius τ ({@link CoActivationGraph}, found without an N×N matrix);</li>
 * <li>Step 3, medoid selection: density {@code ρ(i)} = neighbours within τ (Eq. 4); the medoid
 *     queue holds the entries by ρ descending, ties by entry id ascending;</li>
 * <li>Step 4, cluster expansion: for each medoid of the queue not yet covered, the candidates are its
 *     neighbours ({@code d(m,e) ≤ τ}) by {@code d(m,·)} ascending (ties by id). In one pass over them,
 *     a candidate joins if its mean distance to the members so far (Eq. 5) is at most τ, until the
 *     cluster holds {@code maxClusterSize} members. Candidates already covered may join again: that is
 *     replication, up to {@code maxReplicas} clusters per entry (candidates at the cap are skipped).
 *     The members are marked covered;</li>
 * <li>entries with no neighbour (ρ = 0) are never candidates; they are grouped by
 *     {@link IsolatedEntryPolicy}.</li>
 * </ol>
 *
 * <p>Eq. 5 costs {@code O(activations of the candidate)}, not {@code O(|C|)}: the sum
 * {@code Σ_{k∈C} f(c,k)} equals {@code Σ_{q ∋ c} |{k ∈ C : q activated k}|}, and the cluster keeps those
 * per-query member counts up to date as members join. Distances are compared with τ exactly
 * ({@link RadiusThreshold}).
 */
public final class CoActivationClustering {
    private static final Logger LOG = LoggerFactory.getLogger(CoActivationClustering.class);

    private final ClusteringConfig config;

    public CoActivationClustering(ClusteringConfig config) {
        this.config = Checks.notNull("config", config);
    }

    public ClusteringConfig config() {
        return config;
    }

    /** Clusters every entry of the profile. */
    public Clustering cluster(CoActivationProfile profile) {
        Checks.notNull("profile", profile);
        long start = System.nanoTime();
        double tau = config.radius().resolve(profile);
        RadiusThreshold threshold = new RadiusThreshold(tau, profile.normaliser());
        long radiusDone = System.nanoTime();
        CoActivationGraph graph = CoActivationGraph.build(profile, threshold.pairThreshold(), config.parallelism());
        long graphDone = System.nanoTime();

        int n = profile.entries();
        int words = profile.words();
        long[] bits = profile.bitsUnsafe();
        int[] counts = profile.countsUnsafe();
        long z = profile.normaliser();
        int cap = config.maxClusterSize();

        // Medoid queue: ρ descending, then id ascending. Entries with ρ = 0 come last and are
        // handled by the isolated-entry policy (Algorithm 1 would make each a singleton).
        int queued = 0;
        for (int e = 0; e < n; e++) {
            if (graph.density(e) > 0) {
                queued++;
            }
        }
        long[] queue = new long[queued];
        for (int e = 0, i = 0; e < n; e++) {
            int rho = graph.density(e);
            if (rho > 0) {
                queue[i++] = ((long) (Integer.MAX_VALUE - rho) << 32) | e;
            }
        }
        Arrays.sort(queue);

        IntList offsets = new IntList();
        IntList members = new IntList();
        DoubleBuffer joins = new DoubleBuffer();
        IntList medoids = new IntList();
        offsets.add(0);
        boolean[] covered = new boolean[n];
        int[] replicas = new int[n]; // clusters each entry has joined
        int maxReplicas = config.maxReplicas();
        boolean medoidOnly = config.expansion() == ExpansionRule.MEDOID_ONLY;
        int[] perQuery = new int[profile.queries()]; // members of the growing cluster activated by each query
        long[] candidates = new long[0];
        int capped = 0;
        for (long key : queue) {
            int m = (int) key;
            if (covered[m]) {
                continue;
            }
            int from = graph.neighbourStart(m), to = graph.neighbourEnd(m);
            if (candidates.length < to - from) {
                candidates = new long[to - from];
            }
            int nc = 0;
            for (int k = from; k < to; k++) {
                int c = graph.neighbour(k);
                int f = profile.overlap(m, c);
                // d(m,c) ascending = f descending; ties by id ascending.
                candidates[nc++] = ((long) (Integer.MAX_VALUE - f) << 32) | c;
            }
            Arrays.sort(candidates, 0, nc);
            int clusterStart = members.size();
            members.add(m);
            joins.add(0.0);
            medoids.add(m);
            add(perQuery, bits, words, m, 1);
            int size = 1;
            int k = 0;
            for (; k < nc && size < cap; k++) {
                int c = (int) candidates[k];
                if (replicas[c] >= maxReplicas) {
                    continue;
                }
                if (medoidOnly) { // every neighbour of the medoid is within τ of it: it joins
                    members.add(c);
                    joins.add(1.0 - profile.overlap(m, c) / (double) z);
                    add(perQuery, bits, words, c, 1);
                    size++;
                    continue;
                }
                long sum = sum(perQuery, bits, words, c);
                if (sum >= threshold.minSum(size)) {
                    members.add(c);
                    joins.add(1.0 - sum / ((double) z * size));
                    add(perQuery, bits, words, c, 1);
                    size++;
                }
            }
            if (k < nc) {
                capped++;
            }
            for (int i = clusterStart; i < members.size(); i++) {
                int e = members.get(i);
                covered[e] = true;
                replicas[e]++;
                add(perQuery, bits, words, e, -1); // back to zero for the next cluster
            }
            offsets.add(members.size());
        }
        int coActivationClusters = medoids.size();

        int isolated = 0, never = 0;
        for (int e = 0; e < n; e++) {
            if (graph.density(e) == 0) {
                isolated++;
                if (counts[e] == 0) {
                    never++;
                }
            }
        }
        if (config.isolatedPolicy() == IsolatedEntryPolicy.SINGLETONS) {
            for (int e = 0; e < n; e++) {
                if (graph.density(e) == 0) {
                    members.add(e);
                    joins.add(Double.NaN);
                    medoids.add(e);
                    offsets.add(members.size());
                }
            }
        } else {
            int block = config.isolatedBlockSize();
            for (long b = 0; b * block < n; b++) {
                int lo = (int) (b * block), hi = (int) Math.min(n, lo + (long) block);
                int best = -1;
                int first = members.size();
                for (int e = lo; e < hi; e++) {
                    if (graph.density(e) == 0) {
                        members.add(e);
                        joins.add(Double.NaN);
                        if (best < 0 || counts[e] > counts[best]) {
                            best = e;
                        }
                    }
                }
                if (members.size() > first) {
                    medoids.add(best);
                    offsets.add(members.size());
                }
            }
        }
        long end = System.nanoTime();

        int clusters = medoids.size();
        int maxSize = 0;
        for (int c = 0; c < clusters; c++) {
            maxSize = Math.max(maxSize, offsets.get(c + 1) - offsets.get(c));
        }
        long memberships = members.size();
        long resultBytes = 4L * memberships + 4L * (clusters + 1) + 8L * memberships + 4L * clusters;
        ClusteringStats stats = new ClusteringStats(n, clusters, coActivationClusters, clusters - coActivationClusters,
                memberships / (double) clusters, maxSize, capped, memberships, memberships / (double) n,
                memberships / (double) n - 1.0, tau, threshold.pairThreshold(), graph.frequentEntries(), graph.edges(),
                graph.candidatesChecked(), isolated, never, graph.memoryBytes(), resultBytes, radiusDone - start,
                graphDone - radiusDone, end - graphDone, end - start);
        LOG.debug("clustered {} entries: {}", n, stats);
        return new Clustering(n, offsets.toArray(), members.toArray(), joins.toArray(), medoids.toArray(),
                coActivationClusters, stats);
    }

    /** perQuery[q] += delta for every query q that activated {@code e}. */
    private static void add(int[] perQuery, long[] bits, int words, int e, int delta) {
        for (int w = 0; w < words; w++) {
            long x = bits[e * words + w];
            while (x != 0) {
                perQuery[w * 64 + Long.numberOfTrailingZeros(x)] += delta;
                x &= x - 1;
            }
        }
    }

    /** {@code Σ_{k∈C} f(c,k)} = Σ over queries activating c of the members they activated. */
    private static long sum(int[] perQuery, long[] bits, int words, int c) {
        long s = 0;
        for (int w = 0; w < words; w++) {
            long x = bits[c * words + w];
            while (x != 0) {
                s += perQuery[w * 64 + Long.numberOfTrailingZeros(x)];
                x &= x - 1;
            }
        }
        return s;
    }

    /** A growable double array (the result sizes are unknown until the end). */
    private static final class DoubleBuffer {
        double[] data = new double[256];
        int size;

        void add(double v) {
            if (size == data.length) {
                data = Arrays.copyOf(data, data.length * 2);
            }
            data[size++] = v;
        }

        double[] toArray() {
            return Arrays.copyOf(data, size);
        }
    }
}
