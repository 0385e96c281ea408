package io.kvoffload.internal.swarm;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * Swarm's Algorithm 1 written the plain way, as the reference the fast implementation must equal:
 * a full N×N co-activation matrix, densities by scanning every pair, candidates by scanning every
 * entry, Eq. 5 as a mean over the members, all comparisons with τ in exact decimal arithmetic.
 * Only for small inputs (N ≤ a few thousand).
 */
final class BruteForceAlgorithm1 {
    final int n;
    final long z;
    final int[][] f;
    final int[] activations;
    final int[] density;
    final List<int[]> clusters = new ArrayList<>();
    final List<Integer> medoids = new ArrayList<>();
    int coActivationClusters;
    private final BigDecimal tau;
    private final BigDecimal tauZ;

    private BruteForceAlgorithm1(int n, List<int[]> sets, long z, double tau) {
        this.n = n;
        this.z = z;
        this.tau = new BigDecimal(tau);
        this.tauZ = this.tau.multiply(BigDecimal.valueOf(z));
        this.f = new int[n][n];
        this.activations = new int[n];
        for (int[] set : sets) {
            int[] s = Arrays.stream(set).distinct().toArray();
            for (int a : s) {
                activations[a]++;
                for (int b : s) {
                    if (a != b) {
                        f[a][b]++;
                    }
                }
            }
        }
        this.density = new int[n];
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++) {
                if (i != j && within(i, j)) {
                    density[i]++;
                }
            }
        }
    }

    /** Eq. 3 and 4's test: {@code d(i,j) = 1 − f/Z ≤ τ}, i.e. {@code (Z − f) ≤ τ·Z}, exactly. */
    boolean within(int i, int j) {
        return BigDecimal.valueOf(z - f[i][j]).compareTo(tauZ) <= 0;
    }

    /** Eq. 5's test: mean over k ∈ C of {@code (1 − f(c,k)/Z)} ≤ τ, i.e. {@code Σ (Z − f) ≤ τ·Z·|C|}, exactly. */
    boolean joins(int c, List<Integer> cluster) {
        long sum = 0;
        for (int k : cluster) {
            sum += z - f[c][k];
        }
        return BigDecimal.valueOf(sum).compareTo(tau.multiply(BigDecimal.valueOf(z * cluster.size()))) <= 0;
    }

    static BruteForceAlgorithm1 run(int n, List<int[]> sets, long z, double tau, int maxClusterSize, int maxReplicas,
            IsolatedEntryPolicy policy, int blockSize) {
        BruteForceAlgorithm1 b = new BruteForceAlgorithm1(n, sets, z, tau);
        Integer[] queue = new Integer[n];
        for (int i = 0; i < n; i++) {
            queue[i] = i;
        }
        Arrays.sort(queue, Comparator.<Integer>comparingInt(i -> -b.density[i]).thenComparingInt(i -> i));
        boolean[] covered = new boolean[n];
        int[] replicas = new int[n];
        for (int m : queue) {
            if (covered[m]) {
                continue;
            }
            if (b.density[m] == 0 && policy == IsolatedEntryPolicy.POSITIONAL_BLOCKS) {
                break; // every entry left has density 0: grouped by position below
            }
            List<Integer> candidates = new ArrayList<>();
            for (int e = 0; e < n; e++) {
                if (e != m && b.within(m, e)) {
                    candidates.add(e);
                }
            }
            candidates.sort(Comparator.<Integer>comparingInt(e -> -b.f[m][e]).thenComparingInt(e -> e));
            List<Integer> cluster = new ArrayList<>(List.of(m));
            for (int c : candidates) {
                if (cluster.size() == maxClusterSize) {
                    break;
                }
                if (replicas[c] >= maxReplicas) {
                    continue;
                }
                if (b.joins(c, cluster)) {
                    cluster.add(c);
                }
            }
            for (int e : cluster) {
                covered[e] = true;
                replicas[e]++;
            }
            b.clusters.add(cluster.stream().mapToInt(Integer::intValue).toArray());
            b.medoids.add(m);
            if (b.density[m] > 0) {
                b.coActivationClusters++;
            }
        }
        if (policy == IsolatedEntryPolicy.POSITIONAL_BLOCKS) {
            for (int lo = 0; lo < n; lo += blockSize) {
                List<Integer> block = new ArrayList<>();
                int best = -1;
                for (int e = lo; e < Math.min(n, lo + blockSize); e++) {
                    if (b.density[e] == 0) {
                        block.add(e);
                        if (best < 0 || b.activations[e] > b.activations[best]) {
                            best = e;
                        }
                    }
                }
                if (!block.isEmpty()) {
                    b.clusters.add(block.stream().mapToInt(Integer::intValue).toArray());
                    b.medoids.add(best);
                }
            }
        }
        return b;
    }
}
