package io.kvoffload.internal.swarm;

import static io.kvoffload.internal.swarm.ProfileTest.assertMessage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/**
 * Online cluster maintenance (Swarm §6.2, Eq. 9) against a brute-force model that keeps every
 * step's activations: counts, distances, the radius, replication, new clusters, and the two
 * comparison policies of Table 5.
 */
class OnlineClusterMaintenanceProperties {

    /** A decode run: tokens enter one per step, the oldest leaves once the window is full. */
    private record Run(List<int[]> stepClusters, List<int[]> stepWindow, Map<Integer, Integer> admittedAt,
            Map<Integer, Integer> evictedAt) {}

    /** Brute force: Eq. 9 over the at most {@code window} steps the token saw, from the full step record. */
    private static double bruteDistance(Run run, int window, int token, int cluster) {
        int from = run.admittedAt.get(token);
        int to = run.evictedAt.get(token);
        int w = Math.min(window, to - from);
        int f = 0;
        for (int s = to - w; s < to; s++) {
            if (contains(run.stepWindow.get(s), token) && contains(run.stepClusters.get(s), cluster)) {
                f++;
            }
        }
        return w == 0 ? 1.0 : 1.0 - f / (double) w;
    }

    private static boolean contains(int[] a, int x) {
        for (int v : a) {
            if (v == x) {
                return true;
            }
        }
        return false;
    }

    @Property(tries = 200)
    void everyEvictedTokenLandsInClustersThePolicyAllows(@ForAll long seed,
            @ForAll @IntRange(min = 1, max = 40) int window, @ForAll @IntRange(min = 1, max = 30) int initialClusters,
            @ForAll @IntRange(min = 0, max = 2) int policyIndex, @ForAll @IntRange(min = 1, max = 5) int tauTenths,
            @ForAll boolean capReplicas) {
        Random rnd = new Random(seed);
        MaintenancePolicy policy = MaintenancePolicy.values()[policyIndex];
        double tau = tauTenths / 10.0 + 0.05;
        int prefix = 1000; // tokens clustered offline; decoding starts here
        int[] medoids = new int[initialClusters];
        long[] sizes = new long[initialClusters];
        for (int c = 0; c < initialClusters; c++) {
            medoids[c] = rnd.nextInt(prefix);
            sizes[c] = 1 + rnd.nextInt(20);
        }
        int maxReplicas = capReplicas ? 2 : ClusteringConfig.UNLIMITED;
        int maxActivated = 64;
        OnlineClusterMaintenance.KeyDifference diff = (t, m) -> Math.abs((t * 7919L % 101) - (m * 7919L % 101));
        OnlineClusterMaintenance om = new OnlineClusterMaintenance(policy, medoids, sizes, tau, window, maxActivated,
                maxReplicas, diff);
        // Hot clusters and a per-token affinity make some tokens co-activate with some medoids often.
        int steps = window + rnd.nextInt(3 * window + 5);
        Run run = new Run(new ArrayList<>(), new ArrayList<>(), new HashMap<>(), new HashMap<>());
        List<Integer> inWindow = new ArrayList<>();
        List<long[]> modelSizes = new ArrayList<>();
        long[] size = sizes.clone();
        List<Integer> model = new ArrayList<>(); // medoid per cluster, growing
        for (int m : medoids) {
            model.add(m);
        }
        int next = prefix;
        int[] clusterBuf = new int[maxActivated];
        int[] windowBuf = new int[window];
        for (int s = 0; s < steps; s++) {
            // A new token enters; the oldest leaves when the window is full (before the new one enters).
            if (inWindow.size() == window) {
                int t = inWindow.remove(0);
                run.evictedAt.put(t, s);
                int joined = om.evict(t);
                assertTrue(joined >= 1, "an evicted token joins at least one cluster");
                checkAssignment(om, run, window, t, joined, policy, tau, maxReplicas, size, model, diff);
            }
            om.admit(next);
            run.admittedAt.put(next, s);
            inWindow.add(next++);
            int clustersNow = om.clusterCount();
            int na = 0;
            int hot = rnd.nextInt(clustersNow);
            for (int c = 0; c < clustersNow && na < maxActivated; c++) {
                if (c == hot || rnd.nextInt(4) == 0) {
                    clusterBuf[na++] = c;
                }
            }
            int nw = 0;
            for (int t : inWindow) {
                if ((t + hot) % 3 == 0 || rnd.nextInt(3) == 0) {
                    windowBuf[nw++] = t;
                }
            }
            run.stepClusters.add(java.util.Arrays.copyOf(clusterBuf, na));
            run.stepWindow.add(java.util.Arrays.copyOf(windowBuf, nw));
            om.observeStep(clusterBuf, na, windowBuf, nw);
            for (int t : inWindow) {
                assertEquals(Math.min(window, s + 1 - run.admittedAt.get(t)), om.observedSteps(t));
            }
        }
        OnlineClusterMaintenance.Assignments a = om.drainAssignments();
        assertEquals(run.evictedAt.size(), a.size());
        assertEquals(initialClusters, a.firstNewCluster());
        assertEquals(om.clusterCount() - initialClusters, a.newMedoids().length);
        for (int i = 0; i < a.size(); i++) {
            assertEquals(prefix + i, a.tokens()[i], "tokens leave in position order");
            assertTrue(a.clusterStart()[i + 1] > a.clusterStart()[i]);
        }
        for (int k = 0; k < a.newMedoids().length; k++) {
            int c = initialClusters + k;
            int medoid = a.newMedoids()[k];
            // The token that created a cluster is its medoid and its first mention in the drain.
            int first = -1;
            for (int i = 0; i < a.size() && first < 0; i++) {
                for (int j = a.clusterStart()[i]; j < a.clusterStart()[i + 1]; j++) {
                    if (a.clusterIds()[j] == c) {
                        first = a.tokens()[i];
                    }
                }
            }
            assertEquals(medoid, first);
        }
        assertEquals(0, om.drainAssignments().size(), "a drain forgets what it handed over");
    }

