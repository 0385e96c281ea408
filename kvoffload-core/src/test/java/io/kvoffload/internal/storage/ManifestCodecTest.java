package io.kvoffload.internal.storage;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/** A damaged or hostile manifest is rejected with a reason, never trusted. */
class ManifestCodecTest {
    static Manifest sample() {
        KvShape shape = new KvShape(2, 4, 2, 8, DType.F16);
        BlockTable[] t = {new BlockTable(2), new BlockTable(2)};
        t[0].set(0, 0, 0, 4096, 11, true);
        t[0].set(1, 1, 4096, 4096, 12, true);
        t[1].set(0, 1, 0, 4096, 13, true);
        t[1].set(1, 0, 8192, 4096, 14, true);
        // Layer 1's first 3 tokens are clustered: cluster 0 = {0, 1} on devices 0 and 1, cluster 1 = {2, 0}.
        ClusterLayout c = new ClusterLayout(3, shape.entryBytes(), 0.35, 1, new int[] {0, 2}, new int[] {0, 2, 3},
                new int[] {0, 1, 1}, new long[] {16384, 16384, 20480}, new int[] {4096, 4096, 4096},
                new int[] {0, 1, 2, 4}, new int[] {0, 1, 2, 0}, new int[] {21, 22, 23, 24}, new int[] {0, 0});
        return new Manifest("seq-1", shape, 4, List.of("u0", "u1"), new int[] {5, 6, 7, 8, 9}, t,
                new ClusterLayout[] {null, c}, 123, 2);
    }

    /** {@code m} as a sequence first committed before version 5 has it: plain CRC32C checksums. */
    static Manifest unsalted(Manifest m) {
        return new Manifest(m.id(), m.shape(), m.blockTokens(), m.deviceUuids(), m.tokenIds(), m.layers(),
                m.clusters(), m.groups(), m.units(), m.commitMillis(), m.commitNumber(), false);
    }

    @Test
    void identityChecksumsAreVersionSixAndPlainOnesStayVersionFour() {
        byte[] now = ManifestCodec.encode(sample());
        assertEquals(6, java.nio.ByteBuffer.wrap(now).getInt(4));
        assertTrue(ManifestCodec.decode(now).identityChecksums());
        byte[] old = ManifestCodec.encode(unsalted(sample()));
        assertEquals(4, java.nio.ByteBuffer.wrap(old).getInt(4), "a pre-5 sequence is written back as version 4");
        Manifest m = ManifestCodec.decode(old);
        assertFalse(m.identityChecksums());
        assertEquals(EntryChecksum.UNSALTED, m.entryChecksum());
        for (int v = 2; v <= 4; v++) {
            assertFalse(ManifestCodec.decode(ManifestCodec.encode(unsalted(sample()), v)).identityChecksums());
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ManifestCodec.encode(sample(), 4));
        assertEquals("version = 4 cannot record identity-seeded checksums; allowed: 5..7", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> ManifestCodec.encode(unsalted(sample()), 5));
        assertEquals("version = 5 cannot record plain checksums; allowed: 2..4", e.getMessage());
    }

    @Test
    void roundTrips() {
        Manifest m = ManifestCodec.decode(ManifestCodec.encode(sample()));
        assertEquals("seq-1", m.id());
        assertEquals(sample().shape(), m.shape());
        assertArrayEquals(new int[] {5, 6, 7, 8, 9}, m.tokenIds());
        assertEquals(4096, m.layers()[1].offset(0) + 4096);
        assertEquals(14, m.layers()[1].crc(1));
        assertEquals(2, m.commitNumber());
        assertEquals(null, m.clusters()[0]);
        assertEquals(2, m.clusters()[1].clusterCount());
        assertArrayEquals(new int[] {2, 0}, m.clusters()[1].members(1));
        assertEquals(2, m.clusters()[1].replicaCount(0), "token 0 is stored in both clusters");
        assertEquals(20480 + 64, m.clusters()[1].entryOffset(3));
    }

