package io.kvoffload.internal.storage;

import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * A layer's auxiliary unit layout in a manifest ({@link UnitLayout}: a strategy's own units beside
 * the token-major entries), section {@value #NAME}, versions 1 and 2:
 *
 * <pre>
 * str owner (u16 length, UTF-8), u16 ownerVersion, u32 nParams, params bytes,
 * u32 unitBytes, u32 stride,
 * (version 2) u16 shards: head groups ({@link HeadShards}, 2..kvHeads, dividing kvHeads),
 * u32 nSegments, then per segment: u16 device, i64 offset, u32 length;
 * u32 nUnits, then per unit: u32 segment, i32 crc32c;
 * (version 2) per unit: u16 head group, 0xFFFF for a unit of no single head group
 * </pre>
 *
 * The owner's format evolves on {@code ownerVersion}, which the owning strategy checks when it opens
 * the layer; this section's own version covers only the framing above. A token-striped layout is
 * still written as version 1, which builds before head sharding read; only a head-sharded one is 2.
 */
final class UnitSection extends SectionKind<UnitLayout> {
    static final String NAME = "units";
    static final int VERSION = 2;
    /** The newest version without head groups: what a token-striped layout is written as. */
    static final int STRIPED_VERSION = 1;
    private static final int NONE = 0xFFFF;

    /** This layout's section kind, for {@link LayoutSections}. */
    static final UnitSection KIND = new UnitSection();

    private UnitSection() {
        super(new Info(NAME, "unit", Slot.AUXILIARY, STRIPED_VERSION, STRIPED_VERSION, VERSION, 0));
    }

    @Override UnitLayout[] layouts(Manifest m) { return m.units(); }
    @Override int stride(UnitLayout u) { return u.stride(); }
    @Override String label(UnitLayout u) { return u.owner(); }

    @Override
    void write(DataOutputStream out, UnitLayout u, int version) throws IOException {
        byte[] owner = u.owner.getBytes(StandardCharsets.UTF_8);
        out.writeShort(owner.length);
        out.write(owner);
        out.writeShort(u.version);
        out.writeInt(u.params.length);
        out.write(u.params);
        out.writeInt(u.unitBytes);
        out.writeInt(u.stride);
        SegmentTables.write(out, u, version >= 2, u.unitSeg, u.unitCrc);
        if (version >= 2) {
            for (int k = 0; k < u.unitSeg.length; k++) {
                out.writeShort(u.unitShard(k) == UnitLayout.NO_SHARD ? NONE : u.unitShard(k));
            }
        }
    }

    /** Reads one layer's unit section; every count is checked against the bytes left first. */
    @Override
    UnitLayout read(ByteBuffer buf, Context at, int version) {
        String where = "manifest layer " + at.layer() + " unit layout: ";
        int ownerLength = buf.getShort() & 0xFFFF;
        if (ownerLength > buf.remaining()) {
            throw new IllegalArgumentException(where + "owner of " + ownerLength + " bytes exceeds the data");
        }
        byte[] owner = new byte[ownerLength];
        buf.get(owner);
        int ownerVersion = buf.getShort() & 0xFFFF;
        byte[] params = new byte[ManifestCodec.count(buf, "unit params bytes", 1)];
        buf.get(params);
        int unitBytes = buf.getInt();
        int stride = buf.getInt();
        int shards = ManifestCodec.shards(buf, version >= 2, where, at.shape());
        SegmentTables.Segments seg = SegmentTables.readSegments(buf, where, "unit segments", at.devices());
        int units = ManifestCodec.count(buf, "units", 8);
        int[] unitSeg = new int[units];
        int[] unitCrc = new int[units];
        for (int k = 0; k < units; k++) {
            unitSeg[k] = buf.getInt();
            unitCrc[k] = buf.getInt();
        }
        int[] unitShard = null;
        if (version >= 2) {
            if ((long) units * 2 > buf.remaining()) {
                throw new IllegalArgumentException(where + units + " unit head groups exceed the " + buf.remaining()
                        + " bytes that remain");
            }
            unitShard = new int[units];
            for (int k = 0; k < units; k++) {
                int s = buf.getShort() & 0xFFFF;
                unitShard[k] = s == NONE ? UnitLayout.NO_SHARD : s;
            }
        }
        try {
            return new UnitLayout(new String(owner, StandardCharsets.UTF_8), ownerVersion, params, unitBytes, stride,
                    seg.device(), seg.offset(), seg.length(), unitSeg, unitCrc, shards, unitShard);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(where + e.getMessage(), e);
        }
    }
}
