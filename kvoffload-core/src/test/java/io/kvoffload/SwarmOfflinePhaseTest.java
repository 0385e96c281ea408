package io.kvoffload;

import io.kvoffload.testing.Layouts;
import io.kvoffload.strategy.swarm.Swarm;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.strategy.swarm.ClusterSummary;
import io.kvoffload.strategy.swarm.ClusterOptions;
import io.kvoffload.internal.swarm.MedoidIndex;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Swarm offline phase on a stored sequence: profile, cluster, place on all SSDs, persist; after
 * a restart the clusters, the medoid index and every byte are the same.
 */
class SwarmOfflinePhaseTest {
    static final KvShape SHAPE = new KvShape(2, 8, 2, 64, DType.BF16);
    static final int TOKENS = 4096;

    @TempDir
    Path root;

    static void store(KvSequence seq, SyntheticWorkload w) {
        int[] ids = new int[TOKENS];
        for (int t = 0; t < TOKENS; t++) {
            ids[t] = t % 32000;
        }
        seq.appendTokens(ids);
        TestEngines.appendKv(seq, w, 0, TOKENS);
    }

    /**
     * What the first {@code steps} decoding steps of {@code layer} activate: per step, the tokens
     * (of the first {@code tokens}) whose primary group, or with {@code bridges} also whose
     * secondary group, the step attends, ascending.
     */
    static List<int[]> activationSets(SyntheticWorkload w, int layer, int steps, int tokens, boolean bridges) {
        List<int[]> sets = new ArrayList<>();
        for (int step = 0; step < steps; step++) {
            int[] groups = w.activeGroups(layer, step);
            BitSet act = new BitSet();
            for (int t = 0; t < tokens; t++) {
                for (int g : groups) {
                    if (w.primaryGroup(layer, t) == g || (bridges && w.secondaryGroup(layer, t) == g)) {
                        act.set(t);
                    }
                }
            }
            sets.add(act.stream().toArray());
        }
        return sets;
    }

    static byte[][] expected(SyntheticWorkload w, int layer) {
        return TestEngines.kvBytes(w, layer, TOKENS);
    }

    /** {@link #expected(SyntheticWorkload, int)} of every layer: {@code [layer][K|V][bytes]}. */
    static byte[][][] expected(SyntheticWorkload w) {
        byte[][][] out = new byte[SHAPE.layers()][][];
        for (int l = 0; l < SHAPE.layers(); l++) {
            out[l] = expected(w, l);
        }
        return out;
    }

    /** Reads every cluster whole and compares with what the workload generated. */
    static void assertClustersBitExact(KvSequence s, SyntheticWorkload w, int layer) {
        byte[][] exp = expected(w, layer);
        int half = SHAPE.halfEntryBytes();
        BitSet covered = new BitSet();
        try (Arena arena = Arena.ofConfined()) {
            for (int c = 0; c < Swarm.clusterCount(s, layer); c++) {
                int[] members = Swarm.clusterMembers(s, layer, c);
                MemorySegment k = arena.allocate((long) members.length * half);
                MemorySegment v = arena.allocate((long) members.length * half);
                s.read(layer, members, k, v);
                for (int i = 0; i < members.length; i++) {
                    MemorySegment ek = MemorySegment.ofArray(exp[0]).asSlice((long) members[i] * half, half);
                    MemorySegment ev = MemorySegment.ofArray(exp[1]).asSlice((long) members[i] * half, half);
                    assertEquals(-1, k.asSlice((long) i * half, half).mismatch(ek), "cluster " + c + " K of " + members[i]);
                    assertEquals(-1, v.asSlice((long) i * half, half).mismatch(ev), "cluster " + c + " V of " + members[i]);
                    covered.set(members[i]);
                }
            }
        }
        assertEquals(TOKENS, covered.cardinality(), "every token is in some cluster");
    }