    private static void checkAssignment(OnlineClusterMaintenance om, Run run, int window, int t, int joined,
            MaintenancePolicy policy, double tau, int maxReplicas, long[] sizeBefore, List<Integer> model,
            OnlineClusterMaintenance.KeyDifference diff) {
        Set<Integer> got = new HashSet<>();
        for (int i = 0; i < joined; i++) {
            got.add(om.lastCluster(i));
        }
        assertEquals(joined, got.size(), "distinct clusters");
        int known = model.size();
        switch (policy) {
            case SWARM -> {
                List<Integer> within = new ArrayList<>();
                for (int c = 0; c < known; c++) {
                    if (bruteDistance(run, window, t, c) < tau) {
                        within.add(c);
                    }
                }
                if (within.isEmpty()) {
                    assertTrue(om.lastCreatedCluster(), "nothing within τ: a new cluster");
                    assertEquals(1, joined);
                    assertEquals(known, om.lastCluster(0));
                    assertEquals(t, om.medoid(known), "the token is the new cluster's medoid");
                    model.add(t);
                } else {
                    assertFalse(om.lastCreatedCluster());
                    for (int c : got) {
                        double d = bruteDistance(run, window, t, c);
                        assertTrue(d < tau, "cluster " + c + " at distance " + d + " is outside τ = " + tau);
                    }
                    for (int i = 0; i < joined; i++) {
                        assertEquals(bruteDistance(run, window, t, om.lastCluster(i)), om.lastDistance(i), 1e-12);
                    }
                    assertEquals(Math.min(within.size(), maxReplicas), joined,
                            "every cluster within τ, up to the replica cap");
                    if (maxReplicas >= within.size()) {
                        assertEquals(new HashSet<>(within), got);
                    } else {
                        // the cap keeps the closest ones
                        double worstKept = 0;
                        for (int c : got) {
                            worstKept = Math.max(worstKept, bruteDistance(run, window, t, c));
                        }
                        for (int c : within) {
                            if (!got.contains(c)) {
                                assertTrue(bruteDistance(run, window, t, c) >= worstKept);
                            }
                        }
                    }
                }
            }
            case MIN_SIZE -> {
                assertEquals(1, joined);
                int c = om.lastCluster(0);
                assertFalse(om.lastCreatedCluster());
                long chosen = om.size(c) - 1; // its size before this token
                for (int o = 0; o < om.clusterCount(); o++) {
                    if (o != c) {
                        assertTrue(om.size(o) > chosen || (om.size(o) == chosen && o > c),
                                "the smallest cluster, lowest id on ties");
                    }
                }
            }
            case MIN_DIFF -> {
                assertEquals(1, joined);
                int c = om.lastCluster(0);
                for (int o = 0; o < om.clusterCount(); o++) {
                    double d = diff.difference(t, om.medoid(o));
                    double dc = diff.difference(t, om.medoid(c));
                    assertTrue(d > dc || (d == dc && o >= c), "the most similar medoid, lowest id on ties");
                }
            }
        }
        assertFalse(om.inWindow(t));
    }

