package io.kvoffload.internal.swarm;

import io.kvoffload.internal.util.Checks;
import java.util.Arrays;

/**
 * The clusters of one layer: for each cluster its members, its medoid and, for clusters grown by
 * Algorithm 1, the Eq. 5 distance with which each member joined. Immutable.
 *
 * <p>Cluster ids are dense: {@code 0..coActivationClusters()−1} were grown by Algorithm 1, in medoid
 * queue order, and their member lists are in join order (the medoid first); the ids after those hold
 * isolated entries ({@link IsolatedEntryPolicy}), members in position order. The order of clusters
 * and members is part of the result: {@link ClusterPlacement} derives the disk of every member from
 * it.
 */
public final class Clustering {
    private final int entries;
    private final int[] offsets;
    private final int[] members;
    private final double[] joinDistances;
    private final int[] medoids;
    private final int coActivationClusters;
    private final ClusteringStats stats;
    private volatile int[][] inverse; // [0] offsets per entry, [1] cluster ids

    Clustering(int entries, int[] offsets, int[] members, double[] joinDistances, int[] medoids,
            int coActivationClusters, ClusteringStats stats) {
        this.entries = entries;
        this.offsets = offsets;
        this.members = members;
        this.joinDistances = joinDistances;
        this.medoids = medoids;
        this.coActivationClusters = coActivationClusters;
        this.stats = stats;
    }

    /**
     * Rebuilds a clustering from persisted arrays (a manifest): the member lists in order, as CSR,
     * and the medoids. Every array is validated, so a corrupt manifest is rejected here rather than
     * producing reads of the wrong entries. A restored clustering has no build behind it: its join
     * distances are NaN and its {@link #stats()} carry the structure (clusters, sizes, replication,
     * τ) with the profile-dependent counts and the times at 0.
     *
     * @param entries entries of the layer, at least 1; every one must be in some cluster
     * @param offsets {@code clusters + 1} non-decreasing offsets into {@code members}, from 0 to
     *     {@code members.length}, no cluster empty
     * @param members entry ids in {@code [0, entries)}, distinct within a cluster
     * @param medoids one per cluster, a member of it; for the first {@code coActivationClusters}
     *     clusters it must be the first member (join order)
     * @param coActivationClusters how many leading clusters Algorithm 1 grew, 0..clusters
     * @param tau the radius they were built with, [0, 1)
     */
    public static Clustering restore(int entries, int[] offsets, int[] members, int[] medoids, int coActivationClusters,
            double tau) {
        Checks.inRange("entries", entries, 1, Integer.MAX_VALUE - 8);
        Checks.notNull("offsets", offsets);
        Checks.notNull("members", members);
        Checks.notNull("medoids", medoids);
        Checks.inHalfOpen("tau", tau, 0.0, 1.0);
        int clusters = medoids.length;
        Checks.inRange("clusters", clusters, 1, Integer.MAX_VALUE - 8);
        if (offsets.length != clusters + 1) {
            throw new IllegalArgumentException("offsets.length = " + offsets.length + " must be medoids.length + 1 = " + (clusters + 1));
        }
        Checks.inRange("coActivationClusters", coActivationClusters, 0, clusters);
        if (offsets[0] != 0 || offsets[clusters] != members.length) {
            throw new IllegalArgumentException("offsets run from " + offsets[0] + " to " + offsets[clusters]
                    + "; allowed: from 0 to members.length = " + members.length);
        }
        int[] seenIn = new int[entries];
        java.util.Arrays.fill(seenIn, -1);
        boolean[] covered = new boolean[entries];
        int maxSize = 0;
        for (int c = 0; c < clusters; c++) {
            int from = offsets[c], to = offsets[c + 1];
            if (to <= from) {
                throw new IllegalArgumentException("cluster " + c + " has offsets " + from + ".." + to
                        + "; allowed: at least one member");
            }
            maxSize = Math.max(maxSize, to - from);
            boolean medoidFound = false;
            for (int k = from; k < to; k++) {
                int e = Checks.index("members[" + k + "]", members[k], entries);
                if (seenIn[e] == c) {
                    throw new IllegalArgumentException("cluster " + c + " holds entry " + e + " twice");
                }
                seenIn[e] = c;
                covered[e] = true;
                medoidFound |= e == medoids[c];
            }
            if (!medoidFound || (c < coActivationClusters && members[from] != medoids[c])) {
                throw new IllegalArgumentException("medoids[" + c + "] = " + medoids[c] + " must be a member of cluster " + c
                        + (c < coActivationClusters ? " and its first member" : ""));
            }
        }
        for (int e = 0; e < entries; e++) {
            if (!covered[e]) {
                throw new IllegalArgumentException("entry " + e + " is in no cluster; allowed: every entry of 0.."
                        + (entries - 1) + " in at least one");
            }
        }
        double[] joins = new double[members.length];
        java.util.Arrays.fill(joins, Double.NaN);
        long m = members.length;
        ClusteringStats stats = new ClusteringStats(entries, clusters, coActivationClusters, clusters - coActivationClusters,
                m / (double) clusters, maxSize, 0, m, m / (double) entries, m / (double) entries - 1.0, tau, 0, 0, 0, 0, 0,
                0, 0, 4L * m + 4L * (clusters + 1) + 8L * m + 4L * clusters, 0, 0, 0, 0);
        return new Clustering(entries, offsets.clone(), members.clone(), joins, medoids.clone(), coActivationClusters,
                stats);
    }

