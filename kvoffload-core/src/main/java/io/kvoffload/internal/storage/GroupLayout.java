package io.kvoffload.internal.storage;

import io.kvoffload.internal.sched.BucketScheduler;

/**
 * One layer's tokens laid out in groups of G [KVSwap §3.4, Fig. 7]: group {@code g} holds
 * tokens {@code [g·G, (g+1)·G)} as one region {@code [K of G tokens | V of G tokens]} (each token's
 * K is {@code kvHeads × headDim} elements, head after head), padded to a multiple of the devices'
 * direct-I/O alignment (the group's <em>stride</em>), so a group is one aligned read. Groups go
 * round-robin over the devices; a device's groups sit back to back in a few large extents
 * (<em>segments</em>), so groups {@code g} and {@code g + devices} are adjacent there and the
 * scheduler merges them into one read when both are wanted. Each group carries its CRC32C (over its
 * {@code G × entryBytes} data bytes).
 *
 * <p>Tokens {@code [0, groupedTokens)} live here, a whole number of groups; later tokens of the
 * layer stay in the block layout (and, while decoding, in DRAM: the grouping strategy's rolling
 * buffer, whose full groups {@link GroupLayoutWriter#append} later adds in new segments, giving a
 * new layout). The layout also holds the strategy's {@link GroupState} (the predictor that chooses
 * groups), opaque to the store.
 *
 * <p>Head-sharded ({@link io.kvoffload.Placement#HEAD_SHARDED}, {@link HeadShards}): each group is
 * stored as {@code S} <em>keys</em>, key {@code group × S + s} holding head group {@code s} of the
 * group's tokens ({@code [K of their heads in group s | V of them]}), each on the device
 * {@link HeadShards#device} gives it, so a group's read is one read on each of {@code S} devices,
 * each serving whole heads; each key carries its own checksum
 * ({@link EntryChecksum.Kind#GROUP_SHARD}). Immutable; as a {@link BucketScheduler.Replicas} its
 * unit is a stored key (a group, or a head group of one; one copy, {@link #stride()} bytes).
 */
public final class GroupLayout extends SegmentedLayout implements BucketScheduler.Replicas {
    final int groupedTokens;
    final int groupSize;
    final int entryBytes;
    final int stride;
    /** Head groups each group is stored in ({@link HeadShards}): 1 for a token-striped layout. */
    final int shards;
    /**
     * Segment of each stored key (the group, or {@code group × shards + head group} when sharded); a
     * segment's keys sit in ascending key order at consecutive strides.
     */
    final int[] groupSeg;
    final int[] groupCrc;
    final GroupState state;
    // Derived.
    private final long[] groupOffset;

    GroupLayout(int groupedTokens, int groupSize, int entryBytes, int stride, int[] segDevice, long[] segOffset,
            int[] segLength, int[] groupSeg, int[] groupCrc, GroupState state) {
        this(groupedTokens, groupSize, entryBytes, stride, segDevice, segOffset, segLength, groupSeg, groupCrc, state, 1);
    }

    /**
     * A layout of {@code shards} head groups per group ({@link HeadShards}): stored key
     * {@code group × shards + s} holds head group {@code s} of the group's tokens,
     * {@code [K of their group-s heads | V of them]} ({@code G × entryBytes / shards} bytes), padded to
     * {@code stride}; {@code groupSeg} and {@code groupCrc} are per stored key.
     */
    GroupLayout(int groupedTokens, int groupSize, int entryBytes, int stride, int[] segDevice, long[] segOffset,
            int[] segLength, int[] groupSeg, int[] groupCrc, GroupState state, int shards) {
        super(segDevice, segOffset, segLength);
        if (groupSize < 1 || groupSize > 4096 || groupedTokens < groupSize || groupedTokens % groupSize != 0) {
            throw new IllegalArgumentException("group layout of " + groupedTokens + " tokens in groups of " + groupSize
                    + ": allowed groupSize 1..4096 and a positive whole number of groups");
        }
        if (shards < 1 || shards > 0xFFFF || entryBytes % (2 * shards) != 0) {
            throw new IllegalArgumentException("group layout of " + shards + " head groups cannot cut entries of "
                    + entryBytes + " bytes; allowed: 1..65535 head groups dividing each entry's K and V");
        }
        long data = (long) groupSize * entryBytes / shards;
        if (entryBytes < 2 || stride < data || stride > Integer.MAX_VALUE / 2) {
            throw new IllegalArgumentException("group stride " + stride + " cannot hold " + groupSize + " entries of "
                    + entryBytes + " bytes" + (shards > 1 ? " in " + shards + " head groups" : ""));
        }
        int groups = groupedTokens / groupSize;
        int keys = Math.multiplyExact(groups, shards);
        int segs = segDevice.length;
        if (segOffset.length != segs || segLength.length != segs || groupSeg.length != keys
                || groupCrc.length != keys) {
            throw new IllegalArgumentException("group layout arrays are inconsistent: " + segs + " segments, "
                    + groups + " groups of " + shards + " head groups, " + groupSeg.length + " group segments, "
                    + groupCrc.length + " checksums");
        }
        if (state == null) {
            throw new IllegalArgumentException("group layout needs its strategy's state");
        }
        state.checkEntryBytes(entryBytes);
        this.groupedTokens = groupedTokens;
        this.groupSize = groupSize;
        this.entryBytes = entryBytes;
        this.stride = stride;
        this.shards = shards;
        this.groupSeg = groupSeg;
        this.groupCrc = groupCrc;
        this.state = state;
        this.groupOffset = stridedOffsets("group", groupSeg, segOffset, segLength, stride);
    }

