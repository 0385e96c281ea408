package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.sequence.SequenceAccess;
import io.kvoffload.internal.storage.GroupLayout;
import io.kvoffload.internal.storage.HeadShards;
import io.kvoffload.internal.storage.UnitLayout;
import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.strategy.Strategies;
import io.kvoffload.strategy.UnitLayouts;
import io.kvoffload.strategy.kvswap.KvSwap;
import io.kvoffload.strategy.sparf.SparF;
import io.kvoffload.testing.Faults;
import io.kvoffload.testing.KvViews;
import io.kvoffload.testing.Layouts;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link Placement#HEAD_SHARDED} for the strategies with layouts of their own: KVSwap's groups (each
 * group stored as head groups, one per device) and SparF's dual layout (each head's dimension slices
 * on the device serving its head group; step 2's page groups sharded like every default layout).
 * On 1..4 directories (3: two head groups of the 4 KV heads, not one per device) every view is the
 * same rows as the token-striped layout's, bit-exact, also after a restart, through the reuse buffer
 * and the rolling flush; a device failing under head sharding fails the fetch (one copy), never
 * serves wrong data.
 */
class HeadShardedStrategiesTest {
    static final KvShape SHAPE = new KvShape(2, 8, 4, 16, DType.BF16); // 4 KV heads, 256-byte entries
    static final int TOKENS = 2100; // two SparF slices of 2048 BF16 tokens, the second partial
    static final int EXTRA = 48; // decoded after the layout: KVSwap's rolling flush
    static final KvSwap KVSWAP = KvSwap.defaults();
    static final SparF SPARF = new SparF();

    @TempDir
    Path root;
    SyntheticWorkload w;

