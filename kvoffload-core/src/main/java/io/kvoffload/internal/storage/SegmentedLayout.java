package io.kvoffload.internal.storage;

/**
 * The device extents ("segments") a strategy layout stores its units in: segment {@code s} is
 * {@link #segmentLength(int) segmentLength(s)} bytes at {@link #segmentOffset(int) segmentOffset(s)}
 * on device {@link #segmentDevice(int) segmentDevice(s)}. {@link ClusterLayout} (clusters) and
 * {@link GroupLayout} (groups) keep their segments here; what a segment holds is theirs.
 */
public abstract class SegmentedLayout {
    final int[] segDevice;
    final long[] segOffset;
    final int[] segLength;

    SegmentedLayout(int[] segDevice, long[] segOffset, int[] segLength) {
        this.segDevice = segDevice;
        this.segOffset = segOffset;
        this.segLength = segLength;
    }

    /** Segments of this layout. */
    public final int segmentCount() {
        return segDevice.length;
    }

    public final int segmentDevice(int s) {
        return segDevice[s];
    }

    public final long segmentOffset(int s) {
        return segOffset[s];
    }

    public final int segmentLength(int s) {
        return segLength[s];
    }

    /** {@code devices} rewritten through {@code map} (a copy): what each layout's {@code remapDevices} does to its device numbers. */
    static int[] remapped(int[] devices, int[] map) {
        int[] out = new int[devices.length];
        for (int i = 0; i < out.length; i++) {
            out[i] = map[devices[i]];
        }
        return out;
    }

    /** Head groups each stored item is cut into (1: token-striped, each item whole). */
    public abstract int shards();

    /**
     * Where each fixed-stride item (a group's key, a unit) starts on its device: items fill their
     * segments in order, item {@code i} taking the next {@code stride} bytes of segment
     * {@code itemSeg[i]}. {@code item} names an item in the messages.
     *
     * @throws IllegalArgumentException if an item names a segment that does not exist, or a segment
     *     is too short for its items
     */
    static long[] stridedOffsets(String item, int[] itemSeg, long[] segOffset, int[] segLength, int stride) {
        int segs = segLength.length;
        long[] offset = new long[itemSeg.length];
        int[] used = new int[segs];
        for (int i = 0; i < itemSeg.length; i++) {
            int s = itemSeg[i];
            if (s < 0 || s >= segs) {
                throw new IllegalArgumentException(item + " " + i + " names segment " + s + "; allowed: 0.." + (segs - 1));
            }
            if ((long) (used[s] + 1) * stride > segLength[s]) {
                throw new IllegalArgumentException("segment " + s + " of " + segLength[s] + " bytes cannot hold " + item
                        + " " + i + " (its " + (used[s] + 1) + "th " + item + " of " + stride + " bytes)");
            }
            offset[i] = segOffset[s] + (long) used[s] * stride;
            used[s]++;
        }
        return offset;
    }
}
