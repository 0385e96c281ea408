package io.kvoffload;

import io.kvoffload.testing.Layouts;
import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.strategy.kvswap.GroupOptions;
import io.kvoffload.strategy.kvswap.KvSwap;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.storage.DevicePool;
import io.kvoffload.internal.storage.GroupLayout;
import io.kvoffload.internal.storage.Manifest;
import io.kvoffload.internal.storage.ManifestTamper;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/**
 * The entry checksum covers what the bytes are, not only the bytes: a manifest rewritten with a
 * valid CRC so that a block, a cluster entry or a KVSwap group points at intact bytes of another
 * position, or of another (deleted) sequence, fails every read and decoder fetch with
 * {@link KvChecksumException} instead of returning the wrong KV. Manifests from before format
 * version 5 (plain CRC32C) still read, and stay version 4 when extended.
 */
class EntryIdentityTest {
    /** Three layers: 0 stays in blocks, 1 is clustered, 2 is grouped (where a test lays them out). */
    static final KvShape SHAPE = new KvShape(3, 4, 2, 32, DType.BF16);
    static final int TOKENS = 256;
    static final int BLOCK = 16;
    static final int G = 4;

    @TempDir
    Path root;

    KvConfig config() {
        return TestEngines.config(TestEngines.deviceDirs(root, 2), "portable").blockTokens(BLOCK).build();
    }

