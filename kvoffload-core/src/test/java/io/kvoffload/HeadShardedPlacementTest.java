package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.strategy.Strategies;
import io.kvoffload.strategy.swarm.ClusterOptions;
import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.testing.KvTestData;
import io.kvoffload.testing.KvViews;
import io.kvoffload.testing.Layouts;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.BitSet;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link Placement#HEAD_SHARDED}: the default page layout (layer 0) and Swarm's clusters with
 * replicas (layer 1) stored as head-group shards, one group per device; reads and decoder views
 * reassemble them bit-exact on 1..4 real directories, across a restart, and a damaged shard is
 * detected (and served from its replica where the token has one).
 */
class HeadShardedPlacementTest {
    static final KvShape SHAPE = new KvShape(2, 8, 4, 16, DType.BF16); // 256-byte entries, 4 KV heads
    static final int TOKENS = 600;
    static final long SEED = 17;
    /** Tokens of layer 1 stored in two clusters. */
    static final int[] SHARED = {100, 150, 200, 250};

    @TempDir
    Path root;

    KvConfig config(int devices) {
        return TestEngines.config(TestEngines.deviceDirs(root.resolve("d" + devices), devices), "portable")
                .blockTokens(16).placement(Placement.HEAD_SHARDED).build();
    }

    static void store(KvEngine e) {
        try (KvSequence s = e.createSequence("s", SHAPE)) {
            TestEngines.append(s, SEED, TOKENS, 64);
            Strategies.named("quest").layOut(s, 0); // the default page layout
            Swarm.clusterLayer(s, 1, ReplicaFailoverTest.clustersOf20(TOKENS, SHARED), ClusterOptions.defaults());
            s.commit();
        }
    }

    static byte[][] expected(int layer) {
        try (Arena a = Arena.ofConfined()) {
            return new byte[][] {KvTestData.tokens(a, SHAPE, SEED, layer, 0, TOKENS, false).toArray(ValueLayout.JAVA_BYTE),
                    KvTestData.tokens(a, SHAPE, SEED, layer, 0, TOKENS, true).toArray(ValueLayout.JAVA_BYTE)};
        }
    }

    /** Head groups on {@code devices}: the largest divisor of the 4 KV heads not above it. */
    static int shards(int devices) {
        return devices >= 4 ? 4 : devices >= 2 ? 2 : 1;
    }

    /** Each cluster's head groups on distinct devices; every stored entry a shard of the right size. */
    static void assertSharded(KvSequence s, int devices) {
        for (int l = 0; l < SHAPE.layers(); l++) {
            ClusterLayout cl = Layouts.clusterLayout(s, l);
            assertEquals(shards(devices), cl.shards(), "layer " + l + " head groups on " + devices + " devices");
            assertEquals(SHAPE.entryBytes() / cl.shards(), cl.storedEntryBytes());
            for (int c = 0; c < cl.clusterCount(); c++) {
                Set<Integer> used = new HashSet<>();
                for (int g = cl.clusterSegmentStart(c); g < cl.clusterSegmentEnd(c); g++) {
                    assertTrue(used.add(cl.segmentDevice(g)), "layer " + l + " cluster " + c + ": two head groups on"
                            + " device " + cl.segmentDevice(g));
                }
            }
        }
    }

    static void assertViewsBitExact(KvSequence s) {
        DecodeOptions o = DecodeOptions.builder().strategy(Swarm.defaults()).cacheBytes(0).sinkTokens(0)
                .localWindow(0).build();
        int[] positions = {0, 1, 2, 17, 100, 150, 151, 333, 400, 599};
        try (KvDecoder d = s.decoder(o)) {
            for (int l = 0; l < SHAPE.layers(); l++) {
                try (KvView v = d.prefetch(l, positions, positions.length)) {
                    v.await();
                    BitSet seen = KvViews.assertBitExact(v, expected(l));
                    assertEquals(positions.length, seen.cardinality(), "layer " + l + " rows");
                }
            }
        }
    }

