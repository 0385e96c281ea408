package io.kvoffload;

import io.kvoffload.testing.Layouts;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.storage.ClusterLayoutWriter;
import io.kvoffload.internal.storage.EntryChecksum;
import io.kvoffload.internal.storage.Manifest;
import io.kvoffload.internal.storage.ManifestCodec;
import io.kvoffload.internal.storage.Store;
import io.kvoffload.internal.swarm.ClusteringConfig;
import io.kvoffload.internal.swarm.MaintenancePolicy;
import io.kvoffload.internal.swarm.OnlineClusterMaintenance;
import io.kvoffload.spi.IoBatch;
import io.kvoffload.testing.KvTestData;
import io.kvoffload.testing.TestEngines;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.zip.CRC32C;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Online cluster maintenance written to the real store: {@link ClusterLayoutWriter#append} after
 * {@link OnlineClusterMaintenance} assigned the tokens that left the window. The extended layout
 * persists (manifest round trip), reopens and reads back bit-exact through the engine's clustered
 * read path, each entry against its own CRC32C.
 */
class ClusterLayoutAppendProperties {

    /** K and V of the test data, as the writer's source reads them. */
    private static ClusterLayoutWriter.Source source(KvShape shape, long seed, int layer) {
        return (positions, k, v) -> {
            int half = shape.halfEntryBytes();
            for (int i = 0; i < positions.length; i++) {
                KvTestData.fill(k.asSlice((long) i * half, half), shape, seed, layer, positions[i], 1, false);
                KvTestData.fill(v.asSlice((long) i * half, half), shape, seed, layer, positions[i], 1, true);
            }
        };
    }

    @Property(tries = 12)
    void appendedTokensPersistAndReadBackBitExact(@ForAll long seed, @ForAll @IntRange(min = 1, max = 4) int devices,
            @ForAll @IntRange(min = 1, max = 3) int appends) throws Exception {
        Random rnd = new Random(seed);
        KvShape shape = new KvShape(2, 4, 1 + rnd.nextInt(2), new int[] {8, 64, 512}[rnd.nextInt(3)],
                DType.values()[rnd.nextInt(3)]);
        Path root = Files.createTempDirectory("kvo-append");
        try {
            KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(root, devices), "portable")
                    .blockTokens(1 + rnd.nextInt(16)).build();
            int tokens = 60 + rnd.nextInt(200);
            int clustered = 20 + rnd.nextInt(tokens - 40);
            String id;
            try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.createSequence(shape)) {
                id = s.id();
                TestEngines.append(s, seed, tokens, 1 + rnd.nextInt(64));
                s.commit();
                for (int l = 0; l < shape.layers(); l++) {
                    Layouts.applyClusterPlan(s, l, ClusterLayoutProperties.randomPlan(rnd, clustered, devices, 12));
                }
                s.commit();
            }
            // Grow each layer's layout as a decoder would, straight through the store.
            ClusterLayout[] grown = new ClusterLayout[shape.layers()];
            try (Store store = new Store(cfg)) {
                Manifest m = store.catalog().get(id).manifest();
                ClusterLayout[] layouts = m.clusters().clone();
                for (int l = 0; l < shape.layers(); l++) {
                    ClusterLayout cl = layouts[l];
                    int next = cl.clusteredTokens();
                    for (int a = 0; a < appends && next < tokens; a++) {
                        int n = Math.min(tokens - next, 1 + rnd.nextInt(20));
                        ClusterLayout before = cl;
                        int[] tok = new int[n];
                        int[] start = new int[n + 1];
                        List<Integer> ids = new ArrayList<>();
                        int clusters = cl.clusterCount();
                        for (int i = 0; i < n; i++) {
                            tok[i] = next + i;
                            Set<Integer> mine = new HashSet<>();
                            if (rnd.nextInt(4) == 0) {
                                mine.add(clusters++); // a new cluster with this token as medoid
                            }
                            int joins = mine.isEmpty() ? 1 + rnd.nextInt(3) : rnd.nextInt(2);
                            for (int j = 0; j < joins; j++) {
                                mine.add(rnd.nextInt(clusters));
                            }
                            List<Integer> sorted = new ArrayList<>(mine);
                            // the new cluster must be named first if it is this token's: ids ascending do that
                            sorted.sort(null);
                            ids.addAll(sorted);
                            start[i + 1] = ids.size();
                        }
                        int[] ci = ids.stream().mapToInt(Integer::intValue).toArray();
                        cl = ClusterLayoutWriter.append(store, id, EntryChecksum.forSequence(id), l, shape, cl, tok,
                                start, ci, source(shape, seed, l));
                        assertEquals(next + n, cl.clusteredTokens(), "the clustered tokens stay a prefix");
                        assertEquals(clusters, cl.clusterCount());
                        for (int i = 0; i < n; i++) {
                            assertEquals(start[i + 1] - start[i], cl.replicaCount(tok[i]), "one copy per cluster joined");
                        }
                        for (int c = 0; c < before.clusterCount(); c++) {
                            int[] old = before.members(c);
                            int[] now = cl.members(c);
                            assertArrayEquals(old, java.util.Arrays.copyOf(now, old.length), "old members stay first");
                        }
                        // Each new segment is one (cluster, device) share of this append, aligned, and
                        // each existing cluster's appended members went round robin from its next device.
                        int[] added = cl.segmentsAddedSince(before);
                        Set<Long> shares = new HashSet<>();
                        for (int g : added) {
                            int c = clusterOf(cl, g);
                            assertTrue(shares.add((long) c << 16 | cl.segmentDevice(g)), "one extent per cluster per device");
                            assertEquals(0, cl.segmentOffset(g) % 512);
                            assertEquals(0, cl.segmentLength(g) % 512);
                        }
                        for (int c = 0; c < before.clusterCount(); c++) {
                            int appended = cl.size(c) - before.size(c);
                            assertEquals((before.nextDevice(c) + appended) % devices, cl.nextDevice(c),
                                    "the round robin continues");
                        }
                        next += n;
                    }
                    grown[l] = cl;
                    layouts[l] = cl;
                    assertNull(readBackRaw(store, id, cl, shape, seed, l));
                }
                Manifest updated = new Manifest(m.id(), m.shape(), m.blockTokens(), m.deviceUuids(), m.tokenIds(),
                        m.layers(), layouts, System.currentTimeMillis(), m.commitNumber() + 1);
                Manifest decoded = ManifestCodec.decode(ManifestCodec.encode(updated));
                for (int l = 0; l < shape.layers(); l++) {
                    assertSameLayout(grown[l], decoded.clusters()[l]);
                }
                store.commit(updated, List.of());
            }
            try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.openSequence(id)) {
                for (int l = 0; l < shape.layers(); l++) {
                    assertSameLayout(grown[l], Layouts.clusterLayout(s, l));
                    for (int c = 0; c < grown[l].clusterCount(); c++) {
                        assertNull(TestEngines.verifySingleLayer(s, seed, l, grown[l].members(c)), "cluster " + c);
                    }
                }
                assertNull(TestEngines.verify(s, seed, TestEngines.all(tokens)));
                long stored = e.sequences().get(0).storedBytes();
                long used = e.stats().devices().stream().mapToLong(d -> d.capacityBytes() - d.freeBytes()).sum();
                assertEquals(stored, used, "every extent the extended layouts name is accounted for, none leaked");
            }
        } finally {
            TestEngines.deleteRecursively(root);
        }
    }

    private static int clusterOf(ClusterLayout cl, int segment) {
        for (int c = 0; c < cl.clusterCount(); c++) {
            if (segment >= cl.clusterSegmentStart(c) && segment < cl.clusterSegmentEnd(c)) {
                return c;
            }
        }
        throw new AssertionError("segment " + segment + " in no cluster");
    }

    private static void assertSameLayout(ClusterLayout a, ClusterLayout b) {
        assertEquals(a.clusteredTokens(), b.clusteredTokens());
        assertEquals(a.clusterCount(), b.clusterCount());
        assertEquals(a.storedEntries(), b.storedEntries());
        for (int c = 0; c < a.clusterCount(); c++) {
            assertEquals(a.medoid(c), b.medoid(c));
            assertEquals(a.nextDevice(c), b.nextDevice(c));
            assertArrayEquals(a.members(c), b.members(c));
        }
        for (int e = 0; e < a.storedEntries(); e++) {
            assertEquals(a.entryOffset(e), b.entryOffset(e));
            assertEquals(a.entryCrc(e), b.entryCrc(e));
        }
    }

    /** Reads every stored entry of the layout back from its extent and checks bytes and checksum. */
    private static String readBackRaw(Store store, String id, ClusterLayout cl, KvShape shape, long seed, int layer) {
        int entry = shape.entryBytes();
        int half = shape.halfEntryBytes();
        IoBatch batch = store.backend().newBatch(1);
        CRC32C crc = new CRC32C();
        try (Arena arena = Arena.ofShared()) { // the backend's threads fill the buffers
            for (int g = 0; g < cl.segmentCount(); g++) {
                MemorySegment buf = arena.allocate(cl.segmentLength(g), 4096);
                batch.addRead(cl.segmentDevice(g), cl.segmentOffset(g), buf, g);
                store.backend().execute(batch);
                batch.clear();
                MemorySegment k = arena.allocate(half);
                MemorySegment v = arena.allocate(half);
                int first = -1;
                for (int e = 0; e < cl.storedEntries(); e++) {
                    if (cl.entryDevice(e) == cl.segmentDevice(g) && cl.entryOffset(e) == cl.segmentOffset(g)) {
                        first = e;
                    }
                }
                int n = (int) Math.min(cl.storedEntries() - first, cl.segmentLength(g) / entry);
                for (int i = 0; i < n && cl.entryDevice(first + i) == cl.segmentDevice(g)
                        && cl.entryOffset(first + i) == cl.segmentOffset(g) + (long) i * entry; i++) {
                    MemorySegment src = buf.asSlice((long) i * entry, entry);
                    int sum = EntryChecksum.forSequence(id).compute(crc, EntryChecksum.Kind.ENTRY, layer,
                            cl.entryToken(first + i), src.asByteBuffer());
                    if (sum != cl.entryCrc(first + i)) {
                        return "segment " + g + " entry " + i + ": checksum mismatch";
                    }
                    int t = cl.entryToken(first + i);
                    KvTestData.fill(k, shape, seed, layer, t, 1, false);
                    KvTestData.fill(v, shape, seed, layer, t, 1, true);
                    if (src.asSlice(0, half).mismatch(k) != -1 || src.asSlice(half, half).mismatch(v) != -1) {
                        return "segment " + g + " entry " + i + " (token " + t + "): bytes differ";
                    }
                }
            }
        }
        return null;
    }

    @Test
    void maintenanceAssignmentsFeedTheWriterAndBadAppendsAreRejected(@TempDir Path root) throws Exception {
        KvShape shape = new KvShape(1, 2, 1, 16, DType.F32);
        KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(root, 3), "portable").blockTokens(4).build();
        String id;
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.createSequence("m", shape)) {
            id = s.id();
            TestEngines.append(s, 5, 40, 8);
            s.commit();
            Layouts.applyClusterPlan(s, 0, ClusterLayoutProperties.randomPlan(new Random(2), 30, 3, 6));
            s.commit();
        }
        try (Store store = new Store(cfg)) {
            ClusterLayout cl = store.catalog().get(id).manifest().clusters()[0];
            EntryChecksum sum = EntryChecksum.forSequence(id);
            long[] sizes = new long[cl.clusterCount()];
            for (int c = 0; c < sizes.length; c++) {
                sizes[c] = cl.size(c);
            }
            OnlineClusterMaintenance om = new OnlineClusterMaintenance(MaintenancePolicy.SWARM, cl.medoids(), sizes,
                    cl.tau(), 4, 8, ClusteringConfig.UNLIMITED, null);
            // Tokens 30..33 sit in the window; 30 and 31 co-activate with cluster 0 every step.
            for (int t = 30; t < 34; t++) {
                om.admit(t);
            }
            for (int step = 0; step < 4; step++) {
                om.observeStep(new int[] {0}, 1, new int[] {30, 31}, 2);
            }
            om.evict(30);
            om.evict(31);
            om.evict(32); // never activated: a new cluster
            OnlineClusterMaintenance.Assignments a = om.drainAssignments();
            ClusterLayout grown = ClusterLayoutWriter.append(store, id, sum, 0, shape, cl, a.tokens(),
                    a.clusterStart(), a.clusterIds(), source(shape, 5, 0));
            assertEquals(33, grown.clusteredTokens());
            assertEquals(cl.clusterCount() + 1, grown.clusterCount());
            assertEquals(32, grown.medoid(cl.clusterCount()));
            int[] members0 = grown.members(0);
            int n0 = members0.length;
            assertEquals(Set.of(30, 31), Set.of(members0[n0 - 2], members0[n0 - 1]), "both joined cluster 0, last");
            assertEquals(1, grown.replicaCount(30));
            assertNull(readBackRaw(store, id, grown, shape, 5, 0));

            int[] one = {33};
            int[] st = {0, 1};
            var ex = assertThrows(IllegalArgumentException.class, () -> ClusterLayoutWriter.append(store, id, sum, 0,
                    shape, cl, new int[] {31}, st, new int[] {0}, source(shape, 5, 0)));
            assertTrue(ex.getMessage().contains("tokens[0] = 31") && ex.getMessage().contains("30..30"),
                    ex.getMessage());
            ex = assertThrows(IllegalArgumentException.class, () -> ClusterLayoutWriter.append(store, id, sum, 0,
                    shape, grown, one, st, new int[] {grown.clusterCount() + 1}, source(shape, 5, 0)));
            assertTrue(ex.getMessage().contains("clusterIds[0] = " + (grown.clusterCount() + 1)), ex.getMessage());
            ex = assertThrows(IllegalArgumentException.class, () -> ClusterLayoutWriter.append(store, id, sum, 0,
                    shape, grown, one, new int[] {0, 2}, new int[] {1, 1}, source(shape, 5, 0)));
            assertTrue(ex.getMessage().contains("distinct"), ex.getMessage());
            ex = assertThrows(IllegalArgumentException.class, () -> ClusterLayoutWriter.append(store, id, sum, 0,
                    shape, grown, one, new int[] {0, 0}, new int[0], source(shape, 5, 0)));
            assertTrue(ex.getMessage().contains("at least one cluster"), ex.getMessage());
            ex = assertThrows(IllegalArgumentException.class, () -> ClusterLayoutWriter.append(store, id,
                    sum, 0, new KvShape(1, 2, 1, 32, DType.F32), grown, one, st, new int[] {0}, source(shape, 5, 0)));
            assertTrue(ex.getMessage().contains("shape.entryBytes()"), ex.getMessage());
            long free = store.devices().stream().mapToLong(d -> d.allocator().freeBytes()).sum();
            assertThrows(IllegalStateException.class, () -> ClusterLayoutWriter.append(store, id, sum, 0,
                    shape, grown, one, st, new int[] {0}, (p, k, v) -> {
                        throw new IllegalStateException("source failed");
                    }));
            assertEquals(free, store.devices().stream().mapToLong(d -> d.allocator().freeBytes()).sum(),
                    "a failed append frees what it allocated");
        }
    }
}
