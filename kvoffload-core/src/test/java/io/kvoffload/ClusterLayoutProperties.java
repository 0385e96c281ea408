package io.kvoffload;

import io.kvoffload.testing.Layouts;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.storage.ClusterPlan;
import io.kvoffload.testing.KvTestData;
import io.kvoffload.testing.TestEngines;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Cluster layouts on the SSDs: one extent per cluster per device, replicas, persistence, integrity. */
class ClusterLayoutProperties {

    /** Random clusters with replication, members spread round robin from a start disk (Eq. 7). */
    static ClusterPlan randomPlan(Random rnd, int tokens, int devices, int maxClusterSize) {
        List<List<Integer>> clusters = new ArrayList<>();
        int[] order = TestEngines.shuffled(rnd, tokens);
        int i = 0;
        while (i < tokens) {
            int size = 1 + rnd.nextInt(maxClusterSize);
            List<Integer> c = new ArrayList<>();
            for (int k = 0; k < size && i < tokens; k++) {
                c.add(order[i++]);
            }
            // Replicas: now and then a member of an earlier cluster joins this one too.
            if (!clusters.isEmpty() && rnd.nextInt(3) == 0) {
                List<Integer> other = clusters.get(rnd.nextInt(clusters.size()));
                int t = other.get(rnd.nextInt(other.size()));
                if (!c.contains(t)) {
                    c.add(t);
                }
            }
            clusters.add(c);
        }
        int[][][] on = new int[clusters.size()][devices][];
        int[] medoid = new int[clusters.size()];
        long p = 0;
        for (int c = 0; c < clusters.size(); c++) {
            List<Integer> members = clusters.get(c);
            medoid[c] = members.get(0);
            int start = (int) (p % devices);
            p += members.size();
            List<List<Integer>> per = new ArrayList<>();
            for (int d = 0; d < devices; d++) {
                per.add(new ArrayList<>());
            }
            for (int k = 0; k < members.size(); k++) {
                per.get((start + k) % devices).add(members.get(k));
            }
            for (int d = 0; d < devices; d++) {
                on[c][d] = per.get(d).stream().mapToInt(Integer::intValue).toArray();
            }
        }
        return new ClusterPlan() {
            @Override
            public int clusteredTokens() {
                return tokens;
            }

            @Override
            public int clusterCount() {
                return on.length;
            }

            @Override
            public int medoid(int cluster) {
                return medoid[cluster];
            }

            @Override
            public double tau() {
                return 0.35;
            }

            @Override
            public int coActivationClusters() {
                return on.length;
            }

            @Override
            public int[] tokensOn(int cluster, int device) {
                return on[cluster][device];
            }
        };
    }

    static String verifyClusters(KvSequence s, long seed, int layer) {
        ClusterLayout cl = Layouts.clusterLayout(s, layer);
        for (int c = 0; c < cl.clusterCount(); c++) {
            String bad = TestEngines.verifySingleLayer(s, seed, layer, cl.members(c));
            if (bad != null) {
                return "cluster " + c + ": " + bad;
            }
            Set<Integer> devs = new HashSet<>();
            for (int g = cl.clusterSegmentStart(c); g < cl.clusterSegmentEnd(c); g++) {
                if (!devs.add(cl.segmentDevice(g))) {
                    return "cluster " + c + " has two extents on device " + cl.segmentDevice(g);
                }
            }
        }
        return null;
    }

