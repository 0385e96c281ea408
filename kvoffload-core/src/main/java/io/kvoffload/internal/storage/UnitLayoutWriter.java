package io.kvoffload.internal.storage;

import io.kvoffload.KvShape;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.strategy.UnitLayouts.Source;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.zip.CRC32C;

/**
 * Writes one layer's {@link UnitLayout}: each device's units (the device the source prefers for
 * each unit) in ascending unit order, back to back at the aligned stride, in segments of at most
 * 8 MiB, each unit filled by the source, zero-padded and checksummed ({@link EntryChecksum.Kind#UNIT}).
 * Under {@link io.kvoffload.Placement#HEAD_SHARDED} a unit the source says holds one KV head goes
 * instead where {@link HeadShards} puts that head's group in the unit's row:
 * {@link HeadShards#device}{@code (}{@link HeadShards#rotation rotation(layer, row)}{@code , group)}.
 * All or nothing: if anything fails, every extent it allocated is freed ({@link ExtentBatchWriter}).
 * Offline work: it may allocate.
 */
public final class UnitLayoutWriter {
    /** Largest segment, so the allocator finds room even in a fragmented pool. */
    private static final long MAX_SEGMENT_BYTES = 8L << 20;

    private UnitLayoutWriter() {}

    /**
     * Writes {@code units} units of {@code unitBytes} bytes and returns the layout.
     *
     * @param owner the sequence id (an allocation never evicts its owner)
     * @param checksum how the owner's records are checksummed ({@link Manifest#entryChecksum()})
     * @param layer the layer (part of every unit's checksum)
     * @param shape the sequence's shape (its KV heads are what a head-sharded layout groups)
     * @param strategy the strategy the layout belongs to, with its format {@code version} and {@code params}
     */
    public static UnitLayout write(Store store, String owner, EntryChecksum checksum, int layer, KvShape shape,
            String strategy, int version, byte[] params, int unitBytes, int units, Source source) {
        Checks.notNull("store", store);
        Checks.notNull("checksum", checksum);
        Checks.notNull("params", params);
        Checks.notNull("source", source);
        Checks.positive("units", units);
        int alignment = store.devices().stream().mapToInt(DevicePool::alignment).max().orElse(4096);
        long strideLong = Checks.alignUp(Checks.positive("unitBytes", unitBytes), alignment);
        if (strideLong > MAX_SEGMENT_BYTES) {
            throw new IllegalArgumentException("unitBytes = " + unitBytes + "; allowed: 1.." + MAX_SEGMENT_BYTES);
        }
        int stride = (int) strideLong;
        int devices = store.devices().size();
        int perSegment = (int) (MAX_SEGMENT_BYTES / stride);
        int[] wanted = new int[units];
        int[] perDevice = new int[devices];
        // Sequences from manifests before identity checksums keep their format: token-striped.
        int shards = checksum.salted() ? HeadShards.shards(store.config().placement(), shape, devices) : 1;
        int[] unitShard = shards > 1 ? new int[units] : null;
        boolean headUnits = false;
        for (int u = 0; u < units; u++) {
            int head = shards > 1 ? source.kvHead(u) : -1;
            if (head < 0) {
                wanted[u] = Math.floorMod(source.device(u), devices);
                if (unitShard != null) {
                    unitShard[u] = UnitLayout.NO_SHARD;
                }
            } else {
                Checks.inRange("kvHead(" + u + ")", head, -1, shape.kvHeads() - 1);
                int row = Checks.inRange("row(" + u + ")", source.row(u), 0, Integer.MAX_VALUE);
                unitShard[u] = HeadShards.shardOfHead(head, shape.kvHeads(), shards);
                wanted[u] = HeadShards.device(HeadShards.rotation(layer, row, devices), unitShard[u], shards, devices);
                headUnits = true;
            }
            perDevice[wanted[u]]++;
        }
        if (!headUnits) { // no unit holds a single head: nothing to shard, the layout is the source's
            shards = 1;
            unitShard = null;
        }
        int maxSegs = 0;
        for (int n : perDevice) {
            maxSegs += (n + perSegment - 1) / perSegment;
        }
        int[] segDevice = new int[maxSegs];
        long[] segOffset = new long[maxSegs];
        int[] segLength = new int[maxSegs];
        int[] unitSeg = new int[units];
        int[] unitCrc = new int[units];
        int segs = 0;
        CRC32C crc = new CRC32C();
        int[] members = new int[perSegment];
        try (ExtentBatchWriter w = new ExtentBatchWriter(store, owner, Math.max(devices, 1))) {
            for (int d = 0; d < devices; d++) {
                int u = 0;
                while (true) {
                    int n = 0;
                    for (; u < units && n < perSegment; u++) {
                        if (wanted[u] == d) {
                            members[n++] = u;
                        }
                    }
                    if (n == 0) {
                        break;
                    }
                    long len = (long) n * stride;
                    long packed = w.allocate(d, len);
                    int s = segs++;
                    segDevice[s] = Store.packedDevice(packed); // a full device hands the segment to another one
                    segOffset[s] = Store.packedOffset(packed);
                    segLength[s] = (int) len;
                    MemorySegment dst = w.stage(len).asSlice(0, len);
                    dst.fill((byte) 0);
                    for (int k = 0; k < n; k++) {
                        MemorySegment unit = dst.asSlice((long) k * stride, unitBytes);
                        source.fill(members[k], unit);
                        unitCrc[members[k]] = checksum.compute(crc, EntryChecksum.Kind.UNIT, layer, members[k],
                                unit.asByteBuffer());
                        unitSeg[members[k]] = s;
                    }
                    w.write(segDevice[s], segOffset[s], dst, s);
                }
            }
            w.finish();
            UnitLayout layout = new UnitLayout(strategy, version, params, unitBytes, stride,
                    Arrays.copyOf(segDevice, segs), Arrays.copyOf(segOffset, segs), Arrays.copyOf(segLength, segs),
                    unitSeg, unitCrc, shards, unitShard);
            w.keep();
            return layout;
        }
    }
}