    @Test
    void aTokenCoActivatedWithAMedoidInMostStepsJoinsItsClusterOthersFormNewClusters() {
        OnlineClusterMaintenance om = new OnlineClusterMaintenance(MaintenancePolicy.SWARM, new int[] {3, 7},
                new long[] {4, 4}, 0.35, 4, 8, ClusteringConfig.UNLIMITED, null);
        om.admit(100);
        om.admit(101);
        int[] both = {0, 1};
        // 4 steps: 100 active with cluster 0 (and 1) in 3 of 4 steps -> d = 0.25 < 0.35; 101 in 2 -> 0.5.
        om.observeStep(both, 2, new int[] {100, 101}, 2);
        om.observeStep(both, 1, new int[] {100, 101}, 2);
        om.observeStep(both, 2, new int[] {100}, 1);
        om.observeStep(both, 0, new int[] {}, 0);
        assertEquals(3, om.coActivations(100, 0));
        assertEquals(2, om.coActivations(100, 1));
        assertEquals(0.25, om.distance(100, 0), 1e-12);
        assertEquals(1, om.evict(100));
        assertEquals(0, om.lastCluster(0));
        assertEquals(0.25, om.lastDistance(0), 1e-12);
        assertEquals(1, om.evict(101));
        assertTrue(om.lastCreatedCluster());
        assertEquals(2, om.lastCluster(0));
        assertEquals(101, om.medoid(2));
        assertEquals(5, om.size(0));
        // The new cluster is selectable from now on.
        om.admit(102);
        for (int s = 0; s < 4; s++) {
            om.observeStep(new int[] {2}, 1, new int[] {102}, 1);
        }
        assertEquals(1, om.evict(102));
        assertEquals(2, om.lastCluster(0));
        assertEquals(0.0, om.lastDistance(0));
        OnlineClusterMaintenance.Assignments a = om.drainAssignments();
        assertEquals(List.of(100, 101, 102), List.of(a.tokens()[0], a.tokens()[1], a.tokens()[2]));
        assertEquals(2, a.firstNewCluster());
        assertEquals(101, a.newMedoids()[0]);
    }

    @Test
    void historyIsLimitedToTheWindowAndTheRingForgetsOldSteps() {
        OnlineClusterMaintenance om = new OnlineClusterMaintenance(MaintenancePolicy.SWARM, new int[] {0},
                new long[] {1}, 0.5, 2, 4, ClusteringConfig.UNLIMITED, null);
        om.admit(10);
        om.observeStep(new int[] {0}, 1, new int[] {10}, 1);
        om.observeStep(new int[] {0}, 1, new int[] {10}, 1);
        om.observeStep(new int[] {0}, 0, new int[] {10}, 1);
        om.observeStep(new int[] {0}, 0, new int[] {10}, 1);
        // Only the last 2 steps count: no co-activation there.
        assertEquals(2, om.observedSteps(10));
        assertEquals(0, om.coActivations(10, 0));
        om.evict(10);
        assertTrue(om.lastCreatedCluster());
    }

