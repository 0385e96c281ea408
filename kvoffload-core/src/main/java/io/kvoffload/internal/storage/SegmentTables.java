package io.kvoffload.internal.storage;

import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * The segment table a segmented layout section writes (group and unit layouts alike): the head-group
 * count where the section version has one, the segments ({@code device u16, offset i64, length i32}
 * each), then one {@code (segment i32, crc i32)} per
 * stored unit. The segments are read back here, each naming a device that exists; each section
 * checks the rest against its own bounds.
 */
final class SegmentTables {
    private SegmentTables() {}

    /** The segments of one layout section: device, byte offset and length of each. */
    record Segments(int[] device, long[] offset, int[] length) {}

    /**
     * Reads the segments {@link #write} wrote; {@code what} names them in a count error, {@code where}
     * prefixes every message.
     *
     * @throws IllegalArgumentException if the count exceeds the data or a segment names a device
     *     outside {@code 0..nDev-1}
     */
    static Segments readSegments(ByteBuffer buf, String where, String what, int nDev) {
        int segs = ManifestCodec.count(buf, what, 14);
        int[] device = new int[segs];
        long[] offset = new long[segs];
        int[] length = new int[segs];
        for (int s = 0; s < segs; s++) {
            device[s] = buf.getShort() & 0xFFFF;
            if (device[s] >= nDev) {
                throw new IllegalArgumentException(where + "segment " + s + " names device " + device[s]
                        + "; allowed: 0.." + (nDev - 1));
            }
            offset[s] = buf.getLong();
            length[s] = buf.getInt();
        }
        return new Segments(device, offset, length);
    }

    /**
     * Writes {@code layout}'s head-group count (a u16, when the section version has one:
     * {@code withShards}), its segments, then one {@code (segment, crc)} per stored unit.
     */
    static void write(DataOutputStream out, SegmentedLayout layout, boolean withShards, int[] unitSeg, int[] unitCrc)
            throws IOException {
        if (withShards) {
            out.writeShort(layout.shards());
        }
        out.writeInt(layout.segDevice.length);
        for (int s = 0; s < layout.segDevice.length; s++) {
            out.writeShort(layout.segDevice[s]);
            out.writeLong(layout.segOffset[s]);
            out.writeInt(layout.segLength[s]);
        }
        out.writeInt(unitSeg.length);
        for (int k = 0; k < unitSeg.length; k++) {
            out.writeInt(unitSeg[k]);
            out.writeInt(unitCrc[k]);
        }
    }
}
