package io.kvoffload.internal.swarm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.attention.ExactAttention;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.internal.util.TopK;
import io.kvoffload.workload.WorkloadSpec;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Eq. 2–3 on hand-computed cases, and the two ways a profile is made. */
class ProfileTest {
    // q0 = {0,1,2}, q1 = {0,1}, q2 = {1,3}, q3 = {} ; entry 4 never activated
    private static final List<int[]> SETS = List.of(new int[] {0, 1, 2}, new int[] {0, 1, 1}, new int[] {1, 3}, new int[0]);

    @Test
    void countsProbabilitiesAndDistances() {
        CoActivationProfile p = CoActivationProfile.fromActivationSets(5, SETS, CoActivationNormaliser.perQuery());
        assertEquals(4, p.queries());
        assertEquals(4, p.normaliser());
        assertEquals(2, p.activations(0));
        assertEquals(3, p.activations(1));
        assertEquals(0, p.activations(4));
        assertEquals(2, p.coActivations(0, 1));
        assertEquals(2, p.coActivations(1, 0));
        assertEquals(1, p.coActivations(1, 3));
        assertEquals(0, p.coActivations(2, 3));
        assertEquals(0.5, p.probability(0, 1));
        assertEquals(0.5, p.distance(0, 1));
        assertEquals(1.0, p.distance(2, 3));
        assertEquals(2, p.activationSetSize(1)); // the duplicate 1 counts once
        assertTrue(p.activated(3, 2));
        assertFalse(p.activated(3, 1));
        assertEquals(8L * 5 + 4L * 5 + 8L * 4, p.memoryBytes());
    }

    @Test
    void sumOfCountsNormalisesByAllPairs() {
        CoActivationProfile p = CoActivationProfile.fromActivationSets(5, SETS, CoActivationNormaliser.sumOfCounts());
        assertEquals(3 + 1 + 1, p.normaliser()); // C(3,2) + C(2,2) + C(2,2) + 0
        assertEquals(0.4, p.probability(0, 1));
        CoActivationProfile none = CoActivationProfile.fromActivationSets(2, List.of(new int[] {0}),
                CoActivationNormaliser.sumOfCounts());
        assertEquals(1, none.normaliser());
        CoActivationProfile custom = CoActivationProfile.fromActivationSets(5, SETS, (q, sizes) -> 100);
        assertEquals(0.02, custom.probability(0, 1));
        assertMessage(() -> CoActivationProfile.fromActivationSets(5, SETS, (q, sizes) -> 0), "Z = 0", "1..");
    }

