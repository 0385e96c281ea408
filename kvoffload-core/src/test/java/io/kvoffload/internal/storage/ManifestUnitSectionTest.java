package io.kvoffload.internal.storage;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The manifest's unit section (a strategy's auxiliary layout beside the entry layout): round trip and refusals. */
class ManifestUnitSectionTest {
    /** Layer 1 of the group sample gets 3 units of 100 bytes on 2 devices, 4 KiB stride. */
    static Manifest sample() {
        Manifest g = ManifestGroupSectionTest.sample();
        UnitLayout u = new UnitLayout("dual", 7, new byte[] {1, 2, 3}, 100, 4096, new int[] {1, 0},
                new long[] {65536, 131072}, new int[] {8192, 4096}, new int[] {0, 1, 0}, new int[] {41, 42, 43});
        return new Manifest(g.id(), g.shape(), g.blockTokens(), g.deviceUuids(), g.tokenIds(), g.layers(), g.clusters(),
                g.groups(), new UnitLayout[] {null, u}, g.commitMillis(), g.commitNumber(), true);
    }

    @Test
    void roundTripsBesideTheGroupLayout() {
        Manifest m = ManifestCodec.decode(ManifestCodec.encode(sample()));
        assertNull(m.units()[0]);
        UnitLayout u = m.units()[1];
        assertEquals("dual", u.owner());
        assertEquals(7, u.version());
        assertArrayEquals(new byte[] {1, 2, 3}, u.params());
        assertEquals(3, u.unitCount());
        assertEquals(100, u.unitBytes());
        assertEquals(65536, u.unitOffset(0));
        assertEquals(65536 + 4096, u.unitOffset(2), "a segment's units sit at consecutive strides");
        assertEquals(0, u.unitDevice(1));
        assertEquals(43, u.unitCrc(2));
        assertEquals(4, m.groups()[1].groupCount(), "the entry layout stays");
        long[] sum = {0};
        m.forEachExtent((d, off, len) -> sum[0] += len);
        assertEquals(2 * 4096 + 2 * 2048 + 8192 + 4096, sum[0], "unit segments are extents of the sequence");
    }

    @Test
    void olderVersionsAndMalformedLayoutsAreRefusedWithAReason() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ManifestCodec.encode(ManifestCodecTest.unsalted(sample()), 4));
        assertTrue(e.getMessage().contains("cannot hold unit layouts") && e.getMessage().contains("dual"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new UnitLayout("dual", 1, new byte[0], 100, 4096,
                new int[] {0}, new long[] {0}, new int[] {4096}, new int[] {0, 0}, new int[] {1, 2}));
        assertTrue(e.getMessage().contains("cannot hold unit 1"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new UnitLayout("", 1, new byte[0], 100, 4096,
                new int[] {0}, new long[] {0}, new int[] {4096}, new int[] {0}, new int[] {1}));
        assertTrue(e.getMessage().contains("owner"), e.getMessage());
    }

    @Test
    void aHeadShardedUnitLayoutRoundTripsAsSectionVersionTwoAndAStripedOneStaysOne() {
        assertEquals(1, ManifestGroupSectionTest.sectionVersion(ManifestCodec.encode(sample()), UnitSection.NAME));
        Manifest m = sample();
        UnitLayout sharded = new UnitLayout("dual", 7, new byte[] {1}, 100, 4096, new int[] {1, 0},
                new long[] {65536, 131072}, new int[] {8192, 4096}, new int[] {0, 1, 0}, new int[] {41, 42, 43}, 2,
                new int[] {1, 0, UnitLayout.NO_SHARD});
        byte[] data = ManifestCodec.encode(new Manifest(m.id(), m.shape(), m.blockTokens(), m.deviceUuids(),
                m.tokenIds(), m.layers(), m.clusters(), m.groups(), new UnitLayout[] {null, sharded}, m.commitMillis(),
                m.commitNumber(), true));
        assertEquals(2, ManifestGroupSectionTest.sectionVersion(data, UnitSection.NAME));
        UnitLayout u = ManifestCodec.decode(data).units()[1];
        assertEquals(2, u.shards());
        assertEquals(1, u.unitShard(0));
        assertEquals(0, u.unitShard(1));
        assertEquals(UnitLayout.NO_SHARD, u.unitShard(2), "a unit of several heads stays where its source put it");
        assertEquals(43, u.unitCrc(2));
        assertEquals(UnitLayout.NO_SHARD, sample().units()[1].unitShard(0), "a striped layout has no head groups");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new UnitLayout("dual", 1,
                new byte[0], 100, 4096, new int[] {0}, new long[] {0}, new int[] {4096}, new int[] {0}, new int[] {1}, 2,
                new int[] {2}));
        assertTrue(e.getMessage().contains("head group 2") && e.getMessage().contains("0..1"), e.getMessage());
    }
}