    /** Finite K and V (the adapter fit rejects NaN), different per seed; room for the appends of one test. */
    static SyntheticWorkload workload(long seed) {
        return new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS + 3 * BLOCK).seed(seed).build());
    }

    /** Appends tokens {@code [from, from + n)} of {@code seed}'s workload to every layer. */
    static void append(KvSequence s, long seed, int from, int n) {
        s.appendTokens(new int[n]);
        TestEngines.appendKv(s, workload(seed), from, n);
    }

    /** Reads {@code positions} of {@code layer} and returns the first that differs from {@code seed}'s data, or null. */
    static String verify(KvSequence s, long seed, int layer, int[] positions) {
        SyntheticWorkload w = workload(seed);
        int half = SHAPE.halfEntryBytes();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment k = a.allocate((long) positions.length * half);
            MemorySegment v = a.allocate((long) positions.length * half);
            MemorySegment ek = a.allocate(half);
            MemorySegment ev = a.allocate(half);
            s.read(layer, positions, k, v);
            for (int i = 0; i < positions.length; i++) {
                w.writeKv(layer, positions[i], 1, SHAPE.dtype(), ek, ev);
                if (k.asSlice((long) i * half, half).mismatch(ek) != -1
                        || v.asSlice((long) i * half, half).mismatch(ev) != -1) {
                    return "layer " + layer + " position " + positions[i] + " differs";
                }
            }
        }
        return null;
    }

    /** Stores {@code id} with seed {@code seed}: layer 1 in a fixed random cluster plan, layer 2 in groups of G. */
    static void store(KvEngine e, String id, long seed) {
        try (KvSequence s = e.createSequence(id, SHAPE)) {
            append(s, seed, 0, TOKENS);
            s.commit();
            // The same plan for every sequence, so their layouts match entry for entry.
            Layouts.applyClusterPlan(s, 1, ClusterLayoutProperties.randomPlan(new Random(7), TOKENS, 2, 6));
            KvSwap.groupLayer(s, 2, GroupOptions.defaults().withGroupSize(G));
            s.commit();
        }
    }

    static int[] range(int from, int n) {
        int[] p = new int[n];
        for (int i = 0; i < n; i++) {
            p[i] = from + i;
        }
        return p;
    }

    static float[] query(long seed) {
        Random r = new Random(seed);
        float[] q = new float[SHAPE.queryHeads() * SHAPE.headDim()];
        for (int i = 0; i < q.length; i++) {
            q[i] = (float) r.nextGaussian();
        }
        return q;
    }

    static void read(KvSequence s, int layer, int[] positions) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment k = a.allocate((long) positions.length * SHAPE.halfEntryBytes());
            MemorySegment v = a.allocate((long) positions.length * SHAPE.halfEntryBytes());
            s.read(layer, positions, k, v);
        }
    }

    static KvChecksumException assertChecksum(Executable x, String sequence, int layer, int fromToken) {
        KvChecksumException ex = assertThrows(KvChecksumException.class, x);
        assertTrue(ex.getMessage().contains("sequence " + sequence + ", layer " + layer + ","), ex.getMessage());
        if (fromToken >= 0) {
            assertEquals(fromToken, ex.fromToken(), ex.getMessage());
        }
        return ex;
    }

    static DecodeOptions swarmAll() {
        return DecodeOptions.builder().strategy(Swarm.defaults()).cacheBytes(0).sinkTokens(0).localWindow(0).sparsity(1.0).build();
    }

    static DecodeOptions kvswapAll() {
        return DecodeOptions.builder().strategy(Swarm.defaults()).strategy(KvSwap.defaults().withReuseSlots(0)).budgetTokens(2 * TOKENS)
                .sinkTokens(0).localWindow(0).build();
    }

    /** "a" gets positions moved within itself, "c" (same data as "a") gets the deleted "b"'s extents. */
    void storeAndTamper(KvConfig cfg, java.util.function.BiConsumer<Manifest, Manifest> moveWithin,
            java.util.function.BiConsumer<Manifest, Manifest> pointAtOther) throws Exception {
        Manifest other;
        try (KvEngine e = KvEngine.open(cfg)) {
            store(e, "a", 1);
            store(e, "c", 1);
            store(e, "b", 2);
            other = ManifestTamper.read(cfg, "b");
            // Deleting b frees its extents without touching their bytes: intact, checksummed, someone else's KV.
            assertTrue(e.deleteSequence("b"));
        }
        Manifest a = ManifestTamper.read(cfg, "a");
        moveWithin.accept(a, other);
        ManifestTamper.write(cfg, a);
        Manifest c = ManifestTamper.read(cfg, "c");
        pointAtOther.accept(c, other);
        ManifestTamper.write(cfg, c);
    }

    @Test
    void blockExtentsMovedInTheManifestFailReadsAndFetches() throws Exception {
        KvConfig cfg = config();
        storeAndTamper(cfg, (a, b) -> ManifestTamper.swapBlocks(a, 0, 2, 5),
                (c, b) -> ManifestTamper.copyBlock(c, 0, 3, b, 3));
        try (KvEngine e = KvEngine.open(cfg)) {
            assertEquals(2, e.sequences().size(), "both tampered manifests load (they name free, valid extents)");
            try (KvSequence s = e.openSequence("a")) {
                assertChecksum(() -> read(s, 0, range(2 * BLOCK + 1, 3)), "a", 0, 2 * BLOCK);
                assertChecksum(() -> read(s, 0, range(5 * BLOCK, 1)), "a", 0, 5 * BLOCK);
                assertNull(verify(s, 1, 0, range(0, 2 * BLOCK)), "other blocks still read");
                // The decoder's DRAM window loads an unclustered layer's blocks.
                try (KvDecoder d = s.decoder(swarmAll())) {
                    assertChecksum(() -> d.prefetch(0, query(1)).await().close(), "a", 0, -1);
                }
            }
            try (KvSequence s = e.openSequence("c")) {
                assertChecksum(() -> read(s, 0, range(3 * BLOCK, BLOCK)), "c", 0, 3 * BLOCK);
                assertNull(verify(s, 1, 0, range(4 * BLOCK, TOKENS - 4 * BLOCK)));
            }
            assertTrue(e.stats().checksumFailures() >= 4);
        }
    }

    @Test
    void clusterEntriesMovedInTheManifestFailReadsAndFetches() throws Exception {
        KvConfig cfg = config();
        int[][] swapped = new int[1][];
        storeAndTamper(cfg, (a, b) -> swapped[0] = ManifestTamper.swapEntryTokens(a, 1),
                (c, b) -> ManifestTamper.copyClusterSegments(c, 1, b));
        int p = swapped[0][0];
        int q = swapped[0][1];
        try (KvEngine e = KvEngine.open(cfg)) {
            try (KvSequence s = e.openSequence("a")) {
                assertChecksum(() -> read(s, 1, new int[] {p}), "a", 1, p);
                assertChecksum(() -> read(s, 1, new int[] {q}), "a", 1, q);
                int fine = p == 0 || q == 0 ? (p == 1 || q == 1 ? 2 : 1) : 0;
                assertNull(verify(s, 1, 1, new int[] {fine}));
                // Medoids are intact, so the index loads; the fetch of every token meets the moved ones.
                try (KvDecoder d = s.decoder(swarmAll())) {
                    KvView v = d.prefetch(1, query(2));
                    assertChecksum(v::await, "a", 1, -1);
                    assertFalse(v.isReady());
                }
            }
            try (KvSequence s = e.openSequence("c")) {
                assertChecksum(() -> read(s, 1, new int[] {7}), "c", 1, 7);
                try (KvDecoder d = s.decoder(swarmAll())) {
                    // Every entry, medoids included, is b's: the index load or the fetch fails.
                    assertChecksum(() -> d.prefetch(1, query(3)).await().close(), "c", 1, -1);
                }
            }
        }
    }

    @Test
    void groupsMovedInTheManifestFailReadsAndFetches() throws Exception {
        KvConfig cfg = config();
        storeAndTamper(cfg, (a, b) -> ManifestTamper.swapGroupSegments(a, 2),
                (c, b) -> ManifestTamper.copyGroupSegments(c, 2, b));
        try (KvEngine e = KvEngine.open(cfg)) {
            for (String id : new String[] {"a", "c"}) {
                try (KvSequence s = e.openSequence(id)) {
                    assertChecksum(() -> read(s, 2, range(0, G)), id, 2, 0);
                    assertNull(verify(s, 1, 0, range(0, TOKENS)), "layer 0 is untouched");
                    // The KVSwap decoder rebuilds its compressed K cache from the groups first.
                    assertChecksum(() -> {
                        try (KvDecoder d = s.decoder(kvswapAll())) {
                            d.prefetch(2, query(4)).await().close();
                        }
                    }, id, 2, -1);
                }
            }
        }
    }

    @Test
    void groupBytesSwappedUnderALiveDecoderFailItsFetch() throws Exception {
        KvConfig cfg = config();
        try (KvEngine e = KvEngine.open(cfg)) {
            store(e, "a", 1);
            try (KvSequence s = e.openSequence("a"); KvDecoder d = s.decoder(kvswapAll())) {
                d.prefetch(2, query(5)).await().close();
                GroupLayout gl = Layouts.groupLayout(s, 2);
                assertEquals(gl.groupDevice(0), gl.groupDevice(2));
                // Groups 0 and 2 trade places on the device, and their recorded checksums follow the
                // bytes: a misdirected write, say. Only the position in the checksum can tell.
                Path pool = cfg.ssdDirectories().get(gl.groupDevice(0)).resolve(DevicePool.POOL_FILE);
                try (FileChannel ch = FileChannel.open(pool, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                    ByteBuffer g0 = ByteBuffer.allocate(gl.stride());
                    ByteBuffer g2 = ByteBuffer.allocate(gl.stride());
                    ch.read(g0, gl.groupOffset(0));
                    ch.read(g2, gl.groupOffset(2));
                    ch.write(g2.flip(), gl.groupOffset(0));
                    ch.write(g0.flip(), gl.groupOffset(2));
                }
                ManifestTamper.swapGroupChecksums(gl, 0, 2);
                KvView v = d.prefetch(2, query(5));
                KvChecksumException ex = assertChecksum(v::await, "a", 2, -1);
                assertTrue(ex.fromToken() == 0 || ex.fromToken() == 2 * G, ex.getMessage());
            }
        }
    }

    @Test
    void versionFourManifestsStillReadWithPlainChecksumsAndStayVersionFour() throws Exception {
        KvConfig cfg = config();
        try (KvEngine e = KvEngine.open(cfg)) {
            store(e, "old", 1);
        }
        ManifestTamper.write(cfg, ManifestTamper.unsalted(cfg, ManifestTamper.read(cfg, "old")));
        assertEquals(4, ManifestTamper.version(cfg, "old"));
        try (KvEngine e = KvEngine.open(cfg)) {
            try (KvSequence s = e.openSequence("old")) {
                for (int l = 0; l < SHAPE.layers(); l++) {
                    assertNull(verify(s, 1, l, range(0, TOKENS)), "layer " + l);
                }
                try (KvDecoder d = s.decoder(swarmAll())) {
                    d.prefetch(1, query(6)).await().close();
                }
                try (KvDecoder d = s.decoder(kvswapAll())) {
                    d.prefetch(2, query(6)).await().close();
                }
            }
            // Extended and committed again: new blocks get plain checksums too, and the file stays version 4.
            try (KvSequence s = e.openSequenceForAppend("old")) {
                append(s, 1, TOKENS, 3 * BLOCK);
                s.commit();
            }
            assertEquals(4, ManifestTamper.version(cfg, "old"));
            store(e, "new", 1);
            assertEquals(6, ManifestTamper.version(cfg, "new"));
        }
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.openSequence("old")) {
            assertNull(verify(s, 1, 0, range(0, TOKENS + 3 * BLOCK)));
            assertNull(verify(s, 1, 1, range(0, TOKENS + 3 * BLOCK)));
            assertEquals(0, e.stats().checksumFailures());
        }
    }
}
