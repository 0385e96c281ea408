package io.kvoffload.internal.storage;

import io.kvoffload.KvShape;
import io.kvoffload.internal.util.Checks;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.zip.CRC32C;

/**
 * Writes one layer's {@link GroupLayout}: the groups are taken a <em>round</em> at a time (a few
 * thousand tokens: {@code R} groups for each device), the round's tokens are gathered once from the
 * current layout, each group is rearranged to {@code [K of G | V of G]} with its {@link EntryChecksum}, and each
 * device's share of the round is written as one extent (a segment of R groups). Group g goes to
 * device {@code g mod devices} (round-robin, so consecutive groups are read from different SSDs).
 * Under {@link io.kvoffload.Placement#HEAD_SHARDED} each group is written as {@code S} head-group
 * keys ({@link GroupLayout}), head group {@code s} of group {@code g} on
 * {@link HeadShards#device}{@code (}{@link HeadShards#rotation rotation(layer, g)}{@code , s)}.
 * Offline work: it may allocate.
 */
public final class GroupLayoutWriter {
    /** Tokens gathered per round (bounds the writer's DRAM). */
    private static final int ROUND_TOKENS = 4096;
    /** Largest segment, so the allocator finds room even in a fragmented pool. */
    private static final long MAX_SEGMENT_BYTES = 8L << 20;

    private GroupLayoutWriter() {}

    /**
     * Writes tokens {@code [0, groupedTokens)} in groups of {@code groupSize} and returns the
     * layout; on failure frees what it allocated.
     *
     * @param owner the sequence id (an allocation never evicts its owner)
     * @param checksum how the owner's records are checksummed ({@link Manifest#entryChecksum()})
     * @param layer the layer being laid out (part of every group's checksum)
     */
    public static GroupLayout write(Store store, String owner, EntryChecksum checksum, int layer, KvShape shape,
            int groupSize, int groupedTokens, GroupState state, ClusterLayoutWriter.Source source) {
        Checks.notNull("checksum", checksum);
        Checks.index("layer", layer, shape.layers());
        Checks.inRange("groupSize", groupSize, 1, 4096);
        if (groupedTokens < groupSize || groupedTokens % groupSize != 0) {
            throw new IllegalArgumentException("groupedTokens = " + groupedTokens + " is out of range; allowed: a"
                    + " positive multiple of groupSize = " + groupSize);
        }
        int entry = shape.entryBytes();
        int alignment = store.devices().stream().mapToInt(DevicePool::alignment).max().orElse(4096);
        // Sequences from manifests before identity checksums keep their format: token-striped.
        int shards = checksum.salted() ? HeadShards.shards(store.config().placement(), shape, store.devices().size()) : 1;
        long data = (long) groupSize * entry / shards;
        long strideLong = Checks.alignUp(data, alignment);
        if (strideLong > MAX_SEGMENT_BYTES) {
            throw new IllegalArgumentException("groupSize = " + groupSize + " makes groups of " + data + " bytes;"
                    + " allowed: at most " + MAX_SEGMENT_BYTES + " bytes per group");
        }
        int stride = (int) strideLong;
        int groups = groupedTokens / groupSize;
        Segments out = new Segments(0, groups, shards, maxSegments(store, groupSize, stride, shards, groups));
        writeRange(store, owner, checksum, layer, shape, groupSize, stride, shards, 0, groups, source, out);
        return out.layout(groupedTokens, groupSize, entry, stride, state, shards);
    }

