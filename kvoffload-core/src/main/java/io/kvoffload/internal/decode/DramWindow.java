package io.kvoffload.internal.decode;

import io.kvoffload.internal.dram.DramPool;
import io.kvoffload.internal.dram.DramSlot;
import java.lang.foreign.MemorySegment;

/**
 * The tokens of one layer that live in DRAM for as long as a decoder runs: the attention sinks
 * {@code [0, sinkEnd)} and the local window {@code [start, end)} (the newest tokens, Swarm §6.2;
 * KVSwap's rolling buffer plays the same part). Both are always attended, so they are never read
 * from the SSDs during a step.
 *
 * <p>Keys and values are kept apart, each token-major ({@code kvHeads × headDim} elements per
 * token); the window is a ring whose capacity is a power of two, so token t sits in row
 * {@code t & (capacity - 1)} and sliding the window moves no data.
 */
public final class DramWindow implements AutoCloseable {
    private final DramPool dram;
    private final int half;
    private final int sinkEnd;
    private DramSlot sinkSlot;
    private DramSlot ringSlot;
    private MemorySegment ringK;
    private MemorySegment ringV;
    private int capacity;
    private int start;
    private int end;

    /**
     * @param half bytes of one token's K (and of its V)
     * @param sinkEnd sink tokens kept
     * @param start first window token
     */
    public DramWindow(DramPool dram, int half, int sinkEnd, int start, int minCapacity) {
        this.dram = dram;
        this.half = half;
        this.sinkEnd = sinkEnd;
        this.start = start;
        this.end = start;
        if (sinkEnd > 0) {
            sinkSlot = dram.acquire(2L * sinkEnd * half);
        }
        grow(Math.max(16, minCapacity));
    }

    private void grow(int need) {
        int cap = Integer.highestOneBit(Math.max(need, 1) - 1) << 1;
        if (cap < need) {
            cap = need;
        }
        DramSlot slot = dram.acquire(2L * cap * half);
        MemorySegment k = slot.segment().asSlice(0, (long) cap * half);
        MemorySegment v = slot.segment().asSlice((long) cap * half, (long) cap * half);
        for (int t = start; t < end; t++) {
            MemorySegment.copy(ringK, (long) (t & (capacity - 1)) * half, k, (long) (t & (cap - 1)) * half, half);
            MemorySegment.copy(ringV, (long) (t & (capacity - 1)) * half, v, (long) (t & (cap - 1)) * half, half);
        }
        if (ringSlot != null) {
            dram.release(ringSlot);
        }
        ringSlot = slot;
        ringK = k;
        ringV = v;
        capacity = cap;
    }

    /** Reads the sinks and tokens {@code [start, end)} of {@code layer} from the sequence into the window. */
    public void load(io.kvoffload.KvSequence sequence, int layer, int end) {
        try (java.lang.foreign.Arena a = java.lang.foreign.Arena.ofConfined()) {
            int count = end - start;
            MemorySegment k = a.allocate(Math.max(1, (long) Math.max(count, sinkEnd) * half), 64);
            MemorySegment v = a.allocate(k.byteSize(), 64);
            if (sinkEnd > 0) {
                sequence.read(layer, 0, sinkEnd, k, v);
                for (int t = 0; t < sinkEnd; t++) {
                    putSink(t, k, (long) t * half, v, (long) t * half);
                }
            }
            if (count > 0) {
                sequence.read(layer, start, count, k, v);
                for (int i = 0; i < count; i++) {
                    append(k, (long) i * half, v, (long) i * half);
                }
            }
        }
    }

    public int sinkEnd() {
        return sinkEnd;
    }

    public int start() {
        return start;
    }

    public int end() {
        return end;
    }

    /** Whether token {@code t} is in DRAM here. */
    public boolean contains(int t) {
        return t < sinkEnd || (t >= start && t < end);
    }

    /** Stores sink token {@code t}'s K and V. */
    public void putSink(int t, MemorySegment k, long kOffset, MemorySegment v, long vOffset) {
        MemorySegment s = sinkSlot.segment();
        MemorySegment.copy(k, kOffset, s, (long) t * half, half);
        MemorySegment.copy(v, vOffset, s, (long) (sinkEnd + t) * half, half);
    }

    /** Appends the next token ({@link #end()}) to the window. */
    public void append(MemorySegment k, long kOffset, MemorySegment v, long vOffset) {
        if (end - start == capacity) {
            grow(capacity * 2);
        }
        long row = (long) (end & (capacity - 1)) * half;
        MemorySegment.copy(k, kOffset, ringK, row, half);
        MemorySegment.copy(v, vOffset, ringV, row, half);
        end++;
    }

    /** Drops window tokens below {@code newStart} (they now live in clusters on the SSDs). */
    public void slide(int newStart) {
        if (newStart < start || newStart > end) {
            throw new IllegalArgumentException("newStart = " + newStart + " is outside the window [" + start + ", "
                    + end + "]");
        }
        start = newStart;
    }

    /** Segment holding token {@code t}'s K ({@link #keyOffset} says where). */
    public MemorySegment keySegment(int t) {
        return t < sinkEnd ? sinkSlot.segment() : ringK;
    }

    public long keyOffset(int t) {
        return t < sinkEnd ? (long) t * half : (long) (t & (capacity - 1)) * half;
    }

    public MemorySegment valueSegment(int t) {
        return t < sinkEnd ? sinkSlot.segment() : ringV;
    }

    public long valueOffset(int t) {
        return t < sinkEnd ? (long) (sinkEnd + t) * half : (long) (t & (capacity - 1)) * half;
    }

    /** DRAM held. */
    public long memoryBytes() {
        return 2L * (sinkEnd + capacity) * half;
    }

    @Override
    public void close() {
        if (sinkSlot != null) {
            dram.release(sinkSlot);
            sinkSlot = null;
        }
        if (ringSlot != null) {
            dram.release(ringSlot);
            ringSlot = null;
        }
    }
}