    @Test
    void aTokenEvictedBeforeAnyStepIsAtDistanceOne() {
        OnlineClusterMaintenance om = new OnlineClusterMaintenance(MaintenancePolicy.SWARM, new int[] {0},
                new long[] {1}, 0.99, 8, 4, ClusteringConfig.UNLIMITED, null);
        om.admit(5);
        assertEquals(1.0, om.distance(5, 0));
        om.evict(5);
        assertTrue(om.lastCreatedCluster());
    }

    @Test
    void badInputIsRejectedWithNameValueAndRange() {
        int[] m = {1, 2};
        long[] s = {1, 1};
        assertMessage(() -> new OnlineClusterMaintenance(MaintenancePolicy.SWARM, m, s, 1.0, 4, 4, 4, null),
                "tau = 1.0", "[0.0, 1.0)");
        assertMessage(() -> new OnlineClusterMaintenance(MaintenancePolicy.SWARM, m, s, 0.3, 0, 4, 4, null),
                "window = 0", "1..65536");
        assertMessage(() -> new OnlineClusterMaintenance(MaintenancePolicy.SWARM, m, new long[] {1}, 0.3, 4, 4, 4, null),
                "clusterSizes.length = 1", "2..2");
        assertMessage(() -> new OnlineClusterMaintenance(MaintenancePolicy.SWARM, m, new long[] {1, 0}, 0.3, 4, 4, 4, null),
                "clusterSizes[1] = 0");
        assertMessage(() -> new OnlineClusterMaintenance(MaintenancePolicy.SWARM, new int[0], new long[0], 0.3, 4, 4, 4,
                null), "medoids.length = 0");
        assertMessage(() -> new OnlineClusterMaintenance(MaintenancePolicy.SWARM, m, s, 0.3, 4, 0, 4, null),
                "maxActivatedClusters = 0");
        assertThrows(NullPointerException.class,
                () -> new OnlineClusterMaintenance(MaintenancePolicy.MIN_DIFF, m, s, 0.3, 4, 4, 4, null));

        OnlineClusterMaintenance om = new OnlineClusterMaintenance(MaintenancePolicy.SWARM, m, s, 0.3, 4, 2, 4, null);
        om.admit(8);
        assertMessage(() -> om.observeStep(new int[] {0, 1, 0}, 3, new int[0], 0), "nActivated = 3", "0..2");
        assertMessage(() -> om.observeStep(new int[] {0, 2}, 2, new int[0], 0), "activatedClusters[1] = 2", "0..1");
        assertMessage(() -> om.observeStep(new int[] {1, 1}, 2, new int[0], 0), "activatedClusters[1] = 1", "distinct");
        assertMessage(() -> om.observeStep(new int[] {0}, 1, new int[] {9}, 1), "activatedWindowTokens[0] = 9",
                "in the window");
        assertMessage(() -> om.observeStep(new int[] {0}, 1, new int[] {8}, 2), "nWindow = 2", "0..1");
        assertEquals(0, om.steps(), "rejected steps leave no trace");
        om.observeStep(new int[] {1, 0}, 2, new int[] {8}, 1);
        assertEquals(1, om.coActivations(8, 1), "a rejected step's clusters were not stamped as seen");
        assertMessage(() -> om.evict(9), "token = 9", "in the window");
        assertMessage(() -> om.admit(-1), "token = -1");
        assertThrows(IllegalStateException.class, () -> om.admit(12), "slot 0 still holds token 8");
        assertThrows(IllegalStateException.class, () -> om.lastCluster(0), "nothing evicted yet");
    }
}