    /**
     * Appends groups to {@code old}: tokens {@code [old.groupedTokens(), groupedTokens)} are written
     * group-major as {@link #write} does, group g still on device {@code g mod devices} (the
     * round-robin continues), in new segments; the old segments are shared unchanged. Returns a new
     * layout (the old one stays valid); on failure frees what it allocated.
     *
     * @param checksum how the owner's records are checksummed ({@link Manifest#entryChecksum()})
     * @param layer the layer the layout belongs to (part of every group's checksum)
     * @param groupedTokens the new end: a multiple of the layout's G, greater than
     *     {@code old.groupedTokens()}
     * @param source reads tokens {@code [old.groupedTokens(), groupedTokens)} (token-major)
     */
    public static GroupLayout append(Store store, String owner, EntryChecksum checksum, int layer, KvShape shape,
            GroupLayout old, int groupedTokens, ClusterLayoutWriter.Source source) {
        LayoutArgs.checkAppend(store, owner, checksum, layer, shape, old, old == null ? 0 : old.entryBytes);
        Checks.notNull("source", source);
        int g = old.groupSize;
        if (groupedTokens <= old.groupedTokens || groupedTokens % g != 0) {
            throw new IllegalArgumentException("groupedTokens = " + groupedTokens + " is out of range; allowed: a"
                    + " multiple of groupSize = " + g + " greater than the layout's " + old.groupedTokens);
        }
        int alignment = store.devices().stream().mapToInt(DevicePool::alignment).max().orElse(4096);
        if (old.stride % alignment != 0) {
            throw new IllegalArgumentException("the layout's group stride " + old.stride + " is not a multiple of the"
                    + " devices' alignment " + alignment + "; allowed: a layout written for these devices");
        }
        int first = old.groupCount();
        int groups = groupedTokens / g;
        Segments out = new Segments(first, groups, old.shards, maxSegments(store, g, old.stride, old.shards,
                groups - first));
        writeRange(store, owner, checksum, layer, shape, g, old.stride, old.shards, first, groups, source, out);
        return out.appendTo(old, groupedTokens);
    }

    /** Most segments {@link #writeRange} can create for {@code groups} groups: one per device and round. */
    private static int maxSegments(Store store, int groupSize, int stride, int shards, int groups) {
        int devices = store.devices().size();
        int roundGroups = perDevice(groupSize, stride, shards, devices) * devices;
        return ((groups + roundGroups - 1) / roundGroups + 1) * devices;
    }

    /**
     * R groups per device and round: bounded by the round's tokens and the segment size (a device
     * holds R whole groups' worth of keys a round: R groups, or R × S head groups when sharded).
     */
    private static int perDevice(int groupSize, int stride, int shards, int devices) {
        return (int) Math.max(1, Math.min(MAX_SEGMENT_BYTES / ((long) stride * shards),
                ROUND_TOKENS / ((long) groupSize * devices)));
    }

    /** New segments and the per-group tables of groups {@code [first, end)}, filled by {@link #writeRange}. */
    private static final class Segments {
        final int first;
        final int[] segDevice;
        final long[] segOffset;
        final int[] segLength;
        int segs;
        final int[] groupSeg; // relative to this batch's first segment
        final int[] groupCrc;

        Segments(int first, int end, int shards, int maxSegs) {
            this.first = first * shards; // the first stored key
            segDevice = new int[maxSegs];
            segOffset = new long[maxSegs];
            segLength = new int[maxSegs];
            groupSeg = new int[(end - first) * shards];
            groupCrc = new int[(end - first) * shards];
        }

        GroupLayout layout(int groupedTokens, int groupSize, int entry, int stride, GroupState state, int shards) {
            return new GroupLayout(groupedTokens, groupSize, entry, stride, Arrays.copyOf(segDevice, segs),
                    Arrays.copyOf(segOffset, segs), Arrays.copyOf(segLength, segs), groupSeg, groupCrc, state, shards);
        }

        GroupLayout appendTo(GroupLayout old, int groupedTokens) {
            int s0 = old.segDevice.length;
            int[] dev = Arrays.copyOf(old.segDevice, s0 + segs);
            long[] off = Arrays.copyOf(old.segOffset, s0 + segs);
            int[] len = Arrays.copyOf(old.segLength, s0 + segs);
            System.arraycopy(segDevice, 0, dev, s0, segs);
            System.arraycopy(segOffset, 0, off, s0, segs);
            System.arraycopy(segLength, 0, len, s0, segs);
            int[] seg = Arrays.copyOf(old.groupSeg, first + groupSeg.length);
            int[] crc = Arrays.copyOf(old.groupCrc, first + groupCrc.length);
            for (int i = 0; i < groupSeg.length; i++) {
                seg[first + i] = s0 + groupSeg[i];
            }
            System.arraycopy(groupCrc, 0, crc, first, groupCrc.length);
            return new GroupLayout(groupedTokens, old.groupSize, old.entryBytes, old.stride, dev, off, len, seg, crc,
                    old.state, old.shards);
        }
    }

