package io.kvoffload.internal.storage;

import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * A layer's auxiliary unit layout in a manifest ({@link UnitLayout}: a strategy's own units beside
 * the token-major entries), section {@value #NAME}, version 1:
 *
 * <pre>
 * str owner (u16 length, UTF-8), u16 ownerVersion, u32 nParams, params bytes,
 * u32 unitBytes, u32 stride,
 * u32 nSegments, then per segment: u16 device, i64 offset, u32 length;
 * u32 nUnits, then per unit: u32 segment, i32 crc32c
 * </pre>
 *
 * The owner's format evolves on {@code ownerVersion}, which the owning strategy checks when it opens
 * the layer; this section's own version covers only the framing above.
 */
final class UnitSection {
    static final String NAME = "units";
    static final int VERSION = 1;

    private UnitSection() {}

    static void write(DataOutputStream out, UnitLayout u) throws IOException {
        byte[] owner = u.owner.getBytes(StandardCharsets.UTF_8);
        out.writeShort(owner.length);
        out.write(owner);
        out.writeShort(u.version);
        out.writeInt(u.params.length);
        out.write(u.params);
        out.writeInt(u.unitBytes);
        out.writeInt(u.stride);
        SegmentTables.write(out, u.segDevice, u.segOffset, u.segLength, u.unitSeg, u.unitCrc);
    }

    /** Reads one layer's unit section; every count is checked against the bytes left first. */
    static UnitLayout read(ByteBuffer buf, int layer, int nDev) {
        String where = "manifest layer " + layer + " unit layout: ";
        int ownerLength = buf.getShort() & 0xFFFF;
        if (ownerLength > buf.remaining()) {
            throw new IllegalArgumentException(where + "owner of " + ownerLength + " bytes exceeds the data");
        }
        byte[] owner = new byte[ownerLength];
        buf.get(owner);
        int version = buf.getShort() & 0xFFFF;
        byte[] params = new byte[ManifestCodec.count(buf, "unit params bytes", 1)];
        buf.get(params);
        int unitBytes = buf.getInt();
        int stride = buf.getInt();
        SegmentTables.Segments seg = SegmentTables.readSegments(buf, where, "unit segments", nDev);
        int units = ManifestCodec.count(buf, "units", 8);
        int[] unitSeg = new int[units];
        int[] unitCrc = new int[units];
        for (int k = 0; k < units; k++) {
            unitSeg[k] = buf.getInt();
            unitCrc[k] = buf.getInt();
        }
        try {
            return new UnitLayout(new String(owner, StandardCharsets.UTF_8), version, params, unitBytes, stride,
                    seg.device(), seg.offset(), seg.length(), unitSeg, unitCrc);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(where + e.getMessage(), e);
        }
    }

    /** This layout's section kind, for {@link LayoutSections}. */
    static final SectionKind<UnitLayout> KIND = new SectionKind<>(
            new SectionKind.Info(NAME, "unit", SectionKind.Slot.AUXILIARY, VERSION, VERSION, 0)) {
        @Override UnitLayout[] layouts(Manifest m) { return m.units(); }
        @Override int stride(UnitLayout u) { return u.stride(); }
        @Override String label(UnitLayout u) { return u.owner(); }

        @Override
        void write(DataOutputStream out, UnitLayout u, int version) throws IOException {
            UnitSection.write(out, u);
        }

        @Override
        UnitLayout read(ByteBuffer body, Context at, int version) {
            return UnitSection.read(body, at.layer(), at.devices());
        }
    };
}