    @Test
    void profilingQueriesTakesTheExactTopKOfEachQuery() {
        KvShape shape = new KvShape(1, 4, 2, 32, DType.F32);
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(shape, 1000).build());
        DenseLayerKv kv = DenseLayerKv.materialize(w.layer(0), false);
        List<float[]> queries = new ArrayList<>();
        for (int s = 0; s < 70; s++) { // more than 64: two bitmap words
            queries.add(w.query(0, s));
        }
        BitSet pinned = new BitSet();
        pinned.set(0, 4); // the sinks
        pinned.set(990, 1000); // the newest tokens
        CoActivationProfile p = CoActivationProfile.fromQueries(kv, queries, 4, 0.1, pinned,
                CoActivationNormaliser.perQuery(), 2);
        ExactAttention attention = ExactAttention.of(shape);
        List<int[]> expected = new ArrayList<>();
        for (float[] q : queries) {
            float[] weights = attention.weights(kv, q);
            for (int e = pinned.nextSetBit(0); e >= 0; e = pinned.nextSetBit(e + 1)) {
                weights[e] = Float.NEGATIVE_INFINITY;
            }
            expected.add(TopK.indices(weights, 99)); // ⌈0.1 × 986⌉
        }
        CoActivationProfile ref = CoActivationProfile.fromActivationSets(1000, expected, CoActivationNormaliser.perQuery());
        for (int e = 0; e < 1000; e++) {
            for (int q = 0; q < 70; q++) {
                assertEquals(ref.activated(e, q), p.activated(e, q));
            }
        }
        for (int e = 0; e < 4; e++) {
            assertEquals(0, p.activations(e), "pinned sink " + e);
        }
        assertEquals(99, p.activationSetSize(69));
        CoActivationProfile sequential = CoActivationProfile.fromQueries(kv, queries, 4, 0.1, pinned,
                CoActivationNormaliser.perQuery(), 1);
        assertEquals(p.coActivations(10, 20), sequential.coActivations(10, 20));
    }

    @Test
    void rejectsBadInput() {
        assertMessage(() -> CoActivationProfile.fromActivationSets(3, List.of(new int[] {3}), CoActivationNormaliser.perQuery()),
                "activationSets[0] entry = 3", "0..2");
        assertMessage(() -> CoActivationProfile.fromActivationSets(0, List.of(new int[0]), CoActivationNormaliser.perQuery()),
                "entries = 0");
        assertMessage(() -> CoActivationProfile.fromActivationSets(3, List.of(), CoActivationNormaliser.perQuery()),
                "queries = 0", "1..65536");
        CoActivationProfile p = CoActivationProfile.fromActivationSets(5, SETS, CoActivationNormaliser.perQuery());
        assertMessage(() -> p.coActivations(0, 5), "j = 5", "0..4");
        assertMessage(() -> p.activationSetSize(4), "query = 4", "0..3");
        KvShape shape = new KvShape(1, 2, 1, 8, DType.F32);
        DenseLayerKv kv = DenseLayerKv.materialize(new SyntheticWorkload(WorkloadSpec.builder(shape, 10).build()).layer(0), false);
        List<float[]> q = List.of(new float[16]);
        assertMessage(() -> CoActivationProfile.fromQueries(kv, q, 2, 0, null, CoActivationNormaliser.perQuery(), 1),
                "sparsityRatio = 0.0", "(0, 1]");
        assertMessage(() -> CoActivationProfile.fromQueries(kv, q, 2, 0.1, null, CoActivationNormaliser.perQuery(), 0),
                "parallelism = 0", "1..256");
        BitSet all = new BitSet();
        all.set(0, 10);
        assertMessage(() -> CoActivationProfile.fromQueries(kv, q, 2, 0.1, all, CoActivationNormaliser.perQuery(), 1),
                "excluded covers all 10 entries");
        BitSet beyond = new BitSet();
        beyond.set(10);
        assertMessage(() -> CoActivationProfile.fromQueries(kv, q, 2, 0.1, beyond, CoActivationNormaliser.perQuery(), 1),
                "excluded holds entry 10", "0..9");
        assertMessage(() -> CoActivationProfile.fromQueries(kv, List.of(new float[3]), 2, 0.1, null,
                CoActivationNormaliser.perQuery(), 1), "query.length = 3");
    }

    @Test
    void clusteringConfigRejectsOutOfRangeSettings() {
        ClusteringConfig d = ClusteringConfig.defaults();
        assertMessage(() -> d.withMaxClusterSize(0), "maxClusterSize = 0", "1..1073741824");
        assertMessage(() -> d.withMaxReplicas(0), "maxReplicas = 0", "1..1073741824");
        assertMessage(() -> d.withIsolatedPolicy(IsolatedEntryPolicy.POSITIONAL_BLOCKS, 0), "isolatedBlockSize = 0");
        assertMessage(() -> d.withParallelism(257), "parallelism = 257", "1..256");
        assertThrows(NullPointerException.class, () -> d.withRadius(null));
    }

    static void assertMessage(Runnable r, String... parts) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, r::run);
        for (String s : parts) {
            assertTrue(e.getMessage().contains(s), "message \"" + e.getMessage() + "\" lacks \"" + s + "\"");
        }
    }
}
