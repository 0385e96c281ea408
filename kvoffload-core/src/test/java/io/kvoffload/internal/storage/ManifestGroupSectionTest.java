package io.kvoffload.internal.storage;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.internal.kvswap.LowRankAdapter;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.zip.CRC32C;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/** The manifest's group section (version 4): round trip, version-2 compatibility, malformed sections rejected with a reason. */
class ManifestGroupSectionTest {
    static final KvShape SHAPE = new KvShape(2, 4, 2, 8, DType.F16); // entry 64 bytes
    static final int MARK_TOKENS = 8;

    /** Layer 0 in blocks; layer 1's 8 tokens in 4 groups of 2 on 2 devices, 1 KiB stride, with an adapter. */
    static Manifest sample() {
        BlockTable[] t = {new BlockTable(2), new BlockTable(2)};
        t[0].set(0, 0, 0, 4096, 11, true);
        t[0].set(1, 1, 4096, 4096, 12, true);
        t[1].ensureBlocks(2); // both blocks of layer 1 live in its groups
        float[] p = new float[16 * 3];
        for (int i = 0; i < p.length; i++) {
            p[i] = (i % 7) * 0.25f - 0.5f;
        }
        LowRankAdapter a = LowRankAdapter.of(2, 8, 3, p);
        GroupLayout g = new GroupLayout(MARK_TOKENS, 2, SHAPE.entryBytes(), 1024, new int[] {0, 1},
                new long[] {8192, 16384}, new int[] {2048, 2048}, new int[] {0, 1, 0, 1}, new int[] {31, 32, 33, 34}, a);
        return new Manifest("seq-g", SHAPE, 4, List.of("u0", "u1"), new int[] {5, 6, 7, 8, 9, 10, 11, 12}, t,
                new ClusterLayout[2], new GroupLayout[] {null, g}, 123, 2);
    }

    @Test
    void roundTripsTheGroupLayoutAndItsAdapter() {
        Manifest in = sample();
        Manifest m = ManifestCodec.decode(ManifestCodec.encode(in));
        assertNull(m.groups()[0]);
        GroupLayout g = m.groups()[1];
        assertEquals(8, g.groupedTokens());
        assertEquals(2, g.groupSize());
        assertEquals(4, g.groupCount());
        assertEquals(1024, g.stride());
        assertEquals(8192, g.groupOffset(0));
        assertEquals(16384, g.groupOffset(1));
        assertEquals(8192 + 1024, g.groupOffset(2), "a segment's groups sit at consecutive strides");
        assertEquals(1, g.groupDevice(3));
        assertEquals(34, g.groupCrc(3));
        assertArrayEquals(((LowRankAdapter) in.groups()[1].state()).projection(), ((LowRankAdapter) g.state()).projection());
        assertEquals(8, m.relaidTokens(1));
        long[] sum = {0};
        m.forEachExtent((d, off, len) -> sum[0] += len);
        assertEquals(2 * 4096 + 2 * 2048, sum[0], "group segments are extents of the sequence");
    }

