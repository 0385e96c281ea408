package io.kvoffload.bench.swarm;

import io.kvoffload.internal.swarm.Clustering;
import io.kvoffload.internal.util.LabelGroups;

/**
 * Clusters as the quality metrics see them, whoever built them: members per cluster and a
 * representative (medoid) per cluster, plus the inverse map entry → clusters.
 */
record ClusterSet(String name, int entries, int[][] members, int[] medoids, int[][] clustersOf) {

    static ClusterSet of(String name, int entries, int[][] members, int[] medoids) {
        // The inverse map is the memberships (entry, cluster) grouped by entry, in cluster order.
        int n = 0;
        for (int[] m : members) {
            n += m.length;
        }
        int[] entryOf = new int[n];
        int[] clusterOf = new int[n];
        for (int c = 0, i = 0; c < members.length; c++) {
            for (int e : members[c]) {
                entryOf[i] = e;
                clusterOf[i++] = c;
            }
        }
        return new ClusterSet(name, entries, members, medoids, LabelGroups.of(clusterOf, entryOf, entries));
    }

    static ClusterSet of(String name, Clustering clustering) {
        int k = clustering.clusterCount();
        int[][] members = new int[k][];
        int[] medoids = new int[k];
        for (int c = 0; c < k; c++) {
            members[c] = clustering.members(c);
            medoids[c] = clustering.medoid(c);
        }
        return of(name, clustering.entries(), members, medoids);
    }

    long memberships() {
        long s = 0;
        for (int[] m : members) {
            s += m.length;
        }
        return s;
    }

    boolean share(int i, int j) {
        for (int a : clustersOf[i]) {
            for (int b : clustersOf[j]) {
                if (a == b) {
                    return true;
                }
            }
        }
        return false;
    }
}