    /**
     * The sample's clustered layer head-sharded: 2 head groups (of 2 KV heads), cluster 0 = {0, 1},
     * cluster 1 = {2, 0}, each group one extent on its own device, entries of half an entry.
     */
    static Manifest sharded() {
        Manifest m = sample();
        int unit = m.shape().entryBytes() / 2;
        ClusterLayout c = new ClusterLayout(3, unit, 0.35, 1, new int[] {0, 2}, new int[] {0, 2, 4},
                new int[] {0, 1, 1, 0}, new long[] {16384, 16384, 20480, 20480}, new int[] {4096, 4096, 4096, 4096},
                new int[] {0, 2, 4, 6, 8}, new int[] {0, 1, 0, 1, 2, 0, 2, 0}, new int[] {1, 2, 3, 4, 5, 6, 7, 8},
                new int[] {0, 0}, 2, new int[] {0, 1, 0, 1});
        return new Manifest(m.id(), m.shape(), m.blockTokens(), m.deviceUuids(), m.tokenIds(), m.layers(),
                new ClusterLayout[] {null, c}, m.commitMillis(), m.commitNumber());
    }

    @Test
    void aHeadShardedLayoutRoundTripsAsSectionVersionFourAndAStripedOneStaysThree() {
        assertEquals(3, ClusterSection.KIND.versionFor(sample().clusters()[1]), "older builds still read striped layouts");
        ClusterLayout c = ManifestCodec.decode(ManifestCodec.encode(sharded())).clusters()[1];
        assertEquals(4, ClusterSection.KIND.versionFor(c));
        assertEquals(2, c.shards());
        assertEquals(sample().shape().entryBytes() / 2, c.storedEntryBytes());
        assertEquals(EntryChecksum.Kind.SHARD, c.checksumKind());
        assertArrayEquals(new int[] {2, 0}, c.members(1));
        assertEquals(2, c.count(0 * 2 + 1), "token 0's head group 1 is stored in both clusters");
        assertEquals(0, c.device(2 * 2 + 1, 0), "cluster 1's head group 1 is its segment on device 0");
        assertEquals(8, c.entryCrc(7));
        // A plain-checksum manifest format cannot hold it: refused by name, never written half.
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> ManifestCodec.encode(unsalted(sharded())));
        assertTrue(e.getMessage().contains("head-sharded"), e.getMessage());
    }

    @Test
    void aShardedLayoutWhoseGroupsDisagreeIsRefused() {
        Manifest m = sample();
        int unit = m.shape().entryBytes() / 2;
        // Cluster 0's head group 1 holds token 2 where group 0 holds token 1.
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new ClusterLayout(3, unit,
                0.35, 1, new int[] {0, 2}, new int[] {0, 2, 4}, new int[] {0, 1, 1, 0},
                new long[] {16384, 16384, 20480, 20480}, new int[] {4096, 4096, 4096, 4096}, new int[] {0, 2, 4, 6, 8},
                new int[] {0, 1, 0, 2, 2, 0, 2, 0}, new int[8], new int[] {0, 0}, 2, new int[] {0, 1, 0, 1}));
        assertTrue(e.getMessage().contains("head group 1"), e.getMessage());
    }

    /** The sample's clustered layer grown online: token 3 joins cluster 0 and a new cluster 2 of its own. */
    static Manifest extended() {
        Manifest m = sample();
        ClusterLayout old = m.clusters()[1];
        ClusterLayout grown = old.extend(4, new int[] {3}, new int[] {0, 2}, new int[] {1, 0},
                new long[] {24576, 28672}, new int[] {4096, 4096}, new int[] {0, 1, 2}, new int[] {3, 3},
                new int[] {31, 32}, new int[] {1, 0, 1});
        return new Manifest(m.id(), m.shape(), m.blockTokens(), m.deviceUuids(), m.tokenIds(), m.layers(),
                new ClusterLayout[] {null, grown}, m.commitMillis(), m.commitNumber());
    }

    /** Every version main has written decodes to the same layouts as the current one. */
    @Test
    void versionFiveAndSixHoldTheSameLayouts() {
        for (Manifest m : List.of(sample(), extended(), ManifestGroupSectionTest.sample())) {
            Manifest v5 = ManifestCodec.decode(ManifestCodec.encode(m, 5));
            Manifest v6 = ManifestCodec.decode(ManifestCodec.encode(m, 6));
            assertArrayEquals(ManifestCodec.encode(v5, 6), ManifestCodec.encode(v6, 6));
            assertArrayEquals(ManifestCodec.encode(m, 6), ManifestCodec.encode(v6, 6));
        }
    }

    /**
     * Version 7 records a fork's shared blocks with their writer's checksum identity; only a
     * manifest with a shared block is written as 7 (one without stays 6, readable by older builds),
     * and no older version can hold one.
     */
    @Test
    void sharedBlocksRoundTripInVersionSevenWithTheirWritersIdentity() {
        Manifest m = sample();
        EntryChecksum writer = EntryChecksum.forSequence("the-source");
        m.layers()[0].setShared(0, 0, 0, 4096, 11, true, writer);
        m.layers()[1].setShared(0, 1, 0, 4096, 13, true, EntryChecksum.UNSALTED);
        byte[] data = ManifestCodec.encode(m);
        assertEquals(7, java.nio.ByteBuffer.wrap(data).getInt(4));
        Manifest d = ManifestCodec.decode(data);
        EntryChecksum own = d.entryChecksum();
        assertTrue(d.layers()[0].shared(0));
        assertEquals(writer, d.layers()[0].checksum(0, own));
        assertFalse(d.layers()[0].shared(1));
        assertEquals(own, d.layers()[0].checksum(1, own));
        assertEquals(EntryChecksum.UNSALTED, d.layers()[1].checksum(0, own));
        assertArrayEquals(data, ManifestCodec.encode(d), "decode and encode agree");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ManifestCodec.encode(m, 6));
        assertEquals("version = 6 cannot record shared (forked) blocks; allowed: 7..7", e.getMessage());
        // An unknown origin tag is refused by name.
        byte[] bad = data.clone();
        int at = 4 + 4 + 2 + "seq-1".length() + 4 * 4 + 1 + 4 + 4 + 2 * (2 + 2) + 4 + 5 * 4 + 4 + 18;
        assertEquals(1, bad[at], "layer 0 block 0's origin tag");
        bad[at] = 9;
        e = assertThrows(IllegalArgumentException.class, () -> ManifestCodec.decode(withCrc(bad)));
        assertEquals("manifest layer 0 block 0 has origin 9; allowed: 0, 1 or 2", e.getMessage());
    }

    /** Version 6 names and versions each layout section; a reader refuses one it does not know. */
    @Test
    void anUnknownOrMisSizedSectionIsRefusedWithItsName() throws Exception {
        byte[] data = ManifestCodec.encode(sample());
        byte[] name = "clusters".getBytes(java.nio.charset.StandardCharsets.UTF_8);
        int at = indexOf(data, name);
        assertTrue(at > 0, "the cluster section is named");
        byte[] renamed = data.clone();
        System.arraycopy("cluxters".getBytes(java.nio.charset.StandardCharsets.UTF_8), 0, renamed, at, name.length);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ManifestCodec.decode(withCrc(renamed)));
        assertEquals("manifest layer 1 has a layout section 'cluxters' version 3 that this build cannot read; allowed:"
                + " 'clusters' 2..4, 'groups' 1..2, 'units' 1..2 (once)", e.getMessage());
        byte[] newer = data.clone();
        newer[at + name.length + 1] = 9; // the section's version (u16, low byte)
        e = assertThrows(IllegalArgumentException.class, () -> ManifestCodec.decode(withCrc(newer)));
        assertTrue(e.getMessage().contains("'clusters' version 9"), e.getMessage());
        byte[] longer = data.clone();
        longer[at + name.length + 2 + 3] += 1; // the section's byte count (u32, low byte): one more than its body
        e = assertThrows(IllegalArgumentException.class, () -> ManifestCodec.decode(withCrc(longer)));
        assertTrue(e.getMessage().contains("section 'clusters' declares") || e.getMessage().contains("truncated"),
                e.getMessage());
    }

    static int indexOf(byte[] data, byte[] what) {
        outer:
        for (int i = 0; i + what.length <= data.length; i++) {
            for (int j = 0; j < what.length; j++) {
                if (data[i + j] != what[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    /** {@code data} with its trailing CRC32C recomputed (a CRC-valid rewrite). */
    static byte[] withCrc(byte[] data) {
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(data, 0, data.length - 4);
        java.nio.ByteBuffer.wrap(data).putInt(data.length - 4, (int) crc.getValue());
        return data;
    }

    @Test
    void anExtendedLayoutRoundTrips() {
        ClusterLayout built = extended().clusters()[1];
        ClusterLayout c = ManifestCodec.decode(ManifestCodec.encode(extended())).clusters()[1];
        assertEquals(4, c.clusteredTokens());
        assertEquals(3, c.clusterCount());
        assertEquals(1, c.coActivationClusters(), "clusters created online are not Algorithm 1's");
        assertArrayEquals(new int[] {0, 1, 3}, c.members(0), "old members first, then the appended one");
        assertArrayEquals(new int[] {3}, c.members(2));
        assertEquals(3, c.medoid(2));
        assertEquals(3, c.clusterSegmentEnd(0) - c.clusterSegmentStart(0));
        assertEquals(2, c.replicaCount(3));
        for (int s = 0; s < built.segmentCount(); s++) {
            assertEquals(built.segmentDevice(s), c.segmentDevice(s));
            assertEquals(built.segmentOffset(s), c.segmentOffset(s));
            assertEquals(built.segmentLength(s), c.segmentLength(s));
        }
        for (int e = 0; e < built.storedEntries(); e++) {
            assertEquals(built.entryToken(e), c.entryToken(e));
            assertEquals(built.entryCrc(e), c.entryCrc(e));
            assertEquals(built.entryOffset(e), c.entryOffset(e));
        }
        for (int k = 0; k < 3; k++) {
            assertEquals(built.nextDevice(k), c.nextDevice(k));
        }
        assertArrayEquals(new int[] {2, 4}, c.segmentsAddedSince(sample().clusters()[1]),
                "the segments the extension wrote");
        assertThrows(IllegalArgumentException.class, () -> sample().clusters()[1].segmentsAddedSince(c));
    }

    @Test
    void versionTwoManifestsStillDecodeWithEq7NextDevices() {
        Manifest m = ManifestCodec.decode(ManifestCodec.encode(unsalted(sample()), 2));
        ClusterLayout c = m.clusters()[1];
        // Cluster sizes 2 and 2 over 2 devices: p = 2 then 4, so both next devices are 0.
        assertEquals(0, c.nextDevice(0));
        assertEquals(0, c.nextDevice(1));
        assertArrayEquals(new int[] {2, 0}, c.members(1));
        // Version 2 allowed at most one segment per device per cluster; version 3 lifts it.
        assertThrows(IllegalArgumentException.class,
                () -> ManifestCodec.decode(ManifestCodec.encode(unsalted(extended()), 2)));
    }

    @Property(tries = 300)
    void everyTruncationOrBitFlipIsRejected(@ForAll @IntRange(min = 0, max = 10_000) int position,
            @ForAll @IntRange(min = 0, max = 7) int bit, @ForAll boolean truncate) {
        byte[] data = ManifestCodec.encode(sample());
        int p = position % data.length;
        byte[] damaged;
        if (truncate) {
            damaged = java.util.Arrays.copyOf(data, p);
        } else {
            damaged = data.clone();
            damaged[p] ^= (byte) (1 << bit);
        }
        assertThrows(IllegalArgumentException.class, () -> ManifestCodec.decode(damaged));
    }

    @Test
    void extentsOutsideTheirDeviceAreRejected() throws Exception {
        var dir = java.nio.file.Files.createTempDirectory("kvo-mc");
        try {
            var d0 = java.nio.file.Files.createDirectories(dir.resolve("0"));
            var d1 = java.nio.file.Files.createDirectories(dir.resolve("1"));
            List<DevicePool> pools = DeviceSet.open(io.kvoffload.KvConfig.builder().ssdDirectories(d0, d1)
                    .deviceCapacityBytes(1 << 20).build(), FileModes.PRIVATE).healthy();
            DevicePool p0 = pools.get(0);
            DevicePool p1 = pools.get(1);
            Manifest ok = sample();
            Manifest m = new Manifest(ok.id(), ok.shape(), ok.blockTokens(), List.of(p0.uuid(), p1.uuid()),
                    ok.tokenIds(), ok.layers(), ok.clusters(), 0, 1);
            // Extent length must be what the shape implies (4 tokens × 64 bytes → one 4096 unit).
            ManifestCodec.validate(m, List.of(p0, p1));
            m.layers()[0].set(1, 1, (1 << 20) - 4096 + 4096, 4096, 0, true);
            var e = assertThrows(IllegalArgumentException.class, () -> ManifestCodec.validate(m, List.of(p0, p1)));
            assertEquals(true, e.getMessage().contains("is not a valid 4096-byte extent of device 1"), e.getMessage());
            Manifest foreign = new Manifest(ok.id(), ok.shape(), ok.blockTokens(), List.of(p0.uuid(), "elsewhere"),
                    ok.tokenIds(), sample().layers(), ok.clusters(), 0, 1);
            var e2 = assertThrows(IllegalArgumentException.class,
                    () -> ManifestCodec.validate(foreign, List.of(p0, p1)));
            assertEquals(true, e2.getMessage().contains("not among the configured"), e2.getMessage());
        } finally {
            io.kvoffload.testing.TestEngines.deleteRecursively(dir);
        }
    }
}
