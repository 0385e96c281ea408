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
 * groups), opaque to the store. Immutable; as a
 * {@link BucketScheduler.Replicas} its unit is a group (one copy, {@link #stride()} bytes).
 */
public final class GroupLayout extends SegmentedLayout implements BucketScheduler.Replicas {
    final int groupedTokens;
    final int groupSize;
    final int entryBytes;
    final int stride;
    /** Segment of each group; a segment's groups sit in ascending group order at consecutive strides. */
    final int[] groupSeg;
    final int[] groupCrc;
    final GroupState state;
    // Derived.
    private final long[] groupOffset;

    GroupLayout(int groupedTokens, int groupSize, int entryBytes, int stride, int[] segDevice, long[] segOffset,
            int[] segLength, int[] groupSeg, int[] groupCrc, GroupState state) {
        super(segDevice, segOffset, segLength);
        if (groupSize < 1 || groupSize > 4096 || groupedTokens < groupSize || groupedTokens % groupSize != 0) {
            throw new IllegalArgumentException("group layout of " + groupedTokens + " tokens in groups of " + groupSize
                    + ": allowed groupSize 1..4096 and a positive whole number of groups");
        }
        long data = (long) groupSize * entryBytes;
        if (entryBytes < 2 || stride < data || stride > Integer.MAX_VALUE / 2) {
            throw new IllegalArgumentException("group stride " + stride + " cannot hold " + groupSize + " entries of "
                    + entryBytes + " bytes");
        }
        int groups = groupedTokens / groupSize;
        int segs = segDevice.length;
        if (segOffset.length != segs || segLength.length != segs || groupSeg.length != groups
                || groupCrc.length != groups) {
            throw new IllegalArgumentException("group layout arrays are inconsistent: " + segs + " segments, "
                    + groups + " groups, " + groupSeg.length + " group segments, " + groupCrc.length + " checksums");
        }
        if (state == null) {
            throw new IllegalArgumentException("group layout needs its strategy's state");
        }
        state.checkEntryBytes(entryBytes);
        this.groupedTokens = groupedTokens;
        this.groupSize = groupSize;
        this.entryBytes = entryBytes;
        this.stride = stride;
        this.groupSeg = groupSeg;
        this.groupCrc = groupCrc;
        this.state = state;
        this.groupOffset = new long[groups];
        int[] used = new int[segs];
        for (int g = 0; g < groups; g++) {
            int s = groupSeg[g];
            if (s < 0 || s >= segs) {
                throw new IllegalArgumentException("group " + g + " names segment " + s + "; allowed: 0.." + (segs - 1));
            }
            long end = (long) (used[s] + 1) * stride;
            if (end > segLength[s]) {
                throw new IllegalArgumentException("segment " + s + " of " + segLength[s] + " bytes cannot hold group "
                        + g + " (its " + (used[s] + 1) + "th group of " + stride + " bytes)");
            }
            groupOffset[g] = segOffset[s] + (long) used[s] * stride;
            used[s]++;
        }
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
        return groupSeg.length;
    }

    /** Bytes one group's data takes: {@code G × entryBytes}. */
    public int groupBytes() {
        return groupSize * entryBytes;
    }

    /** Bytes between consecutive groups of a segment (the data padded to the alignment). */
    public int stride() {
        return stride;
    }

    /** What the grouping strategy keeps with the layout (its predictor). */
    public GroupState state() {
        return state;
    }

    public int groupDevice(int group) {
        return segDevice[groupSeg[group]];
    }

    public long groupOffset(int group) {
        return groupOffset[group];
    }

    public int groupCrc(int group) {
        return groupCrc[group];
    }

    // ---- BucketScheduler.Replicas over groups: one copy each ----

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
                || older.state != state || older.groupedTokens > groupedTokens
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
        int[] dev = new int[segDevice.length];
        for (int s = 0; s < dev.length; s++) {
            dev[s] = map[segDevice[s]];
        }
        return new GroupLayout(groupedTokens, groupSize, entryBytes, stride, dev, segOffset, segLength, groupSeg,
                groupCrc, state);
    }

    /** DRAM held by this layout's tables and state, in bytes. */
    public long memoryBytes() {
        return 4L * (segDevice.length + segLength.length + groupSeg.length + groupCrc.length)
                + 8L * (segOffset.length + groupOffset.length) + state.bytes();
    }
}
