package io.kvoffload.internal.storage;

import java.io.DataOutputStream;
import java.io.IOException;

/**
 * The segment table a segmented layout section writes (group and unit layouts alike): the segments
 * ({@code device u16, offset i64, length i32} each), then one {@code (segment i32, crc i32)} per
 * stored unit. Each section reads it back with its own bounds, so only the writing is shared.
 */
final class SegmentTables {
    private SegmentTables() {}

    static void write(DataOutputStream out, int[] segDevice, long[] segOffset, int[] segLength, int[] unitSeg,
            int[] unitCrc) throws IOException {
        out.writeInt(segDevice.length);
        for (int s = 0; s < segDevice.length; s++) {
            out.writeShort(segDevice[s]);
            out.writeLong(segOffset[s]);
            out.writeInt(segLength[s]);
        }
        out.writeInt(unitSeg.length);
        for (int k = 0; k < unitSeg.length; k++) {
            out.writeInt(unitSeg[k]);
            out.writeInt(unitCrc[k]);
        }
    }
}