    @Test
    void clustersPersistWithTheirMedoidIndexAndReadBackBitExact() throws Exception {
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(5).build());
        KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(root, 4), "portable").blockTokens(16).build();
        List<float[]> queries = new ArrayList<>();
        for (int step = 0; step < 32; step++) {
            queries.add(w.query(0, step));
        }
        List<int[]> sets = activationSets(w, 1, 32, TOKENS, true);
        int[][] members0;
        int[] top;
        float[] probe = w.query(0, 100);
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.createSequence("swarm", SHAPE)) {
            store(s, w);
            s.commit();
            ClusterSummary q = Swarm.clusterLayerFromQueries(s, 0, queries, ClusterOptions.defaults());
            ClusterSummary a = Swarm.clusterLayer(s, 1, sets, ClusterOptions.defaults().withRadius(0.5));
            assertEquals(TOKENS, q.tokens());
            assertTrue(q.clusters() > 0 && a.coActivationClusters() > 0, q + " / " + a);
            assertTrue(a.replicationFactor() >= 1.0 && a.replicationFactor() <= 4.0, a.toString());
            // The stored keys are BF16 values, so the index holds them as BF16 (2 bytes an element).
            assertEquals(2, Layouts.medoidIndex(s, 0).elementBytes());
            assertTrue(q.medoidIndexBytes() >= (long) q.clusters() * SHAPE.kvHeads() * SHAPE.headDim() * 2);
            assertClustersBitExact(s, w, 0); // before commit
            s.commit();
            members0 = new int[Swarm.clusterCount(s, 0)][];
            for (int c = 0; c < members0.length; c++) {
                members0[c] = Swarm.clusterMembers(s, 0, c);
            }
            top = Layouts.medoidIndex(s, 0).top(probe, 5);
            long stored = e.sequences().get(0).storedBytes();
            long used = e.stats().devices().stream().mapToLong(d -> d.capacityBytes() - d.freeBytes()).sum();
            assertEquals(stored, used, "the block copies of clustered tokens are free after the commit");
        }
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.openSequence("swarm")) {
            assertEquals(members0.length, Swarm.clusterCount(s, 0));
            for (int c = 0; c < members0.length; c++) {
                assertArrayEquals(members0[c], Swarm.clusterMembers(s, 0, c), "persisted clusters equal the built ones");
            }
            MedoidIndex index = Layouts.medoidIndex(s, 0);
            assertArrayEquals(top, index.top(probe, 5), "the rebuilt medoid index ranks clusters the same");
            assertClustersBitExact(s, w, 0);
            assertClustersBitExact(s, w, 1);
            // Reading one cluster takes one read per device holding a share of it, plus at most one per
            // member whose balanced copy lives in another cluster's extent.
            int c = 0;
            int[] m = Swarm.clusterMembers(s, 0, c);
            long before = e.stats().devices().stream().mapToLong(KvStats.Device::reads).sum();
            try (Arena arena = Arena.ofConfined()) {
                s.read(0, m, arena.allocate((long) m.length * SHAPE.halfEntryBytes()),
                        arena.allocate((long) m.length * SHAPE.halfEntryBytes()));
            }
            long reads = e.stats().devices().stream().mapToLong(KvStats.Device::reads).sum() - before;
            // Replicas live on other devices than the cluster's own copy (ReplicaSpread), so the balancer
            // may take any member that also belongs to another cluster from that cluster's extent.
            java.util.Set<Integer> elsewhere = new java.util.HashSet<>();
            for (int o = 1; o < Swarm.clusterCount(s, 0); o++) {
                for (int t : Swarm.clusterMembers(s, 0, o)) {
                    elsewhere.add(t);
                }
            }
            long shared = java.util.Arrays.stream(m).filter(elsewhere::contains).count();
            assertTrue(reads <= Math.min(4, m.length) + shared, "reads for one cluster: " + reads + " with " + shared
                    + " of " + m.length + " members also in other clusters");
        }
    }

    @Test
    void badClusterArgumentsAreNamed() throws Exception {
        KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(root, 1), "portable").build();
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.createSequence(SHAPE)) {
            TestEngines.append(s, 1, 100, 100);
            assertThrows(IllegalArgumentException.class, () -> Swarm.clusterLayer(s, 2, List.of(new int[] {1}),
                    ClusterOptions.defaults()), "layer = 2");
            var ex = assertThrows(IllegalArgumentException.class, () -> Swarm.clusterLayer(s, 0, List.of(new int[] {100}),
                    ClusterOptions.defaults()));
            assertTrue(ex.getMessage().contains("100"), ex.getMessage());
            var ex2 = assertThrows(IllegalArgumentException.class, () -> ClusterOptions.defaults().withRadius(1.5));
            assertTrue(ex2.getMessage().contains("radius = 1.5"), ex2.getMessage());
            var ex3 = assertThrows(IllegalStateException.class, () -> Layouts.medoidIndex(s, 0));
            assertTrue(ex3.getMessage().contains("not clustered"), ex3.getMessage());
            assertEquals(0, Swarm.clusterCount(s, 0));
        }
    }
}