    /** Tokens {@code [0, groupedTokens())} live in this layout. */
    public int groupedTokens() {
        return groupedTokens;
    }

    /** G. */
    public int groupSize() {
        return groupSize;
    }

    public int groupCount() {
        return groupSeg.length / shards;
    }

    /** Head groups each group is stored in (1: token-striped, each stored key a whole group). */
    @Override
    public int shards() {
        return shards;
    }

    /** Stored keys: {@code groupCount() × shards()}; key {@code k} holds head group {@code k mod shards()} of group {@code k / shards()}. */
    public int keyCount() {
        return groupSeg.length;
    }

    /** Bytes one group's data takes: {@code G × entryBytes}. */
    public int groupBytes() {
        return groupSize * entryBytes;
    }

    /** Data bytes of one stored key: the whole group, or one head group's shard of it. */
    public int storedBytes() {
        return groupSize * entryBytes / shards;
    }

    /** Bytes between consecutive stored keys of a segment (their data padded to the alignment). */
    public int stride() {
        return stride;
    }

    /** How this layout's stored keys are checksummed: whole groups, or head-group shards of them. */
    public EntryChecksum.Kind checksumKind() {
        return checksumKind(shards);
    }

    static EntryChecksum.Kind checksumKind(int shards) {
        return shards == 1 ? EntryChecksum.Kind.GROUP : EntryChecksum.Kind.GROUP_SHARD;
    }

    /** The position stored key {@code key}'s checksum is seeded with: the group's first token, or the key when sharded. */
    public int checksumPosition(int key) {
        return checksumPosition(key, groupSize, shards);
    }

    static int checksumPosition(int key, int groupSize, int shards) {
        return shards == 1 ? key * groupSize : key;
    }

    /** What the grouping strategy keeps with the layout (its predictor). */
    public GroupState state() {
        return state;
    }

    /** The device of stored key {@code key} (the group itself when not sharded). */
    public int groupDevice(int key) {
        return segDevice[groupSeg[key]];
    }

    public long groupOffset(int key) {
        return groupOffset[key];
    }

    public int groupCrc(int key) {
        return groupCrc[key];
    }

    // ---- BucketScheduler.Replicas over stored keys: one copy each ----

    @Override
    public int count(int group) {
        return 1;
    }

    @Override
    public int device(int group, int r) {
        return segDevice[groupSeg[group]];
    }

    @Override
    public long offset(int group, int r) {
        return groupOffset[group];
    }

    /**
     * Whether this layout only appended groups to {@code older} ({@link GroupLayoutWriter#append}):
     * same G, stride and state, and {@code older}'s segments and groups are a prefix of this one's.
     * The segments from {@code older.segmentCount()} on are then the appended ones.
     */
    public boolean extendsLayout(GroupLayout older) {
        if (older.groupSize != groupSize || older.stride != stride || older.entryBytes != entryBytes
                || older.shards != shards || older.state != state || older.groupedTokens > groupedTokens
                || older.segDevice.length > segDevice.length) {
            return false;
        }
        for (int s = 0; s < older.segDevice.length; s++) {
            if (older.segDevice[s] != segDevice[s] || older.segOffset[s] != segOffset[s]
                    || older.segLength[s] != segLength[s]) {
                return false;
            }
        }
        for (int g = 0; g < older.groupSeg.length; g++) {
            if (older.groupSeg[g] != groupSeg[g] || older.groupCrc[g] != groupCrc[g]) {
                return false;
            }
        }
        return true;
    }

    /** The same layout with device numbers rewritten through {@code map}. */
    GroupLayout remapDevices(int[] map) {
        int[] dev = remapped(segDevice, map);
        return new GroupLayout(groupedTokens, groupSize, entryBytes, stride, dev, segOffset, segLength, groupSeg,
                groupCrc, state, shards);
    }

    /** DRAM held by this layout's tables and state, in bytes. */
    public long memoryBytes() {
        return 4L * (segDevice.length + segLength.length + groupSeg.length + groupCrc.length)
                + 8L * (segOffset.length + groupOffset.length) + state.bytes();
    }
}
