package io.kvoffload.internal.storage;

import java.util.Map;
import java.util.TreeMap;

/**
 * Hands out aligned byte ranges of one device's pool file. Free space is a map of disjoint,
 * coalesced ranges (offset → length); allocation is next-fit from a cursor so consecutive
 * allocations land next to each other on the device. Not thread-safe: the engine serialises it.
 */
public final class ExtentAllocator {
    private final long capacity;
    private final long alignment;
    private final TreeMap<Long, Long> free = new TreeMap<>();
    private long freeBytes;
    private long cursor;

    public ExtentAllocator(long capacity, long alignment) {
        if (alignment <= 0 || Long.bitCount(alignment) != 1) {
            throw new IllegalArgumentException("alignment = " + alignment + " must be a power of two");
        }
        this.capacity = capacity - capacity % alignment;
        this.alignment = alignment;
        if (this.capacity > 0) {
            free.put(0L, this.capacity);
        }
        freeBytes = this.capacity;
    }

    public long capacity() {
        return capacity;
    }

    public long freeBytes() {
        return freeBytes;
    }

    public long alignment() {
        return alignment;
    }

    /** Allocates {@code length} bytes (a multiple of the alignment); returns the offset, or -1 when full. */
    public long allocate(long length) {
        checkLength(length);
        Long off = findFrom(cursor, length);
        if (off == null) {
            off = findFrom(0, length);
        }
        if (off == null) {
            return -1;
        }
        take(off, length);
        cursor = off + length;
        return off;
    }

    private Long findFrom(long from, long length) {
        Map.Entry<Long, Long> before = free.floorEntry(from);
        if (before != null && before.getKey() + before.getValue() >= from + length) {
            return from;
        }
        for (Map.Entry<Long, Long> e : free.tailMap(from, false).entrySet()) {
            if (e.getValue() >= length) {
                return e.getKey();
            }
        }
        return null;
    }

    /**
     * Marks a range as used (rebuilding the map from manifests on open).
     *
     * @throws IllegalStateException if any byte of the range is not free (two manifests claim it)
     */
    public void markUsed(long offset, long length) {
        checkLength(length);
        if (offset < 0 || offset % alignment != 0 || offset + length > capacity) {
            throw new IllegalStateException("extent [" + offset + ", " + (offset + length)
                    + ") is not an aligned range inside the pool of " + capacity + " bytes");
        }
        Map.Entry<Long, Long> e = free.floorEntry(offset);
        if (e == null || e.getKey() + e.getValue() < offset + length) {
            throw new IllegalStateException("extent [" + offset + ", " + (offset + length) + ") is already in use");
        }
        take(offset, length);
    }

    /**
     * Takes every free byte below {@code limit} (space that an unreadable manifest may reference)
     * and returns the ranges taken as {@code {offset, length}} pairs, for {@link #free} later.
     */
    public java.util.List<long[]> reserveFreeBelow(long limit) {
        java.util.List<long[]> taken = new java.util.ArrayList<>();
        for (Map.Entry<Long, Long> e : new java.util.ArrayList<>(free.headMap(limit, false).entrySet())) {
            long len = Math.min(e.getValue(), limit - e.getKey());
            len -= len % alignment;
            if (len > 0) {
                take(e.getKey(), len);
                taken.add(new long[] {e.getKey(), len});
            }
        }
        return taken;
    }

    private void take(long offset, long length) {
        Map.Entry<Long, Long> e = free.floorEntry(offset);
        long start = e.getKey();
        long end = start + e.getValue();
        free.remove(start);
        if (start < offset) {
            free.put(start, offset - start);
        }
        if (offset + length < end) {
            free.put(offset + length, end - offset - length);
        }
        freeBytes -= length;
    }

    /** Returns a range to the free map, merging with its neighbours. */
    public void free(long offset, long length) {
        checkLength(length);
        Map.Entry<Long, Long> prev = free.floorEntry(offset);
        if (prev != null && prev.getKey() + prev.getValue() > offset) {
            throw new IllegalStateException("extent [" + offset + ", " + (offset + length) + ") freed twice");
        }
        Map.Entry<Long, Long> next = free.ceilingEntry(offset);
        if (next != null && next.getKey() < offset + length) {
            throw new IllegalStateException("extent [" + offset + ", " + (offset + length) + ") freed twice");
        }
        long start = offset;
        long len = length;
        if (prev != null && prev.getKey() + prev.getValue() == offset) {
            start = prev.getKey();
            len += prev.getValue();
            free.remove(prev.getKey());
        }
        if (next != null && next.getKey() == offset + length) {
            len += next.getValue();
            free.remove(next.getKey());
        }
        free.put(start, len);
        freeBytes += length;
    }

    private void checkLength(long length) {
        if (length <= 0 || length % alignment != 0) {
            throw new IllegalArgumentException(
                    "extent length = " + length + " must be a positive multiple of " + alignment);
        }
    }
}