    @Property(tries = 15)
    void clusteredLayersPersistAndReadBackBitExact(@ForAll long seed, @ForAll @IntRange(min = 1, max = 4) int devices,
            @ForAll @IntRange(min = 1, max = 40) int maxClusterSize) throws Exception {
        Random rnd = new Random(seed);
        KvShape shape = new KvShape(2, 4, 1 + rnd.nextInt(2), new int[] {8, 64, 512}[rnd.nextInt(3)],
                DType.values()[rnd.nextInt(3)]);
        Path root = Files.createTempDirectory("kvo-cl");
        try {
            KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(root, devices), "portable")
                    .blockTokens(1 + rnd.nextInt(16)).build();
            int tokens = 20 + rnd.nextInt(300);
            int clustered = 1 + rnd.nextInt(tokens);
            ClusterLayout[] built = new ClusterLayout[shape.layers()];
            String id;
            try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.createSequence(shape)) {
                id = s.id();
                TestEngines.append(s, seed, tokens, 1 + rnd.nextInt(100));
                s.commit();
                for (int l = 0; l < shape.layers(); l++) {
                    Layouts.applyClusterPlan(s, l, randomPlan(rnd, clustered, devices, maxClusterSize));
                    built[l] = Layouts.clusterLayout(s, l);
                    assertNull(verifyClusters(s, seed, l)); // before commit
                }
                assertNull(TestEngines.verify(s, seed, TestEngines.all(tokens)));
                s.commit();
                long stored = e.sequences().get(0).storedBytes();
                long used = e.stats().devices().stream().mapToLong(d -> d.capacityBytes() - d.freeBytes()).sum();
                assertEquals(stored, used, "superseded block extents are free after the commit");
            }
            try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.openSequence(id)) {
                for (int l = 0; l < shape.layers(); l++) {
                    ClusterLayout cl = Layouts.clusterLayout(s, l);
                    assertNotNull(cl);
                    assertEquals(built[l].clusterCount(), cl.clusterCount());
                    for (int c = 0; c < cl.clusterCount(); c++) {
                        assertEquals(built[l].medoid(c), cl.medoid(c));
                        assertArrayEquals(built[l].members(c), cl.members(c), "persisted clusters equal the built ones");
                    }
                    assertNull(verifyClusters(s, seed, l));
                }
                Random r2 = new Random(seed + 1);
                int[] random = new int[200];
                for (int i = 0; i < random.length; i++) {
                    random[i] = r2.nextInt(tokens);
                }
                assertNull(TestEngines.verify(s, seed, random));
                assertNull(TestEngines.verify(s, seed, TestEngines.all(tokens)));
            }
        } finally {
            TestEngines.deleteRecursively(root);
        }
    }

    @Test
    void aCorruptedClusteredEntryIsReportedWithItsToken(@TempDir Path root) throws Exception {
        KvShape shape = new KvShape(1, 8, 8, 128, DType.BF16); // 4 KiB entries: each entry is aligned
        KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(root, 1), "portable").blockTokens(4).build();
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.createSequence("c", shape)) {
            TestEngines.append(s, 9, 8, 8);
            s.commit();
            Layouts.applyClusterPlan(s, 0, randomPlan(new Random(3), 8, 1, 8));
            s.commit();
            ClusterLayout cl = Layouts.clusterLayout(s, 0);
            int victim = cl.replica(5, 0);
            long off = cl.entryOffset(victim);
            try (FileChannel ch = FileChannel.open(cfg.ssdDirectories().get(0).resolve("kvoffload.pool"),
                    StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                ch.write(ByteBuffer.wrap(new byte[] {0x5A, 0x5A}), off + 100);
            }
        }
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.openSequence("c"); Arena arena = Arena.ofConfined()) {
            MemorySegment k = arena.allocate(shape.halfEntryBytes());
            MemorySegment v = arena.allocate(shape.halfEntryBytes());
            KvChecksumException ex = assertThrows(KvChecksumException.class, () -> s.read(0, new int[] {5}, k, v));
            assertEquals(5, ex.fromToken());
            assertEquals(6, ex.toToken());
            assertTrue(ex.getMessage().contains("sequence c, layer 0, tokens 5..5"), ex.getMessage());
            assertNull(TestEngines.verifySingleLayer(s, 9, 0, new int[] {4, 6, 7}));
        }
    }

    @Test
    void decodeTokensAfterTheClusteredRangeStayInBlocks(@TempDir Path root) throws Exception {
        KvShape shape = new KvShape(1, 2, 1, 16, DType.F32);
        KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(root, 2), "portable").blockTokens(4).build();
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.createSequence("d", shape)) {
            TestEngines.append(s, 4, 10, 10);
            s.commit();
            Layouts.applyClusterPlan(s, 0, randomPlan(new Random(1), 10, 2, 3));
            s.commit();
            TestEngines.append(s, 4, 7, 1); // tokens 10..16: block 2 (8..11) mixes both layouts
            s.commit();
        }
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.openSequence("d")) {
            assertNull(TestEngines.verify(s, 4, TestEngines.all(17)));
            assertNull(TestEngines.verify(s, 4, new int[] {16, 0, 9, 10, 9, 16, 3}));
        }
    }
}
