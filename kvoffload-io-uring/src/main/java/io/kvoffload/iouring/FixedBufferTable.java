package io.kvoffload.iouring;

import java.util.Arrays;

/**
 * Which address ranges one ring has registered as fixed buffers, and under which index: an
 * immutable snapshot, sorted by address, replaced whenever a slab is registered or dropped. The hot
 * path only searches it (no allocation); slabs do not overlap.
 */
final class FixedBufferTable {
    static final FixedBufferTable EMPTY = new FixedBufferTable(new long[0], new long[0], new int[0]);

    private final long[] starts;
    private final long[] ends;
    private final int[] indices;

    private FixedBufferTable(long[] starts, long[] ends, int[] indices) {
        this.starts = starts;
        this.ends = ends;
        this.indices = indices;
    }

    int size() {
        return starts.length;
    }

    /** The registered-buffer index whose range contains {@code [address, address + length)}, or -1. */
    int find(long address, long length) {
        int lo = 0;
        int hi = starts.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (starts[mid] <= address) {
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        // hi is the last range starting at or below address.
        if (hi >= 0 && address - starts[hi] <= ends[hi] - starts[hi] - length) {
            return indices[hi];
        }
        return -1;
    }

    /** A copy with {@code [address, address + length)} registered as {@code index} (replacing that index). */
    FixedBufferTable with(long address, long length, int index) {
        FixedBufferTable base = without(index);
        int n = base.starts.length;
        int pos = 0;
        while (pos < n && base.starts[pos] < address) {
            pos++;
        }
        long[] s = new long[n + 1];
        long[] e = new long[n + 1];
        int[] x = new int[n + 1];
        System.arraycopy(base.starts, 0, s, 0, pos);
        System.arraycopy(base.ends, 0, e, 0, pos);
        System.arraycopy(base.indices, 0, x, 0, pos);
        s[pos] = address;
        e[pos] = address + length;
        x[pos] = index;
        System.arraycopy(base.starts, pos, s, pos + 1, n - pos);
        System.arraycopy(base.ends, pos, e, pos + 1, n - pos);
        System.arraycopy(base.indices, pos, x, pos + 1, n - pos);
        return new FixedBufferTable(s, e, x);
    }

    /** A copy without index {@code index} (this table if it is absent). */
    FixedBufferTable without(int index) {
        for (int i = 0; i < indices.length; i++) {
            if (indices[i] == index) {
                long[] s = new long[starts.length - 1];
                long[] e = new long[starts.length - 1];
                int[] x = new int[starts.length - 1];
                System.arraycopy(starts, 0, s, 0, i);
                System.arraycopy(ends, 0, e, 0, i);
                System.arraycopy(indices, 0, x, 0, i);
                System.arraycopy(starts, i + 1, s, i, s.length - i);
                System.arraycopy(ends, i + 1, e, i, e.length - i);
                System.arraycopy(indices, i + 1, x, i, x.length - i);
                return new FixedBufferTable(s, e, x);
            }
        }
        return this;
    }

    @Override
    public String toString() {
        return "FixedBufferTable" + Arrays.toString(indices);
    }
}
