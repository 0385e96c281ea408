package io.kvoffload.internal.swarm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/** Algorithm 1 as implemented, against its definition and against a brute-force reference. */
class CoActivationClusteringProperties {

    /** One clustering problem: a profile and every setting. */
    record Case(ProfileInputs inputs, boolean sumOfCounts, long tauSeed, int maxClusterSize, int maxReplicas,
            IsolatedEntryPolicy policy, int blockSize) {

        CoActivationProfile profile() {
            return inputs.profile(sumOfCounts ? CoActivationNormaliser.sumOfCounts() : CoActivationNormaliser.perQuery());
        }

        /** Half the time a distance that occurs (1 − k/Z, the borderline case), else any τ in [0, 1). */
        double tau(CoActivationProfile p) {
            SplittableRandom r = new SplittableRandom(tauSeed);
            if (r.nextBoolean()) {
                long k = 1 + r.nextLong(Math.max(1, Math.min(p.normaliser(), p.queries())));
                return Math.max(0.0, 1.0 - k / (double) p.normaliser());
            }
            return sumOfCounts ? 1 - r.nextDouble() * r.nextDouble() * 1e-2 : r.nextDouble();
        }

        ClusteringConfig config(double tau, int parallelism) {
            return new ClusteringConfig(ClusterRadius.fixed(tau), maxClusterSize, maxReplicas, policy, blockSize, parallelism);
        }

        /** Algorithm 1 as implemented, with this case's settings, on {@code parallelism} threads. */
        Clustering cluster(CoActivationProfile p, double tau, int parallelism) {
            return new CoActivationClustering(config(tau, parallelism)).cluster(p);
        }

        /**
         * The brute-force reference over {@code p} at {@code tau} with caps of one member and one
         * replica: for its exact tests (candidates, Eq. 5, densities), not its clusters.
         */
        BruteForceAlgorithm1 reference(CoActivationProfile p, double tau) {
            return BruteForceAlgorithm1.run(p.entries(), inputs.sets(), p.normaliser(), tau, 1, 1, policy, blockSize);
        }
    }

    @Provide
    Arbitrary<Case> cases() {
        return Combinators.combine(
                        ProfileInputs.arbitrary(300, 140),
                        Arbitraries.of(false, false, false, true),
                        Arbitraries.longs(),
                        Arbitraries.of(1, 2, 3, 8, 50, ClusteringConfig.UNLIMITED),
                        Arbitraries.of(1, 2, 4, ClusteringConfig.UNLIMITED),
                        Arbitraries.of(IsolatedEntryPolicy.values()),
                        Arbitraries.integers().between(1, 20))
                .as(Case::new);
    }

    @Property(tries = 150)
    void equalsTheBruteForceReference(@ForAll("cases") Case c) {
        CoActivationProfile p = c.profile();
        double tau = c.tau(p);
        Clustering fast = c.cluster(p, tau, 2);
        BruteForceAlgorithm1 slow = BruteForceAlgorithm1.run(p.entries(), c.inputs().sets(), p.normaliser(), tau,
                c.maxClusterSize(), c.maxReplicas(), c.policy(), c.blockSize());
        assertSame(slow, fast);
    }

    @Example
    void equalsTheBruteForceReferenceOnTwoThousandEntries() {
        ProfileInputs in = ProfileInputs.generate(2000, 100, 150, 0.02, 7);
        CoActivationProfile p = in.profile(CoActivationNormaliser.perQuery());
        for (double tau : new double[] {0.35, 0.8, 0.95}) {
            for (int replicas : new int[] {4, ClusteringConfig.UNLIMITED}) {
                ClusteringConfig cfg = new ClusteringConfig(ClusterRadius.fixed(tau), 64, replicas,
                        IsolatedEntryPolicy.POSITIONAL_BLOCKS, 16, 2);
                Clustering fast = new CoActivationClustering(cfg).cluster(p);
                assertTrue(fast.coActivationClusters() > 10, "a non-trivial case: " + fast.stats());
                assertSame(BruteForceAlgorithm1.run(2000, in.sets(), p.normaliser(), tau, 64, replicas,
                        IsolatedEntryPolicy.POSITIONAL_BLOCKS, 16), fast);
            }
        }
    }

    @Property(tries = 150)
    void everyEntryIsInACluster(@ForAll("cases") Case c) {
        CoActivationProfile p = c.profile();
        Clustering cl = c.cluster(p, c.tau(p), 2);
        boolean[] seen = new boolean[p.entries()];
        for (int k = 0; k < cl.clusterCount(); k++) {
            for (int e : cl.members(k)) {
                seen[e] = true;
            }
        }
        for (int e = 0; e < seen.length; e++) {
            assertTrue(seen[e], "entry " + e + " is in no cluster");
            assertTrue(cl.replicaCount(e) >= 1);
        }
    }