    /**
     * An MHA layer of 96 KV heads (more than a per-head mask names) sharded over 4 directories: the
     * default strategy lays it out, selects one shared set for every head group, and every view row is
     * bit-exact.
     */
    @Test
    void theDefaultStrategyDecodesNinetySixKvHeadsBitExact() {
        KvShape wide = new KvShape(1, 96, 96, 8, DType.BF16);
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(wide, TOKENS).seed(SEED).build());
        try (KvEngine e = KvEngine.open(config(4))) {
            byte[][] expected = TestEngines.storeLaidOut(e, "wide", w, TOKENS, Strategies.defaultStrategy())[0];
            try (KvSequence s = e.openSequence("wide")) {
                assertEquals(4, Layouts.clusterLayout(s, 0).shards(), "24 KV heads a device");
                DecodeOptions o = DecodeOptions.builder().sparsity(0.25).sinkTokens(4).localWindow(32).cacheBytes(0)
                        .build();
                try (KvDecoder d = s.decoder(o)) {
                    for (int step = 0; step < 3; step++) {
                        try (KvView v = d.prefetch(0, w.query(0, step)).await()) {
                            BitSet seen = KvViews.assertBitExact(v, expected);
                            assertTrue(seen.cardinality() > 36 && seen.cardinality() <= 150, "rows " + seen.cardinality());
                        }
                    }
                }
            }
        }
    }

    @Test
    void placementIsTokenStripedByDefaultSetByNameInJsonAndABadNameIsRefused() {
        assertEquals(Placement.TOKEN_STRIPED, KvConfig.builder().ssdDirectories(root).build().placement());
        assertEquals(Placement.HEAD_SHARDED, ConfigFile.fromMap(java.util.Map.of("ssdDirectories",
                java.util.List.of("a"), "placement", "head-sharded"), root).placement());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ConfigFile.fromMap(
                java.util.Map.of("ssdDirectories", java.util.List.of("a"), "placement", "by-head"), root));
        assertTrue(e.getMessage().contains("placement = 'by-head'") && e.getMessage().contains("HEAD_SHARDED"),
                e.getMessage());
        assertThrows(NullPointerException.class, () -> KvConfig.builder().placement(null));
    }

    @Test
    void readsAndViewsAreBitExactOnOneToFourDirectoriesAndAfterARestart() {
        for (int devices = 1; devices <= 4; devices++) {
            KvConfig cfg = config(devices);
            try (KvEngine e = KvEngine.open(cfg)) {
                store(e);
                try (KvSequence s = e.openSequence("s")) {
                    assertSharded(s, devices);
                    assertNull(TestEngines.verify(s, SEED, TestEngines.all(TOKENS)), devices + " devices");
                    assertViewsBitExact(s);
                }
            }
            try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.openSequence("s")) { // restart: from the manifest
                assertSharded(s, devices);
                assertNull(TestEngines.verify(s, SEED, TestEngines.shuffled(new java.util.Random(devices), TOKENS)));
                assertViewsBitExact(s);
            }
        }
    }

    @Test
    void aTokenStripedEngineStillReadsAShardedSequenceAsWritten() {
        KvConfig sharded = config(4);
        try (KvEngine e = KvEngine.open(sharded)) {
            store(e);
        }
        KvConfig striped = TestEngines.config(sharded.ssdDirectories(), "portable").blockTokens(16).build();
        try (KvEngine e = KvEngine.open(striped); KvSequence s = e.openSequence("s")) {
            assertSharded(s, 4);
            assertNull(TestEngines.verify(s, SEED, TestEngines.all(TOKENS)));
        }
    }

    static void flip(KvConfig cfg, int device, long offset) throws Exception {
        try (FileChannel ch = FileChannel.open(cfg.ssdDirectories().get(device).resolve("kvoffload.pool"),
                StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.allocate(1);
            ch.read(b, offset + 5);
            b.put(0, (byte) (b.get(0) ^ 0x20)).rewind();
            ch.write(b, offset + 5);
        }
    }

    @Test
    void aDamagedShardIsDetectedAndServedFromItsReplica() throws Exception {
        KvConfig cfg = config(4);
        int lone = 333;
        int shared = SHARED[1];
        try (KvEngine e = KvEngine.open(cfg)) {
            store(e);
            try (KvSequence s = e.openSequence("s")) {
                ClusterLayout pages = Layouts.clusterLayout(s, 0);
                int key = lone * 4 + 2; // head group 2 of a token stored once
                assertEquals(1, pages.count(key));
                flip(cfg, pages.device(key, 0), pages.offset(key, 0));
                ClusterLayout clusters = Layouts.clusterLayout(s, 1);
                int k2 = shared * 4 + 3;
                assertEquals(2, clusters.count(k2), "the shared token's head group has two copies");
                flip(cfg, clusters.device(k2, 0), clusters.offset(k2, 0));
                flip(cfg, clusters.device(k2, 1), clusters.offset(k2, 1)); // both copies: nothing good is left
            }
        }
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.openSequence("s")) {
            KvChecksumException ex = assertThrows(KvChecksumException.class,
                    () -> TestEngines.verifySingleLayer(s, SEED, 0, new int[] {lone}));
            assertTrue(ex.getMessage().contains("tokens " + lone + ".." + lone), ex.getMessage());
            assertNull(TestEngines.verifySingleLayer(s, SEED, 0, new int[] {lone - 1, lone + 1}),
                    "the other tokens and head groups read");
            DecodeOptions o = DecodeOptions.builder().strategy(Swarm.defaults()).cacheBytes(0).sinkTokens(0)
                    .localWindow(0).build();
            try (KvDecoder d = s.decoder(o)) {
                assertThrows(KvChecksumException.class, () -> {
                    try (KvView v = d.prefetch(1, new int[] {shared}, 1)) {
                        v.await();
                    }
                });
            }
        }
    }

    @Test
    void aDamagedShardWithAGoodReplicaIsServedAndRepaired() throws Exception {
        KvConfig cfg = config(4);
        int shared = -1;
        long[][] copies = new long[2][];
        try (KvEngine e = KvEngine.open(cfg)) {
            store(e);
            try (KvSequence s = e.openSequence("s")) {
                ClusterLayout clusters = Layouts.clusterLayout(s, 1);
                // The shared cluster's rotation can avoid all but one of its members' other copies (their
                // four clusters hold all four rotations): at least three have copies on distinct devices.
                int distinct = 0;
                for (int t : SHARED) {
                    if (clusters.device(t * 4, 0) != clusters.device(t * 4, 1)) {
                        distinct++;
                        shared = t;
                    }
                }
                assertTrue(distinct >= 3, distinct + " shared tokens with copies on distinct devices");
                int key = shared * 4 + 1;
                for (int r = 0; r < 2; r++) {
                    copies[r] = new long[] {clusters.device(key, r), clusters.offset(key, r)};
                }
            }
        }
        // Damage the copy the fetch reads (the scheduler's pick is deterministic: try copy 0, else copy 1).
        for (int r = 0; r < 2; r++) {
            flip(cfg, (int) copies[r][0], copies[r][1]);
            try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.openSequence("s")) {
                DecodeOptions o = DecodeOptions.builder().strategy(Swarm.defaults()).cacheBytes(0).sinkTokens(0)
                        .localWindow(0).build();
                int token = shared;
                try (KvDecoder d = s.decoder(o); KvView v = d.prefetch(1, new int[] {token}, 1)) {
                    v.await();
                    assertTrue(KvViews.assertBitExact(v, expected(1)).get(token));
                }
                if (e.stats().failovers() == 0) {
                    flip(cfg, (int) copies[r][0], copies[r][1]); // not the copy read: undo, damage the other
                    continue;
                }
                assertEquals(1, e.stats().failovers(), "served from the other copy");
                assertEquals(1, e.stats().repairs(), "the damaged shard was rewritten");
                assertNull(TestEngines.verify(s, SEED, TestEngines.all(TOKENS)));
                return;
            }
        }
        throw new AssertionError("neither damaged copy was read or failed over");
    }
}