    /** The CSR offsets of the member lists (a copy): what {@link #restore} takes back. */
    public int[] memberOffsets() {
        return offsets.clone();
    }

    /** All member lists concatenated in cluster order (a copy): what {@link #restore} takes back. */
    public int[] allMembers() {
        return members.clone();
    }

    /** The medoid of every cluster (a copy). */
    public int[] medoids() {
        return medoids.clone();
    }

    /** Entries of the layer; every one of them is in at least one cluster. */
    public int entries() { return entries; }

    public int clusterCount() { return medoids.length; }

    /** Clusters grown by Algorithm 1; their ids come first. */
    public int coActivationClusters() { return coActivationClusters; }

    /** Whether {@code cluster} was grown by Algorithm 1 (else it holds isolated entries). */
    public boolean isCoActivationCluster(int cluster) {
        Checks.index("cluster", cluster, medoids.length);
        return cluster < coActivationClusters;
    }

    public int size(int cluster) {
        Checks.index("cluster", cluster, medoids.length);
        return offsets[cluster + 1] - offsets[cluster];
    }

    /** Member {@code index} of {@code cluster}, in join (or position) order. */
    public int member(int cluster, int index) {
        Checks.index("index", index, size(cluster));
        return members[offsets[cluster] + index];
    }

    /** A copy of the members of {@code cluster}. */
    public int[] members(int cluster) {
        int s = size(cluster);
        return Arrays.copyOfRange(members, offsets[cluster], offsets[cluster] + s);
    }

    public int medoid(int cluster) {
        Checks.index("cluster", cluster, medoids.length);
        return medoids[cluster];
    }

    /**
     * The Eq. 5 distance (mean distance to the members already in the cluster) with which member
     * {@code index} joined: 0 for the medoid, NaN for clusters of isolated entries.
     */
    public double joinDistance(int cluster, int index) {
        Checks.index("index", index, size(cluster));
        return joinDistances[offsets[cluster] + index];
    }

    /** Sum of cluster sizes: each replica counts. */
    public long memberships() { return members.length; }

    public ClusteringStats stats() { return stats; }

    /** How many clusters hold {@code entry} (1 = no replica). */
    public int replicaCount(int entry) {
        int[][] inv = inverse();
        Checks.index("entry", entry, entries);
        return inv[0][entry + 1] - inv[0][entry];
    }

    /** The clusters holding {@code entry}, ascending. */
    public int[] clustersOf(int entry) {
        int[][] inv = inverse();
        Checks.index("entry", entry, entries);
        return Arrays.copyOfRange(inv[1], inv[0][entry], inv[0][entry + 1]);
    }

    /** Bytes held: members, offsets, join distances, medoids. */
    public long memoryBytes() {
        return 4L * members.length + 4L * offsets.length + 8L * joinDistances.length + 4L * medoids.length;
    }

    int[] offsetsUnsafe() { return offsets; }

    int[] membersUnsafe() { return members; }

    private int[][] inverse() {
        int[][] inv = inverse;
        if (inv == null) {
            int[] start = new int[entries + 1];
            for (int m : members) {
                start[m + 1]++;
            }
            for (int e = 0; e < entries; e++) {
                start[e + 1] += start[e];
            }
            int[] ids = new int[members.length];
            int[] fill = Arrays.copyOf(start, entries);
            for (int c = 0; c < medoids.length; c++) {
                for (int k = offsets[c]; k < offsets[c + 1]; k++) {
                    ids[fill[members[k]]++] = c;
                }
            }
            inv = new int[][] {start, ids};
            inverse = inv;
        }
        return inv;
    }
}
