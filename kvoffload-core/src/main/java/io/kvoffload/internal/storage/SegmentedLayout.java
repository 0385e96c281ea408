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
}
