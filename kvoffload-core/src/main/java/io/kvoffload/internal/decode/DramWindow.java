package io.kvoffload.internal.decode;

import io.kvoffload.internal.dram.DramPool;
import io.kvoffload.internal.dram.DramSlot;
import io.kvoffload.internal.elastic.ElasticDramPool;
import io.kvoffload.internal.elastic.UnitSlots;
import java.lang.foreign.MemorySegment;

/**
 * The tokens of one layer that live in DRAM for as long as a decoder runs: the attention sinks
 * {@code [0, sinkEnd)} and the local window {@code [start, end)} (the newest tokens, Swarm §6.2;
 * KVSwap's rolling buffer plays the same part). Both are always attended, so they are never read
 * from the SSDs during a step.
 *
 * <p>The window is block-major in units of the engine's {@link ElasticDramPool} (SwiftCache §3.4):
 * block {@code b} (tokens {@code [b·T, (b+1)·T)}, T tokens a unit) holds its tokens' keys, then their
 * values, token-major ({@code kvHeads × headDim} elements per token). Appending takes a unit when a
 * block starts; sliding gives back every unit whose tokens all left, so the window holds what it
 * needs and no data ever moves. Its units are not bounded by the pool's cap on caches (the window
 * must hold its tokens), only by the DRAM budget. The sinks keep one slot of the {@link DramPool}.
 */
public final class DramWindow implements AutoCloseable {
    private final DramPool dram;
    private final int half;
    private final int sinkEnd;
    private DramSlot sinkSlot;
    private final UnitSlots units;
    /** Tokens per unit (T). */
    private final int tpu;
    /** Block {@code b}'s local unit and segment at {@code b & mask}; a power-of-two ring over the held blocks. */
    private int[] blockLocal;
    private MemorySegment[] blockSegment;
    private int mask;
    private int start;
    private int end;

    /**
     * @param half bytes of one token's K (and of its V)
     * @param sinkEnd sink tokens kept
     * @param start first window token
     * @param minCapacity tokens the window is expected to hold (sizes its block table)
     */
    public DramWindow(ElasticDramPool pool, DramPool dram, int half, int sinkEnd, int start, int minCapacity) {
        this.dram = dram;
        this.half = half;
        this.sinkEnd = sinkEnd;
        this.start = start;
        this.end = start;
        this.units = new UnitSlots(pool, 2L * half, false);
        this.tpu = units.perUnit();
        int blocks = Integer.highestOneBit(Math.max(4, Math.max(minCapacity, 16) / tpu + 2) - 1) << 1;
        this.blockLocal = new int[blocks];
        this.blockSegment = new MemorySegment[blocks];
        this.mask = blocks - 1;
        if (sinkEnd > 0) {
            sinkSlot = dram.acquire(2L * sinkEnd * half);
        }
    }

    /** A unit for block {@code b} (the window's newest); the block table doubles when full (no data moves). */
    private void addBlock(int b) {
        int first = start == end ? b : start / tpu;
        if (b - first + 1 > blockLocal.length) {
            int n = blockLocal.length * 2;
            int[] local = new int[n];
            MemorySegment[] seg = new MemorySegment[n];
            for (int x = first; x < b; x++) {
                local[x & (n - 1)] = blockLocal[x & mask];
                seg[x & (n - 1)] = blockSegment[x & mask];
            }
            blockLocal = local;
            blockSegment = seg;
            mask = n - 1;
        }
        int l = units.takeOne();
        blockLocal[b & mask] = l;
        blockSegment[b & mask] = units.unitSegment(l);
    }

    /** Gives back the units of blocks {@code [from, to]}. */
    private void dropBlocks(int from, int to) {
        for (int b = from; b <= to; b++) {
            units.dropOne(blockLocal[b & mask]);
            blockSegment[b & mask] = null;
        }
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
        int b = end / tpu;
        if (end == start || end % tpu == 0) {
            addBlock(b); // the first token of a block, or of an empty window: no unit holds it yet
        }
        MemorySegment unit = blockSegment[b & mask];
        int i = end % tpu;
        MemorySegment.copy(k, kOffset, unit, (long) i * half, half);
        MemorySegment.copy(v, vOffset, unit, (long) (tpu + i) * half, half);
        end++;
    }

    /** Drops window tokens below {@code newStart} (they now live in clusters on the SSDs). */
    public void slide(int newStart) {
        if (newStart < start || newStart > end) {
            throw new IllegalArgumentException("newStart = " + newStart + " is outside the window [" + start + ", "
                    + end + "]");
        }
        if (start < end && newStart > start) {
            int first = start / tpu;
            int last = newStart == end ? (end - 1) / tpu : newStart / tpu - 1;
            dropBlocks(first, last); // every block no token of [newStart, end) is in
        }
        start = newStart;
    }

    /** Segment holding token {@code t}'s K ({@link #keyOffset} says where). */
    public MemorySegment keySegment(int t) {
        return t < sinkEnd ? sinkSlot.segment() : blockSegment[(t / tpu) & mask];
    }

    public long keyOffset(int t) {
        return t < sinkEnd ? (long) t * half : (long) (t % tpu) * half;
    }

    public MemorySegment valueSegment(int t) {
        return t < sinkEnd ? sinkSlot.segment() : blockSegment[(t / tpu) & mask];
    }

    public long valueOffset(int t) {
        return t < sinkEnd ? (long) (sinkEnd + t) * half : (long) (tpu + t % tpu) * half;
    }

    /** DRAM held: the sinks' slot and the window's units. */
    public long memoryBytes() {
        return 2L * sinkEnd * half + units.heldBytes();
    }

    @Override
    public void close() {
        if (sinkSlot != null) {
            dram.release(sinkSlot);
            sinkSlot = null;
        }
        units.close();
    }
}