    /**
     * Writes groups {@code [g0, g1)} a round at a time: each round's tokens are gathered once, and
     * each device's share of the round (its stored keys, ascending: groups {@code g ≡ d mod devices},
     * or the head groups {@link HeadShards#device} puts there) becomes one segment. Frees the
     * segments it allocated if it fails.
     */
    private static void writeRange(Store store, String owner, EntryChecksum checksum, int layer, KvShape shape,
            int groupSize, int stride, int shards, int g0, int g1, ClusterLayoutWriter.Source source, Segments out) {
        int devices = store.devices().size();
        int half = shape.halfEntryBytes();
        long data = (long) groupSize * shape.entryBytes() / shards;
        int roundGroups = perDevice(groupSize, stride, shards, devices) * devices;
        EntryChecksum.Kind kind = GroupLayout.checksumKind(shards);
        CRC32C crc = new CRC32C();
        try (ExtentBatchWriter w = new ExtentBatchWriter(store, owner, Math.max(devices, 1))) {
            for (int r0 = g0; r0 < g1; r0 += roundGroups) {
                int r1 = Math.min(g1, r0 + roundGroups);
                int t0 = r0 * groupSize;
                int n = (r1 - r0) * groupSize;
                int[] positions = new int[n];
                for (int i = 0; i < n; i++) {
                    positions[i] = t0 + i;
                }
                int k0 = r0 * shards;
                int k1 = r1 * shards;
                int[] keyDevice = new int[k1 - k0];
                int[] perDevice = new int[devices];
                for (int k = k0; k < k1; k++) {
                    int g = k / shards;
                    // Unsharded: group g on device g mod devices, wherever the range starts.
                    keyDevice[k - k0] = shards == 1 ? g % devices
                            : HeadShards.device(HeadShards.rotation(layer, g, devices), k % shards, shards, devices);
                    perDevice[keyDevice[k - k0]]++;
                }
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment keys = arena.allocate((long) n * half, 64);
                    MemorySegment values = arena.allocate((long) n * half, 64);
                    source.read(positions, keys, values);
                    for (int d = 0; d < devices; d++) {
                        if (perDevice[d] == 0) {
                            continue;
                        }
                        long len = (long) perDevice[d] * stride;
                        long packed = w.allocate(d, len);
                        int s = out.segs++;
                        out.segDevice[s] = Store.packedDevice(packed); // a full device hands the share to another one
                        out.segOffset[s] = Store.packedOffset(packed);
                        out.segLength[s] = (int) len;
                        MemorySegment dst = w.stage(len);
                        long at = 0;
                        for (int k = k0; k < k1; k++) {
                            if (keyDevice[k - k0] != d) {
                                continue;
                            }
                            long src = (long) (k / shards - r0) * groupSize * half;
                            // [K of G tokens | V of G tokens] (of the key's heads): one read serves the whole key.
                            HeadShards.extractGroup(keys, src, values, src, half, groupSize, k % shards, shards, dst, at);
                            if (stride > data) {
                                dst.asSlice(at + data, stride - data).fill((byte) 0);
                            }
                            out.groupCrc[k - out.first] = checksum.compute(crc, kind, layer,
                                    GroupLayout.checksumPosition(k, groupSize, shards), dst.asSlice(at, data).asByteBuffer());
                            out.groupSeg[k - out.first] = s;
                            at += stride;
                        }
                        w.write(out.segDevice[s], out.segOffset[s], dst.asSlice(0, len), s);
                    }
                }
                w.flush();
            }
            w.finish();
            w.keep();
        }
    }
}
