package io.kvoffload.internal.storage;

import io.kvoffload.internal.util.Checks;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.zip.CRC32C;

/**
 * Writes one layer's {@link UnitLayout}: each device's units (the device the source prefers for
 * each unit) in ascending unit order, back to back at the aligned stride, in segments of at most
 * 8 MiB, each unit filled by the source, zero-padded and checksummed ({@link EntryChecksum.Kind#UNIT}).
 * All or nothing: if anything fails, every extent it allocated is freed ({@link ExtentBatchWriter}).
 * Offline work: it may allocate.
 */
public final class UnitLayoutWriter {
    /** Largest segment, so the allocator finds room even in a fragmented pool. */
    private static final long MAX_SEGMENT_BYTES = 8L << 20;

    private UnitLayoutWriter() {}

    /** What the units hold and where each should go. */
    public interface Source {
        /** The device unit {@code unit} should go to (taken modulo the device count). */
        int device(int unit);

        /** Writes unit {@code unit}'s {@code dst.byteSize()} data bytes into {@code dst}. */
        void fill(int unit, MemorySegment dst);
    }

    /**
     * Writes {@code units} units of {@code unitBytes} bytes and returns the layout.
     *
     * @param owner the sequence id (an allocation never evicts its owner)
     * @param checksum how the owner's records are checksummed ({@link Manifest#entryChecksum()})
     * @param layer the layer (part of every unit's checksum)
     * @param strategy the strategy the layout belongs to, with its format {@code version} and {@code params}
     */
    public static UnitLayout write(Store store, String owner, EntryChecksum checksum, int layer, String strategy,
            int version, byte[] params, int unitBytes, int units, Source source) {
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
        for (int u = 0; u < units; u++) {
            wanted[u] = Math.floorMod(source.device(u), devices);
            perDevice[wanted[u]]++;
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
                    unitSeg, unitCrc);
            w.keep();
            return layout;
        }
    }
}