    @BeforeEach
    void workload() {
        w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS + EXTRA).seed(5).build());
    }

    KvConfig config(String name, int devices, Placement placement) {
        return TestEngines.config(TestEngines.deviceDirs(root.resolve(name), devices), "portable").blockTokens(16)
                .placement(placement).build();
    }

    /** Head groups of the 4 KV heads on {@code devices}: the largest divisor not above it. */
    static int shards(int devices) {
        return devices >= 4 ? 4 : devices >= 2 ? 2 : 1;
    }

    static DecodeOptions options(SelectionStrategy strategy) {
        return strategy instanceof KvSwap
                ? DecodeOptions.builder().strategy(strategy).budgetTokens(200).sinkTokens(4).localWindow(0).build()
                : DecodeOptions.builder().strategy(strategy).sparsity(0.1).sinkTokens(4).localWindow(64).build();
    }

    /**
     * Three steps on both layers, then the same queries again (KVSwap's reuse buffer serves them);
     * every view bit-exact against the source; returns the rows of every view.
     */
    List<BitSet> decode(KvSequence s, SelectionStrategy strategy, byte[][][] stored) {
        List<BitSet> rows = new ArrayList<>();
        try (KvDecoder d = s.decoder(options(strategy))) {
            for (int pass = 0; pass < 2; pass++) {
                for (int step = 0; step < 3; step++) {
                    for (int l = 0; l < SHAPE.layers(); l++) {
                        try (KvView v = d.prefetch(l, w.query(l, step)).await()) {
                            rows.add(KvViews.assertBitExact(v, stored[l]));
                        }
                    }
                }
            }
            if (strategy instanceof KvSwap) {
                assertTrue(d.stats().reuseHits() > 0, "the second pass is served from reuse slots: " + d.stats());
            }
        }
        return rows;
    }

    /** The whole layer read back through the sequence (the grouped tokens from their head groups). */
    static void assertReadsBack(KvSequence s, byte[][][] stored) {
        int half = SHAPE.halfEntryBytes();
        try (Arena a = Arena.ofConfined()) {
            for (int l = 0; l < SHAPE.layers(); l++) {
                int[] positions = TestEngines.shuffled(new java.util.Random(l), TOKENS);
                MemorySegment k = a.allocate((long) TOKENS * half);
                MemorySegment v = a.allocate((long) TOKENS * half);
                s.read(l, positions, k, v);
                for (int i = 0; i < TOKENS; i++) {
                    long src = (long) positions[i] * half;
                    assertEquals(-1, k.asSlice((long) i * half, half).mismatch(
                            MemorySegment.ofArray(stored[l][0]).asSlice(src, half)), "K of " + positions[i]);
                    assertEquals(-1, v.asSlice((long) i * half, half).mismatch(
                            MemorySegment.ofArray(stored[l][1]).asSlice(src, half)), "V of " + positions[i]);
                }
            }
        }
    }

    /** Every group's head groups on the devices {@link HeadShards} assigns. */
    static void assertGroupsSharded(KvSequence s, int devices) {
        for (int l = 0; l < SHAPE.layers(); l++) {
            GroupLayout gl = Layouts.groupLayout(s, l);
            int shards = shards(devices);
            assertEquals(shards, gl.shards(), "layer " + l + " on " + devices + " devices");
            assertEquals(gl.groupCount() * shards, gl.keyCount());
            assertEquals(gl.groupBytes() / shards, gl.storedBytes());
            for (int key = 0; shards > 1 && key < gl.keyCount(); key++) {
                int grp = key / shards;
                assertEquals(HeadShards.device(HeadShards.rotation(l, grp, devices), key % shards, shards, devices),
                        gl.groupDevice(key), "layer " + l + " group " + grp + " head group " + key % shards);
            }
        }
    }

    /** Every head unit of SparF's dual layout on the device serving its head group in its slice; the pages sharded too. */
    static void assertDualSharded(KvSequence s, int devices) {
        int shards = shards(devices);
        int d = SHAPE.headDim();
        for (int l = 0; l < SHAPE.layers(); l++) {
            UnitLayout u = SequenceAccess.of(s).ledger().layer(l).units();
            assertNotNull(u, "layer " + l + " has its dual layout");
            assertEquals(shards, u.shards(), "layer " + l + " on " + devices + " devices");
            for (int unit = 0; shards > 1 && unit < u.unitCount(); unit++) {
                int head = unit / d % SHAPE.kvHeads();
                int slice = unit / (SHAPE.kvHeads() * d);
                int group = HeadShards.shardOfHead(head, SHAPE.kvHeads(), shards);
                assertEquals(group, u.unitShard(unit));
                assertEquals(HeadShards.device(HeadShards.rotation(l, slice, devices), group, shards, devices),
                        u.unitDevice(unit), "layer " + l + " unit " + unit);
            }
            assertEquals(shards, Layouts.clusterLayout(s, l).shards(), "step 2's page groups, layer " + l);
        }
    }

    @Test
    void kvSwapGroupsAreHeadShardedAndViewsBitExactOnOneToFourDevicesAndAfterARestart() {
        assertShardedLikeStriped(KVSWAP, "k", s -> assertEquals(1, Layouts.groupLayout(s, 0).shards()),
                HeadShardedStrategiesTest::assertGroupsSharded);
    }

    @Test
    void sparfSlicesAndPagesAreHeadShardedAndViewsBitExactOnOneToFourDevicesAndAfterARestart() {
        assertShardedLikeStriped(SPARF, "f",
                s -> assertEquals(1, SequenceAccess.of(s).ledger().layer(0).units().shards()),
                HeadShardedStrategiesTest::assertDualSharded);
    }

    /**
     * {@code strategy}'s layout under token striping (2 devices) gives the reference rows; under head
     * sharding on 1..4 devices its layouts are sharded as {@code sharded} checks and every view has the
     * same rows, bit-exact, before and after a restart, and the whole layer reads back.
     */
    void assertShardedLikeStriped(SelectionStrategy strategy, String id, Consumer<KvSequence> striped,
            BiConsumer<KvSequence, Integer> sharded) {
        List<BitSet> reference;
        try (KvEngine e = KvEngine.open(config("striped", 2, Placement.TOKEN_STRIPED))) {
            byte[][][] stored = TestEngines.storeLaidOut(e, id, w, TOKENS, strategy);
            try (KvSequence s = e.openSequence(id)) {
                striped.accept(s);
                reference = decode(s, strategy, stored);
            }
        }
        for (int devices = 1; devices <= 4; devices++) {
            KvConfig cfg = config("sharded" + devices, devices, Placement.HEAD_SHARDED);
            byte[][][] stored;
            try (KvEngine e = KvEngine.open(cfg)) {
                stored = TestEngines.storeLaidOut(e, id, w, TOKENS, strategy);
                try (KvSequence s = e.openSequence(id)) {
                    sharded.accept(s, devices);
                    assertEquals(reference, decode(s, strategy, stored), devices + " devices: the striped layout's rows");
                }
            }
            try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.openSequence(id)) { // restart: from the manifest
                sharded.accept(s, devices);
                assertReadsBack(s, stored);
                assertEquals(reference, decode(s, strategy, stored), devices + " devices after a restart");
            }
        }
    }

    @Test
    void kvSwapsRollingFlushAppendsHeadShardedGroupsThatReadBackBitExact() {
        int half = SHAPE.halfEntryBytes();
        int all = TOKENS + EXTRA;
        byte[][][] source = new byte[SHAPE.layers()][2][];
        try (Arena a = Arena.ofConfined()) {
            MemorySegment k = a.allocate((long) all * half);
            MemorySegment v = a.allocate((long) all * half);
            for (int l = 0; l < SHAPE.layers(); l++) {
                w.writeKv(l, 0, all, SHAPE.dtype(), k, v);
                source[l][0] = k.toArray(ValueLayout.JAVA_BYTE);
                source[l][1] = v.toArray(ValueLayout.JAVA_BYTE);
            }
        }
        KvConfig cfg = config("roll", 3, Placement.HEAD_SHARDED);
        try (KvEngine e = KvEngine.open(cfg)) {
            TestEngines.storeLaidOut(e, "r", w, TOKENS, KVSWAP);
            try (KvSequence s = e.openSequenceForAppend("r", SHAPE); KvDecoder d = s.decoder(options(KVSWAP));
                    Arena a = Arena.ofConfined()) {
                int before = Layouts.groupLayout(s, 0).groupedTokens();
                for (int l = 0; l < SHAPE.layers(); l++) {
                    d.prefetch(l, w.query(l, 0)).await().close(); // opens the layer: its window is the rolling buffer
                }
                for (int t = TOKENS; t < all; t++) {
                    s.appendTokens(1);
                    for (int l = 0; l < SHAPE.layers(); l++) {
                        MemorySegment k = a.allocate(half);
                        MemorySegment v = a.allocate(half);
                        MemorySegment.copy(MemorySegment.ofArray(source[l][0]), (long) t * half, k, 0, half);
                        MemorySegment.copy(MemorySegment.ofArray(source[l][1]), (long) t * half, v, 0, half);
                        d.appendKv(l, k, v);
                    }
                }
                GroupLayout grown = Layouts.groupLayout(s, 0);
                assertTrue(grown.groupedTokens() > before, "the rolling flush wrote groups: " + before + " → "
                        + grown.groupedTokens());
                assertGroupsSharded(s, 3);
                for (int step = 5; step < 8; step++) {
                    for (int l = 0; l < SHAPE.layers(); l++) {
                        try (KvView v = d.prefetch(l, w.query(l, step)).await()) {
                            KvViews.assertBitExact(v, source[l]);
                        }
                    }
                }
                s.commit();
            }
        }
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.openSequence("r")) {
            assertGroupsSharded(s, 3);
            try (Arena a = Arena.ofConfined()) {
                int n = Layouts.groupLayout(s, 1).groupedTokens();
                MemorySegment k = a.allocate((long) n * half);
                MemorySegment v = a.allocate((long) n * half);
                s.read(1, TestEngines.all(n), k, v);
                assertEquals(-1, k.mismatch(MemorySegment.ofArray(source[1][0]).asSlice(0, (long) n * half)));
                assertEquals(-1, v.mismatch(MemorySegment.ofArray(source[1][1]).asSlice(0, (long) n * half)));
            }
        }
    }

    /**
     * One device fails every request once the decoders are set up: with every group's and every
     * slice row's head groups on every device, the next fetch fails with the I/O error (no head group
     * has a second copy, as no KVSwap group or SparF unit has under striping), and no view is served.
     */
    @Test
    void aFailingDeviceFailsTheFetchNeverServingWrongData() {
        KvConfig cfg = config("fail", 4, Placement.HEAD_SHARDED);
        byte[][][] kv;
        byte[][][] f;
        try (KvEngine e = KvEngine.open(cfg)) {
            kv = TestEngines.storeLaidOut(e, "k", w, TOKENS, KVSWAP);
            f = TestEngines.storeLaidOut(e, "f", w, TOKENS, SPARF);
        }
        SelectionStrategy[] strategies = {KVSWAP.withReuseSlots(0), SPARF};
        String[] ids = {"k", "f"};
        // Device 2 vanishes once the decoder is set up and has served one healthy fetch: the fault
        // is armed right there, not after a count of requests.
        KvConfig faulty = TestEngines.config(cfg.ssdDirectories(), "portable").blockTokens(16)
                .placement(Placement.HEAD_SHARDED)
                .faultInjection(FaultInjection.builder(9).vanishingDevice(2, Long.MAX_VALUE).build()).build();
        for (int i = 0; i < 2; i++) {
            byte[][][] stored = i == 0 ? kv : f;
            try (KvEngine e = KvEngine.open(faulty); KvSequence s = e.openSequence(ids[i]);
                    KvDecoder d = s.decoder(options(strategies[i]))) {
                try (KvView v = d.prefetch(0, w.query(0, 0)).await()) { // before the device vanishes
                    KvViews.assertBitExact(v, stored[0]);
                }
                Faults.vanishNow(s);
                KvException ex = assertThrows(KvException.class, () -> d.prefetch(0, w.query(0, 1)).await().close(),
                        ids[i]);
                assertTrue(ex instanceof KvIoException || ex instanceof KvChecksumException, ex.toString());
                assertThrows(KvException.class, () -> s.read(0, new int[] {40}, MemorySegment.ofArray(
                        new byte[SHAPE.halfEntryBytes()]), MemorySegment.ofArray(new byte[SHAPE.halfEntryBytes()])),
                        "a read of a token whose head group is on the failed device");
            }
        }
    }

    /**
     * A head-sharded KVSwap or SparF layout whose writes fail (every write to one device: ENOSPC) is
     * rolled back whole: the call fails, no byte of the devices stays taken, and the layer still
     * reads back bit-exact from the layout it had.
     */
    @Test
    void aFailedHeadShardedLayoutWriteFreesEverythingItTook() {
        KvConfig cfg = config("rollback", 4, Placement.HEAD_SHARDED);
        byte[][][] stored;
        try (KvEngine e = KvEngine.open(cfg)) {
            stored = TestEngines.storeLaidOut(e, "s", w, TOKENS, Strategies.named("quest"));
        }
        KvConfig faulty = TestEngines.config(cfg.ssdDirectories(), "portable").blockTokens(16)
                .placement(Placement.HEAD_SHARDED)
                .faultInjection(FaultInjection.builder(3).enospc(1.0).onlyOnDevice(3).build()).build();
        for (SelectionStrategy strategy : new SelectionStrategy[] {KVSWAP, SPARF}) {
            // A fresh engine each: after an ENOSPC the allocator treats the device as full and places elsewhere.
            try (KvEngine e = KvEngine.open(faulty); KvSequence s = e.openSequenceForAppend("s", SHAPE)) {
                long free = e.stats().devices().stream().mapToLong(KvStats.Device::freeBytes).sum();
                KvException ex = assertThrows(KvException.class, () -> strategy.layOut(s, 0), strategy.name());
                assertTrue(ex.getMessage().contains("errno 28") || ex instanceof KvCapacityException, ex.toString());
                assertEquals(free, e.stats().devices().stream().mapToLong(KvStats.Device::freeBytes).sum(),
                        strategy.name() + ": every extent the failed write took is free again");
                assertEquals(null, Layouts.groupLayout(s, 0), "no group layout was installed");
                assertEquals(null, SequenceAccess.of(s).ledger().layer(0).units(), "no unit layout was installed");
                assertEquals(4, Layouts.clusterLayout(s, 0).shards(), "the head-sharded page layout it had stays");
                assertReadsBack(s, stored);
            }
        }
    }

    /** A head-sharded unit layout whose source fails midway leaves nothing behind, and none is installed. */
    @Test
    void aHeadUnitLayoutWhoseSourceFailsMidwayFreesEverythingItTook() {
        try (KvEngine e = KvEngine.open(config("units", 4, Placement.HEAD_SHARDED))) {
            TestEngines.storeLaidOut(e, "s", w, TOKENS, Strategies.named("quest"));
            try (KvSequence s = e.openSequenceForAppend("s", SHAPE)) {
                long free = e.stats().devices().stream().mapToLong(KvStats.Device::freeBytes).sum();
                IllegalStateException ex = assertThrows(IllegalStateException.class, () -> UnitLayouts.write(s, 0,
                        "test", 1, new byte[0], 4096, 64, new UnitLayouts.Source() {
                            @Override
                            public int device(int unit) {
                                return unit;
                            }

                            @Override
                            public int kvHead(int unit) {
                                return unit % SHAPE.kvHeads();
                            }

                            @Override
                            public int row(int unit) {
                                return unit / SHAPE.kvHeads();
                            }

                            @Override
                            public void fill(int unit, MemorySegment dst) {
                                if (unit == 50) {
                                    throw new IllegalStateException("source failed at unit 50");
                                }
                                dst.fill((byte) unit);
                            }
                        }));
                assertTrue(ex.getMessage().contains("unit 50"), ex.getMessage());
                assertEquals(free, e.stats().devices().stream().mapToLong(KvStats.Device::freeBytes).sum());
                assertEquals(null, SequenceAccess.of(s).ledger().layer(0).units());
            }
        }
    }

    /**
     * The default strategy over head-sharded pages keeps a hot cache per head group: its steps (cached
     * shards copied into partial rows, admitted shards copied out of them) allocate nothing in steady state.
     */
    @Test
    void headShardedDefaultStepsWithShardCachesAllocateNothingOnTheCallingThread() {
        SelectionStrategy auto = io.kvoffload.strategy.Strategies.defaultStrategy();
        try (KvEngine e = KvEngine.open(config("auto-alloc", 4, Placement.HEAD_SHARDED))) {
            TestEngines.storeLaidOut(e, "a", w, TOKENS, auto);
            // A cache of about 128 tokens per head group and layer: smaller than a step's picks, so steps still read.
            DecodeOptions o = DecodeOptions.builder().strategy(auto).sparsity(0.1).sinkTokens(4).localWindow(64)
                    .cacheBytes(64 << 10).build();
            try (KvSequence s = e.openSequence("a"); KvDecoder d = s.decoder(o)) {
                float[][][] q = new float[8][SHAPE.layers()][];
                for (int i = 0; i < q.length; i++) {
                    for (int l = 0; l < SHAPE.layers(); l++) {
                        q[i][l] = w.query(l, 30 + 40 * i); // far apart: each step still reads
                    }
                }
                KvSwapDecoderTest.assertTwoLayerStepsAllocateNothing(d, q);
                assertTrue(d.stats().tokensCached() > 0, "shards served from the group caches: " + d.stats());
            }
        }
    }

    /**
     * Swarm's decoder reads head-sharded clusters whole (every head group of a token), so it keeps one
     * hot cache of whole entries, not one per head group: repeated queries are served partly from DRAM,
     * every view bit-exact.
     */
    @Test
    void swarmOverHeadShardedClustersKeepsItsHotCache() {
        io.kvoffload.strategy.swarm.Swarm swarm = io.kvoffload.strategy.swarm.Swarm.defaults();
        try (KvEngine e = KvEngine.open(config("swarm-cache", 4, Placement.HEAD_SHARDED))) {
            byte[][][] stored = TestEngines.storeClustered(e, "w", w, TOKENS, 0, 32);
            DecodeOptions o = DecodeOptions.builder().strategy(swarm).sparsity(0.1).sinkTokens(4).localWindow(64)
                    .cacheBytes(1L << 20).build();
            try (KvSequence s = e.openSequence("w"); KvDecoder d = s.decoder(o)) {
                for (int step = 0; step < 4; step++) {
                    for (int l = 0; l < SHAPE.layers(); l++) {
                        try (KvView v = d.prefetch(l, w.query(l, 7)).await()) {
                            KvViews.assertBitExact(v, stored[l]);
                        }
                    }
                }
                assertTrue(d.stats().cacheHits() > 0 && d.stats().tokensCached() > 0, d.stats().toString());
            }
        }
    }

    /** KVSwap's steps over head-sharded groups (S keys a miss, gathered by head group) allocate nothing in steady state. */
    @Test
    void headShardedKvSwapStepsAllocateNothingOnTheCallingThread() {
        try (KvEngine e = KvEngine.open(config("alloc", 4, Placement.HEAD_SHARDED))) {
            TestEngines.storeLaidOut(e, "k", w, TOKENS, KVSWAP);
            try (KvSequence s = e.openSequence("k"); KvDecoder d = s.decoder(options(KVSWAP))) {
                float[][][] q = new float[8][SHAPE.layers()][];
                for (int i = 0; i < q.length; i++) {
                    for (int l = 0; l < SHAPE.layers(); l++) {
                        q[i][l] = w.query(l, 30 + i);
                    }
                }
                KvSwapDecoderTest.assertTwoLayerStepsAllocateNothing(d, q);
            }
        }
    }
}