    @Test
    void versionTwoManifestsStillDecode() {
        Manifest plain = ManifestCodecTest.unsalted(new Manifest("v2", SHAPE, 4, List.of("u0"), new int[] {1, 2},
                new BlockTable[] {block(), block()}, new ClusterLayout[2], 5, 1));
        byte[] v2 = ManifestCodec.encode(plain, 2);
        assertEquals(2, ByteBuffer.wrap(v2).getInt(4));
        Manifest m = ManifestCodec.decode(v2);
        assertEquals("v2", m.id());
        assertNull(m.groups()[0]);
        assertNull(m.groups()[1]);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ManifestCodec.encode(ManifestCodecTest.unsalted(sample()), 2));
        assertTrue(e.getMessage().contains("cannot hold group layouts"), e.getMessage());
    }

    private static BlockTable block() {
        BlockTable t = new BlockTable(1);
        t.set(0, 0, 0, 4096, 1, true);
        return t;
    }

    /** Offset of the group section's first field (groupedTokens), found by its known values. */
    static int groupSection(byte[] data) {
        ByteBuffer b = ByteBuffer.wrap(data);
        for (int i = 0; i + 12 <= data.length; i++) {
            if (b.getInt(i) == MARK_TOKENS && b.getInt(i + 4) == 2 && b.getInt(i + 8) == 1024) {
                return i;
            }
        }
        throw new AssertionError("group section not found");
    }

    /** Writes {@code value} at {@code at} and recomputes the trailing checksum, so only the section's checks can object. */
    static byte[] patched(int at, int value, int width) {
        byte[] d = ManifestCodec.encode(sample());
        ByteBuffer b = ByteBuffer.wrap(d);
        if (width == 4) {
            b.putInt(at, value);
        } else if (width == 2) {
            b.putShort(at, (short) value);
        } else {
            b.put(at, (byte) value);
        }
        return resealed(d);
    }

    static byte[] resealed(byte[] d) {
        CRC32C c = new CRC32C();
        c.update(d, 0, d.length - 4);
        ByteBuffer.wrap(d).putInt(d.length - 4, (int) c.getValue());
        return d;
    }

    static void assertRejected(byte[] data, String... parts) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ManifestCodec.decode(data));
        for (String p : parts) {
            assertTrue(e.getMessage().contains(p), "'" + e.getMessage() + "' lacks '" + p + "'");
        }
    }

    @Test
    void malformedGroupSectionsAreRejectedWithTheirReason() {
        int s = groupSection(ManifestCodec.encode(sample()));
        int seg0 = s + 16; // u16 device, i64 offset, u32 length
        int groups = seg0 + 2 * 14;
        int group0 = groups + 4; // u32 segment, i32 crc
        int adapterLength = group0 + 4 * 8;
        // Version 5 flags each layer's group layout with a byte (version 6 names its sections instead).
        byte[] v5 = ManifestCodec.encode(sample(), 5);
        v5[groupSection(v5) - 1] = 2;
        assertRejected(resealed(v5), "group flag 2", "allowed: 0 or 1");
        assertRejected(patched(s + 4, 0, 4), "groupSize = 0", "1..4096");
        assertRejected(patched(s + 4, 3, 4), "groupedTokens = 8", "multiple of groupSize 3");
        assertRejected(patched(s, 16, 4), "groupedTokens = 16", "8 tokens");
        assertRejected(patched(s + 8, 100, 4), "stride = 100", "allowed: 128..");
        assertRejected(patched(s + 12, 1 << 30, 4), "group segments count 1073741824", "exceeds");
        assertRejected(patched(seg0, 7, 2), "segment 0 names device 7", "0..1");
        assertRejected(patched(seg0 + 10, 512, 4), "segment 0 length 512", "at least one group stride (1024)");
        assertRejected(patched(seg0 + 10, 1024, 4), "segment 0 of 1024 bytes cannot hold group 2");
        assertRejected(patched(groups, 3, 4), "nGroups = 3", "exactly 4");
        assertRejected(patched(groups, -1, 4), "groups count -1");
        assertRejected(patched(group0 + 8, 2, 4), "group 1 names segment 2", "0..1");
        assertRejected(patched(group0 + 8, -5, 4), "group 1 names segment -5");
        assertRejected(patched(adapterLength, 1 << 20, 4), "adapter bytes count 1048576", "exceeds");
        assertRejected(patched(adapterLength + 4 + 40, 0x7f, 1), "group layout: adapter: checksum mismatch");
    }

    @Test
    void groupsOnAClusteredLayerAreRejected() {
        Manifest g = sample();
        ClusterLayout c = new ClusterLayout(2, SHAPE.entryBytes(), 0.35, 1, new int[] {0}, new int[] {0, 1},
                new int[] {0}, new long[] {32768}, new int[] {4096}, new int[] {0, 2}, new int[] {0, 1},
                new int[] {1, 2}, new int[] {0});
        Manifest both = new Manifest(g.id(), SHAPE, 4, g.deviceUuids(), g.tokenIds(), g.layers(),
                new ClusterLayout[] {null, c}, g.groups(), 1, 1);
        assertRejected(ManifestCodec.encode(both), "both a cluster and a group layout");
    }

    /** Any byte of the group section set to any value (checksum resealed): a valid manifest or a reason, nothing else. */
    @Property(tries = 400)
    void anyCorruptionOfTheSectionIsAValidManifestOrARejection(@ForAll @IntRange(min = 0, max = 100_000) int pos,
            @ForAll @IntRange(min = 0, max = 255) int value) {
        byte[] d = ManifestCodec.encode(sample());
        int s = groupSection(d) - 1;
        int at = s + pos % (d.length - 4 - 16 - s);
        d[at] = (byte) value;
        try {
            Manifest m = ManifestCodec.decode(resealed(d));
            GroupLayout g = m.groups()[1];
            if (g != null) {
                for (int k = 0; k < g.groupCount(); k++) {
                    assertTrue(g.groupOffset(k) + g.stride() <= g.segmentOffset(segmentOf(g, k)) + g.segmentLength(
                            segmentOf(g, k)), "group " + k + " lies inside its segment");
                }
            }
        } catch (IllegalArgumentException expected) {
            assertTrue(expected.getMessage() != null && !expected.getMessage().isEmpty());
        }
    }

    private static int segmentOf(GroupLayout g, int k) {
        return g.groupSeg[k];
    }

    /** The sample's layer 1 head-sharded: 2 head groups (of the 2 KV heads) per group, 8 keys of 64 bytes. */
    static Manifest sharded() {
        Manifest m = sample();
        GroupLayout g = m.groups()[1];
        GroupLayout s = new GroupLayout(MARK_TOKENS, 2, SHAPE.entryBytes(), 1024, new int[] {0, 1},
                new long[] {8192, 16384}, new int[] {4096, 4096}, new int[] {0, 1, 1, 0, 0, 1, 1, 0},
                new int[] {41, 42, 43, 44, 45, 46, 47, 48}, g.state(), 2);
        return new Manifest(m.id(), m.shape(), m.blockTokens(), m.deviceUuids(), m.tokenIds(), m.layers(),
                m.clusters(), new GroupLayout[] {null, s}, m.commitMillis(), m.commitNumber());
    }

    /** The u16 version of the layer's section named {@code name} in an encoded manifest. */
    static int sectionVersion(byte[] data, String name) {
        int at = ManifestCodecTest.indexOf(data, name.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        return ByteBuffer.wrap(data).getShort(at + name.length()) & 0xFFFF;
    }

    @Test
    void aHeadShardedGroupLayoutRoundTripsAsSectionVersionTwoAndAStripedOneStaysOne() {
        assertEquals(1, sectionVersion(ManifestCodec.encode(sample()), GroupSection.NAME),
                "older builds still read striped group layouts");
        byte[] data = ManifestCodec.encode(sharded());
        assertEquals(2, sectionVersion(data, GroupSection.NAME));
        GroupLayout g = ManifestCodec.decode(data).groups()[1];
        assertEquals(2, g.shards());
        assertEquals(4, g.groupCount());
        assertEquals(8, g.keyCount());
        assertEquals(SHAPE.entryBytes(), g.storedBytes(), "a head group of 2 tokens: 2 × 64 / 2 bytes");
        assertEquals(EntryChecksum.Kind.GROUP_SHARD, g.checksumKind());
        assertEquals(5, g.checksumPosition(5), "a head group is seeded with its key");
        assertEquals(1, g.groupDevice(5));
        assertEquals(16384 + 2 * 1024, g.groupOffset(5), "segment 1's third key");
        assertEquals(48, g.groupCrc(7));
        // A plain-checksum manifest format cannot hold it: refused by name, never written half.
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> ManifestCodec.encode(ManifestCodecTest.unsalted(sharded())));
        assertTrue(e.getMessage().contains("head-sharded"), e.getMessage());
        // Shards that do not divide the KV heads are refused with the value and what is allowed.
        int s = groupSection(data);
        byte[] three = data.clone();
        ByteBuffer.wrap(three).putShort(s + 12, (short) 3);
        assertRejected(resealed(three), "shards = 3", "divisor of the 2 KV heads");
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> new GroupLayout(MARK_TOKENS,
                2, SHAPE.entryBytes(), 1024, new int[] {0}, new long[] {0}, new int[] {8192}, new int[4], new int[4],
                sample().groups()[1].state(), 2));
        assertTrue(bad.getMessage().contains("inconsistent"), bad.getMessage());
    }
}