    /** Every member was within τ of the medoid and satisfied Eq. 5 against the members before it. */
    @Property(tries = 150)
    void everyMemberSatisfiedEq5WhenItJoined(@ForAll("cases") Case c) {
        CoActivationProfile p = c.profile();
        double tau = c.tau(p);
        Clustering cl = c.cluster(p, tau, 2);
        BruteForceAlgorithm1 ref = c.reference(p, tau);
        for (int k = 0; k < cl.coActivationClusters(); k++) {
            int[] m = cl.members(k);
            assertEquals(cl.medoid(k), m[0]);
            assertEquals(0.0, cl.joinDistance(k, 0));
            List<Integer> before = new ArrayList<>(List.of(m[0]));
            for (int i = 1; i < m.length; i++) {
                assertTrue(ref.within(m[0], m[i]), "member " + m[i] + " is not a candidate of medoid " + m[0]);
                assertTrue(ref.joins(m[i], before), "member " + m[i] + " of cluster " + k + " violates Eq. 5");
                double mean = 0;
                for (int b : before) {
                    mean += p.distance(m[i], b);
                }
                mean /= before.size();
                assertEquals(mean, cl.joinDistance(k, i), 1e-9);
                assertTrue(cl.joinDistance(k, i) <= tau + 1e-12);
                before.add(m[i]);
            }
        }
        for (int k = cl.coActivationClusters(); k < cl.clusterCount(); k++) {
            assertTrue(Double.isNaN(cl.joinDistance(k, 0)));
        }
    }

    @Property(tries = 150)
    void medoidsComeInDensityOrderAndCapsHold(@ForAll("cases") Case c) {
        CoActivationProfile p = c.profile();
        double tau = c.tau(p);
        Clustering cl = c.cluster(p, tau, 1);
        BruteForceAlgorithm1 ref = c.reference(p, tau);
        for (int k = 1; k < cl.coActivationClusters(); k++) {
            int prev = ref.density[cl.medoid(k - 1)], now = ref.density[cl.medoid(k)];
            assertTrue(prev > now || (prev == now && cl.medoid(k - 1) < cl.medoid(k)),
                    "medoid queue order broken at cluster " + k);
        }
        for (int k = 0; k < cl.clusterCount(); k++) {
            int limit = k < cl.coActivationClusters() ? c.maxClusterSize()
                    : c.policy() == IsolatedEntryPolicy.SINGLETONS ? 1 : c.blockSize();
            assertTrue(cl.size(k) <= limit, "cluster " + k + " has " + cl.size(k) + " members; cap " + limit);
        }
        for (int e = 0; e < p.entries(); e++) {
            assertTrue(cl.replicaCount(e) <= c.maxReplicas(), "entry " + e + " in " + cl.replicaCount(e) + " clusters");
        }
        ClusteringStats s = cl.stats();
        assertEquals(cl.memberships(), s.memberships());
        assertEquals(cl.memberships() / (double) p.entries(), s.replicationFactor(), 1e-12);
        assertEquals(s.clusters(), s.coActivationClusters() + s.isolatedClusters());
        assertEquals(tau, s.tau());
    }

    @Property(tries = 60)
    void theResultDoesNotDependOnThreadsOrRuns(@ForAll("cases") Case c) {
        CoActivationProfile p = c.profile();
        double tau = c.tau(p);
        Clustering a = c.cluster(p, tau, 1);
        Clustering b = c.cluster(p, tau, 3);
        assertEquals(a.clusterCount(), b.clusterCount());
        for (int k = 0; k < a.clusterCount(); k++) {
            assertArrayEquals(a.members(k), b.members(k));
            assertEquals(a.medoid(k), b.medoid(k));
        }
        assertEquals(ClusterPlacement.of(a, 4).fingerprint(), ClusterPlacement.of(b, 4).fingerprint());
    }

    @Example
    void heavyHittersAreReplicatedOnlyUpToTheCap() {
        // Entry 0 is activated by every query; groups {1..5}, {6..10}, ... each by some.
        List<int[]> sets = new ArrayList<>();
        for (int q = 0; q < 20; q++) {
            List<Integer> s = new ArrayList<>(List.of(0));
            for (int g = 0; g < 6; g++) {
                if ((q + g) % 3 != 0) {
                    for (int e = 1 + 5 * g; e <= 5 + 5 * g; e++) {
                        s.add(e);
                    }
                }
            }
            sets.add(s.stream().mapToInt(Integer::intValue).toArray());
        }
        CoActivationProfile p = CoActivationProfile.fromActivationSets(31, sets, CoActivationNormaliser.perQuery());
        ClusteringConfig cfg = ClusteringConfig.defaults().withRadius(ClusterRadius.fixed(0.5));
        Clustering unlimited = new CoActivationClustering(cfg.withMaxReplicas(ClusteringConfig.UNLIMITED)).cluster(p);
        Clustering capped = new CoActivationClustering(cfg.withMaxReplicas(2)).cluster(p);
        assertTrue(unlimited.replicaCount(0) > 2, "the hub joins every cluster without a cap");
        assertEquals(2, capped.replicaCount(0));
        // The bridge case of §5.1: a group co-activated with two groups that rarely co-activate.
        assertTrue(unlimited.stats().replicationFactor() > 1.0);
    }

    static void assertSame(BruteForceAlgorithm1 slow, Clustering fast) {
        assertEquals(slow.clusters.size(), fast.clusterCount(), "cluster count");
        assertEquals(slow.coActivationClusters, fast.coActivationClusters(), "co-activation clusters");
        for (int k = 0; k < fast.clusterCount(); k++) {
            int kk = k;
            assertArrayEquals(slow.clusters.get(k), fast.members(k),
                    () -> "cluster " + kk + ": " + Arrays.toString(slow.clusters.get(kk)) + " vs " + Arrays.toString(fast.members(kk)));
            assertEquals(slow.medoids.get(k), fast.medoid(k), "medoid of cluster " + k);
        }
    }
}
