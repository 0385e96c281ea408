package io.kvoffload.internal.storage;

import io.kvoffload.KvShape;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * A layer's group layout in a manifest (groups of G tokens stored {@code [K of G | V of G]}),
 * section {@value #NAME}, versions 1 and 2:
 *
 * <pre>
 * u32 groupedTokens, u32 groupSize, u32 stride,
 * (version 2) u16 shards: head groups per group ({@link HeadShards}, 2..kvHeads, dividing kvHeads),
 * u32 nSegments, then per segment: u16 device, i64 offset, u32 length;
 * u32 nGroups (stored keys: groupedTokens / groupSize × shards), then per key: u32 segment, i32 crc32c;
 * u32 stateBytes, the grouping strategy's {@link GroupState} in its own checksummed form
 * </pre>
 *
 * A token-striped layout (one key per group) is still written as version 1, which builds before
 * head sharding read; only a head-sharded one is version 2.
 */
final class GroupSection extends SectionKind<GroupLayout> {
    static final String NAME = "groups";
    static final int VERSION = 2;
    /** The newest version without head groups: what a token-striped layout is written as. */
    static final int STRIPED_VERSION = 1;

    /** This layout's section kind, for {@link LayoutSections}. */
    static final GroupSection KIND = new GroupSection();

    private GroupSection() {
        super(new Info(NAME, "group", Slot.ENTRIES, STRIPED_VERSION, STRIPED_VERSION, VERSION, 4));
    }

    /** Manifest versions 4 and 5 hold token-striped group bodies. */
    @Override int flaggedVersion(int manifestVersion) { return STRIPED_VERSION; }
    @Override GroupLayout[] layouts(Manifest m) { return m.groups(); }
    @Override int relaidTokens(GroupLayout g) { return g.groupedTokens(); }
    @Override int stride(GroupLayout g) { return g.stride(); }

    @Override
    void write(DataOutputStream out, GroupLayout g, int version) throws IOException {
        out.writeInt(g.groupedTokens);
        out.writeInt(g.groupSize);
        out.writeInt(g.stride);
        SegmentTables.write(out, g, version >= 2, g.groupSeg, g.groupCrc);
        byte[] a = g.state.encode();
        out.writeInt(a.length);
        out.write(a);
    }

    /** Reads one layer's group section; every count is checked against the bytes left and the shape first. */
    @Override
    GroupLayout read(ByteBuffer buf, Context at, int version) {
        KvShape shape = at.shape();
        int nTok = at.tokens();
        String where = "manifest layer " + at.layer() + " group layout: ";
        int groupedTokens = buf.getInt();
        int groupSize = buf.getInt();
        if (groupSize < 1 || groupSize > 4096) {
            throw new IllegalArgumentException(where + "groupSize = " + groupSize + " is out of range; allowed: 1..4096");
        }
        if (groupedTokens < groupSize || groupedTokens > nTok || groupedTokens % groupSize != 0) {
            throw new IllegalArgumentException(where + "groupedTokens = " + groupedTokens + " is out of range; allowed:"
                    + " a positive multiple of groupSize " + groupSize + " up to the sequence's " + nTok + " tokens");
        }
        int stride = buf.getInt();
        int shards = ManifestCodec.shards(buf, version >= 2, where, shape);
        long data = (long) groupSize * shape.entryBytes() / shards;
        if (stride < data || stride > (data + (1 << 20))) {
            throw new IllegalArgumentException(where + "stride = " + stride + " is out of range; allowed: " + data + ".."
                    + (data + (1 << 20)) + " (groupSize × entryBytes / shards plus alignment padding)");
        }
        SegmentTables.Segments table = SegmentTables.readSegments(buf, where, "group segments", at.devices());
        int[] segDevice = table.device();
        long[] segOffset = table.offset();
        int[] segLength = table.length();
        int segs = segLength.length;
        for (int s = 0; s < segs; s++) {
            if (segLength[s] < stride) {
                throw new IllegalArgumentException(where + "segment " + s + " length " + segLength[s]
                        + " is out of range; allowed: at least one group stride (" + stride + ")");
            }
        }
        int groups = ManifestCodec.count(buf, "groups", 8);
        if (groups != groupedTokens / groupSize * shards) {
            throw new IllegalArgumentException(where + "nGroups = " + groups + " is out of range; allowed: exactly "
                    + groupedTokens / groupSize * shards + " (groupedTokens / groupSize × shards)");
        }
        int[] groupSeg = new int[groups];
        int[] groupCrc = new int[groups];
        for (int k = 0; k < groups; k++) {
            groupSeg[k] = buf.getInt();
            if (groupSeg[k] < 0 || groupSeg[k] >= segs) {
                throw new IllegalArgumentException(where + "group " + k + " names segment " + groupSeg[k]
                        + "; allowed: 0.." + (segs - 1));
            }
            groupCrc[k] = buf.getInt();
        }
        int adapterBytes = ManifestCodec.count(buf, "adapter bytes", 1);
        byte[] a = new byte[adapterBytes];
        buf.get(a);
        GroupState.Codec codec = GroupState.codec();
        GroupState state;
        try {
            state = codec.decode(a, shape);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(where + codec.name() + ": " + e.getMessage(), e);
        }
        try {
            return new GroupLayout(groupedTokens, groupSize, shape.entryBytes(), stride, segDevice, segOffset,
                    segLength, groupSeg, groupCrc, state, shards);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(where + e.getMessage(), e);
        }
    }
}
