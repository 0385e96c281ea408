package io.kvoffload.internal.storage;

import io.kvoffload.KvShape;
import io.kvoffload.internal.dram.DramSlot;
import io.kvoffload.internal.kvswap.LowRankAdapter;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.spi.IoBatch;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.zip.CRC32C;

/**
 * Writes one layer's {@link GroupLayout}: the groups are taken a <em>round</em> at a time (a few
 * thousand tokens: {@code R} groups for each device), the round's tokens are gathered once from the
 * current layout, each group is rearranged to {@code [K of G | V of G]} with its CRC32C, and each
 * device's share of the round is written as one extent (a segment of R groups). Group g goes to
 * device {@code g mod devices} (round-robin, so consecutive groups are read from different SSDs).
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
     */
    public static GroupLayout write(Store store, String owner, KvShape shape, int groupSize, int groupedTokens,
            LowRankAdapter adapter, ClusterLayoutWriter.Source source) {
        Checks.inRange("groupSize", groupSize, 1, 4096);
        if (groupedTokens < groupSize || groupedTokens % groupSize != 0) {
            throw new IllegalArgumentException("groupedTokens = " + groupedTokens + " is out of range; allowed: a"
                    + " positive multiple of groupSize = " + groupSize);
        }
        int devices = store.devices().size();
        int half = shape.halfEntryBytes();
        int entry = shape.entryBytes();
        int alignment = store.devices().stream().mapToInt(DevicePool::alignment).max().orElse(4096);
        long data = (long) groupSize * entry;
        long strideLong = Checks.alignUp(data, alignment);
        if (strideLong > MAX_SEGMENT_BYTES) {
            throw new IllegalArgumentException("groupSize = " + groupSize + " makes groups of " + data + " bytes;"
                    + " allowed: at most " + MAX_SEGMENT_BYTES + " bytes per group");
        }
        int stride = (int) strideLong;
        int groups = groupedTokens / groupSize;
        // R groups per device and round: bounded by the round's tokens and the segment size.
        int perDevice = (int) Math.max(1, Math.min(MAX_SEGMENT_BYTES / stride,
                ROUND_TOKENS / ((long) groupSize * devices)));
        int roundGroups = perDevice * devices;
        int rounds = (groups + roundGroups - 1) / roundGroups;
        int maxSegs = rounds * devices;
        int[] segDevice = new int[maxSegs];
        long[] segOffset = new long[maxSegs];
        int[] segLength = new int[maxSegs];
        Arrays.fill(segOffset, -1);
        int segs = 0;
        int[] groupSeg = new int[groups];
        int[] groupCrc = new int[groups];
        CRC32C crc = new CRC32C();
        IoBatch batch = store.backend().newBatch(Math.max(devices, 1));
        DramSlot[] slots = new DramSlot[devices];
        boolean[] written = new boolean[devices];
        boolean ok = false;
        try {
            for (int round = 0; round < rounds; round++) {
                int g0 = round * roundGroups;
                int g1 = Math.min(groups, g0 + roundGroups);
                int t0 = g0 * groupSize;
                int n = (g1 - g0) * groupSize;
                int[] positions = new int[n];
                for (int i = 0; i < n; i++) {
                    positions[i] = t0 + i;
                }
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment keys = arena.allocate((long) n * half, 64);
                    MemorySegment values = arena.allocate((long) n * half, 64);
                    source.read(positions, keys, values);
                    for (int d = 0; d < devices; d++) {
                        int count = 0;
                        for (int g = g0 + d; g < g1; g += devices) {
                            count++;
                        }
                        if (count == 0) {
                            continue;
                        }
                        long len = (long) count * stride;
                        long packed = store.allocate(d, len, owner);
                        int s = segs++;
                        segDevice[s] = Store.packedDevice(packed); // a full device hands the share to another one
                        segOffset[s] = Store.packedOffset(packed);
                        segLength[s] = (int) len;
                        DramSlot slot = store.dram().acquire(len);
                        slots[batch.size()] = slot;
                        MemorySegment dst = slot.segment();
                        int k = 0;
                        for (int g = g0 + d; g < g1; g += devices, k++) {
                            long at = (long) k * stride;
                            int src = (g - g0) * groupSize;
                            // [K of G tokens | V of G tokens]: one read serves the whole group.
                            MemorySegment.copy(keys, (long) src * half, dst, at, (long) groupSize * half);
                            MemorySegment.copy(values, (long) src * half, dst, at + (long) groupSize * half,
                                    (long) groupSize * half);
                            if (stride > data) {
                                dst.asSlice(at + data, stride - data).fill((byte) 0);
                            }
                            crc.reset();
                            crc.update(dst.asSlice(at, data).asByteBuffer());
                            groupCrc[g] = (int) crc.getValue();
                            groupSeg[g] = s;
                        }
                        batch.addWrite(segDevice[s], segOffset[s], dst.asSlice(0, len), s);
                        written[segDevice[s]] = true;
                    }
                }
                flush(store, batch, slots);
            }
            for (int d = 0; d < devices; d++) {
                if (written[d]) {
                    store.backend().sync(d);
                }
            }
            GroupLayout layout = new GroupLayout(groupedTokens, groupSize, entry, stride,
                    Arrays.copyOf(segDevice, segs), Arrays.copyOf(segOffset, segs), Arrays.copyOf(segLength, segs),
                    groupSeg, groupCrc, adapter);
            ok = true;
            return layout;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            for (int i = 0; i < slots.length; i++) {
                if (slots[i] != null) {
                    store.dram().release(slots[i]);
                    slots[i] = null;
                }
            }
            if (!ok) {
                for (int s = 0; s < segs; s++) {
                    if (segOffset[s] >= 0) {
                        store.free(segDevice[s], segOffset[s], segLength[s]);
                    }
                }
            }
        }
    }

    private static void flush(Store store, IoBatch batch, DramSlot[] slots) {
        store.executeAndRelease(batch, slots);
    }
}
