package io.kvoffload.internal.sequence;

import io.kvoffload.DType;
import io.kvoffload.KvSequence;

import io.kvoffload.internal.util.ElementCodec;
import io.kvoffload.strategy.LayerKv;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A layer of a stored sequence seen as {@link LayerKv} (keys and values decoded to float), for the
 * offline phase: profiling from queries and building the medoid index read the layer through it.
 * Reads go in chunks through {@link KvSequence#read}, so every byte is checksum-verified; they are
 * serialised on the sequence, so several profiling threads may share one view.
 */
public final class SequenceLayerKv implements LayerKv, AutoCloseable {
    private static final int CHUNK = 4096;

    private final KvSequence seq;
    private final int layer;
    private final int tokens;
    private final int half;
    // The medoid index asks for one token once per KV head: keep the last single token decoded.
    private int cachedToken = -1;
    private float[] cachedK;
    private float[] cachedV;

    // The keys of the last range of tokens read (at most CHUNK), for the other heads' calls on the
    // same range: an index summarises a range head by head, which would otherwise read it once a head.
    private Arena rangeArena;
    private MemorySegment rangeKeys;
    private int rangeFrom = -1;
    private int rangeCount;
    // Profiling scores every query against every key, head by head: reading the layer from the SSDs
    // each time costs queries × heads passes, so keys that fit are read once and kept here.
    private Arena keyArena;
    private MemorySegment keys;
    // Or only some tokens' keys (the medoids), row r holding token rowToken[r]; -1: not loaded.
    private MemorySegment someKeys;
    private int[] rowOf;

    public SequenceLayerKv(KvSequence seq, int layer, int tokens) {
        this.seq = seq;
        this.layer = layer;
        this.tokens = tokens;
        this.half = seq.shape().halfEntryBytes();
    }

    @Override
    public int tokens() {
        return tokens;
    }

    @Override
    public int kvHeads() {
        return seq.shape().kvHeads();
    }

    @Override
    public int headDim() {
        return seq.shape().headDim();
    }

    @Override
    public void keys(int kvHead, int fromToken, int count, float[] dst, int dstOffset) {
        copy(kvHead, fromToken, count, dst, dstOffset, false);
    }

    @Override
    public void values(int kvHead, int fromToken, int count, float[] dst, int dstOffset) {
        copy(kvHead, fromToken, count, dst, dstOffset, true);
    }

    /**
     * Reads the layer's keys once into memory (outside the DRAM tier) when they take at most
     * {@code maxBytes}, so later key reads cost no I/O. Values stay on the SSDs.
     */
    public SequenceLayerKv keysInMemory(long maxBytes) {
        if ((long) tokens * half > maxBytes || keys != null) {
            return this;
        }
        keyArena = Arena.ofShared();
        keys = keyArena.allocate(Math.max(1, (long) tokens * half), 64);
        try (Arena a = Arena.ofConfined()) {
            int chunk = Math.min(CHUNK, Math.max(1, tokens));
            MemorySegment v = a.allocate((long) chunk * half, 64);
            for (int done = 0; done < tokens; done += chunk) {
                int n = Math.min(chunk, tokens - done);
                seq.read(layer, done, n, keys.asSlice((long) done * half, (long) n * half), v.asSlice(0, (long) n * half));
            }
        }
        return this;
    }

    /**
     * Reads the keys of {@code positions} with one gathered read (the scheduler batches and spreads
     * it over the SSDs) instead of one synchronous read per token, for building the medoid index.
     */
    public SequenceLayerKv keysOf(int[] positions) {
        int[] distinct = java.util.Arrays.stream(positions).distinct().toArray();
        keyArena = Arena.ofShared();
        someKeys = keyArena.allocate(Math.max(1, (long) distinct.length * half), 64);
        rowOf = new int[tokens];
        java.util.Arrays.fill(rowOf, -1);
        try (Arena a = Arena.ofConfined()) {
            seq.read(layer, distinct, someKeys, a.allocate(Math.max(1, (long) distinct.length * half), 64));
        }
        for (int i = 0; i < distinct.length; i++) {
            rowOf[distinct[i]] = i;
        }
        return this;
    }

    @Override
    public void close() {
        if (rangeArena != null) {
            rangeArena.close();
            rangeArena = null;
            rangeKeys = null;
            rangeFrom = -1;
        }
        if (keyArena != null) {
            keyArena.close();
            keyArena = null;
            keys = null;
            someKeys = null;
            rowOf = null;
        }
    }

    private void copy(int kvHead, int fromToken, int count, float[] dst, int dstOffset, boolean values) {
        LayerKv.checkRange(this, kvHead, fromToken, count, dst, dstOffset);
        if (!values && someKeys != null && count == 1 && rowOf[fromToken] >= 0) {
            DType dtype = seq.shape().dtype();
            ElementCodec.read(dtype, someKeys, (long) rowOf[fromToken] * half + (long) kvHead * headDim() * dtype.bytes(),
                    dst, dstOffset, headDim());
            return;
        }
        if (!values && keys != null) {
            DType dtype = seq.shape().dtype();
            int d = headDim();
            long headOffset = (long) kvHead * d * dtype.bytes();
            for (int t = 0; t < count; t++) {
                ElementCodec.read(dtype, keys, (long) (fromToken + t) * half + headOffset, dst, dstOffset + t * d, d);
            }
            return;
        }
        // Profiling scores queries on several threads, but a sequence handle is single-threaded.
        synchronized (seq) {
            copyLocked(kvHead, fromToken, count, dst, dstOffset, values);
        }
    }

    /** Reads the keys of tokens {@code [from, from + count)}, {@code count ≤ CHUNK}, into the range cache. */
    private void readRange(int from, int count) {
        if (rangeArena == null) {
            rangeArena = Arena.ofShared(); // closed by close(), on whichever thread
            rangeKeys = rangeArena.allocate((long) Math.min(CHUNK, Math.max(1, tokens)) * half, 64);
        }
        rangeFrom = -1; // a failed read leaves no stale range behind
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate((long) count * half, 8);
            seq.read(layer, from, count, rangeKeys.asSlice(0, (long) count * half), v);
        }
        rangeFrom = from;
        rangeCount = count;
    }

    private void copyLocked(int kvHead, int fromToken, int count, float[] dst, int dstOffset, boolean values) {
        DType dtype = seq.shape().dtype();
        int d = headDim();
        if (count == 1) {
            if (cachedToken != fromToken) {
                int elements = seq.shape().elementsPerToken();
                cachedK = cachedK == null ? new float[elements] : cachedK;
                cachedV = cachedV == null ? new float[elements] : cachedV;
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment k = arena.allocate(half, 8);
                    MemorySegment v = arena.allocate(half, 8);
                    seq.read(layer, fromToken, 1, k, v);
                    ElementCodec.read(dtype, k, 0, cachedK, 0, elements);
                    ElementCodec.read(dtype, v, 0, cachedV, 0, elements);
                }
                cachedToken = fromToken;
            }
            System.arraycopy(values ? cachedV : cachedK, kvHead * d, dst, dstOffset, d);
            return;
        }
        long headOffset = (long) kvHead * d * dtype.bytes();
        if (!values && count <= CHUNK) {
            if (fromToken < rangeFrom || fromToken + count > rangeFrom + rangeCount) {
                readRange(fromToken, Math.min(CHUNK, tokens - fromToken));
            }
            long at = (long) (fromToken - rangeFrom) * half + headOffset;
            for (int t = 0; t < count; t++) {
                ElementCodec.read(dtype, rangeKeys, at + (long) t * half, dst, dstOffset + t * d, d);
            }
            return;
        }
        try (Arena arena = Arena.ofConfined()) {
            int chunk = Math.min(CHUNK, Math.max(1, count));
            MemorySegment k = arena.allocate((long) chunk * half, 8);
            MemorySegment v = arena.allocate((long) chunk * half, 8);
            for (int done = 0; done < count; done += chunk) {
                int n = Math.min(chunk, count - done);
                seq.read(layer, fromToken + done, n, k.asSlice(0, (long) n * half), v.asSlice(0, (long) n * half));
                MemorySegment src = values ? v : k;
                for (int t = 0; t < n; t++) {
                    ElementCodec.read(dtype, src, (long) t * half + headOffset, dst, dstOffset + (done + t) * d, d);
                }
            }
        }
    }
}
