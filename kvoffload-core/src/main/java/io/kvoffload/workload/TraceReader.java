package io.kvoffload.workload;

import io.kvoffload.internal.util.ElementCodec;
import io.kvoffload.strategy.LayerKv;
import io.kvoffload.DType;
import io.kvoffload.internal.util.Checks;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Reads a trace file ({@link TraceHeader} describes the format) through a read-only memory map,
 * so a layer's keys are paged in as they are read and a trace larger than the heap still works.
 * Every header field is checked and the file size must match the header exactly, so a truncated
 * or foreign file is rejected before any element is read. Close the reader to unmap the file;
 * layers obtained from it must not be used afterwards.
 */
public final class TraceReader implements AutoCloseable {
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final Arena arena;
    private final MemorySegment file;
    private final TraceHeader header;

    private TraceReader(Arena arena, MemorySegment file, TraceHeader header) {
        this.arena = arena;
        this.file = file;
        this.header = header;
    }

    /**
     * Opens and validates a trace.
     *
     * @throws IllegalArgumentException if the file is not a valid trace (the message says which field)
     */
    public static TraceReader open(Path path) throws IOException {
        Checks.notNull("path", path);
        Arena arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            long size = ch.size();
            if (size < TraceHeader.BYTES) {
                throw new IllegalArgumentException("trace " + path + " has " + size + " bytes; a header alone is " + TraceHeader.BYTES);
            }
            MemorySegment seg = ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            byte[] magic = seg.asSlice(0, 8).toArray(ValueLayout.JAVA_BYTE);
            if (!TraceHeader.MAGIC.equals(new String(magic, StandardCharsets.US_ASCII))) {
                throw new IllegalArgumentException("trace " + path + " does not start with the magic \"" + TraceHeader.MAGIC + "\"");
            }
            int version = seg.get(I32, 8);
            if (version != TraceHeader.VERSION) {
                throw new IllegalArgumentException("trace version = " + version + " is not supported; allowed: " + TraceHeader.VERSION);
            }
            int flags = seg.get(I32, 40);
            Checks.inRange("flags", flags, 0, 1);
            TraceHeader h = new TraceHeader(seg.get(I32, 12), seg.get(I32, 16), seg.get(I32, 20), seg.get(I32, 24),
                    seg.get(I32, 28), seg.get(I32, 32), TraceHeader.dtypeOf(seg.get(I32, 36)), flags == 1);
            if (h.fileBytes() != size) {
                throw new IllegalArgumentException("trace " + path + " has " + size + " bytes; its header implies " + h.fileBytes());
            }
            return new TraceReader(arena, seg, h);
        } catch (IOException | RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    public TraceHeader header() {
        return header;
    }

    /** A view of layer {@code l}'s keys (and values), read from the map. */
    public LayerKv layer(int layer) {
        long base = header.layerOffset(layer);
        return new MappedLayer(base);
    }

    /** Query {@code index} of layer {@code l}: {@code queryHeads × headDim} floats. */
    public float[] query(int layer, int index) {
        Checks.index("query index", index, header.queriesPerLayer());
        long at = header.layerOffset(layer) + header.kvBlockBytes() * (header.values() ? 2 : 1) + header.queryBytes() * index;
        float[] q = new float[header.queryHeads() * header.headDim()];
        ElementCodec.read(header.dtype(), file, at, q, 0, q.length);
        return q;
    }

    /** All queries of layer {@code l}. */
    public float[][] queries(int layer) {
        float[][] out = new float[header.queriesPerLayer()][];
        for (int i = 0; i < out.length; i++) {
            out[i] = query(layer, i);
        }
        return out;
    }

    @Override
    public void close() {
        arena.close();
    }

    private final class MappedLayer implements LayerKv {
        private final long base;

        MappedLayer(long base) {
            this.base = base;
        }

        @Override public int tokens() { return header.tokens(); }
        @Override public int kvHeads() { return header.kvHeads(); }
        @Override public int headDim() { return header.headDim(); }
        @Override public boolean hasValues() { return header.values(); }

        @Override
        public void keys(int kvHead, int fromToken, int count, float[] dst, int dstOffset) {
            LayerKv.checkRange(this, kvHead, fromToken, count, dst, dstOffset);
            read(base, kvHead, fromToken, count, dst, dstOffset);
        }

        @Override
        public void values(int kvHead, int fromToken, int count, float[] dst, int dstOffset) {
            LayerKv.checkRange(this, kvHead, fromToken, count, dst, dstOffset);
            if (!header.values()) {
                throw new IllegalStateException("this trace holds keys only");
            }
            read(base + header.kvBlockBytes(), kvHead, fromToken, count, dst, dstOffset);
        }

        private void read(long block, int kvHead, int fromToken, int count, float[] dst, int dstOffset) {
            DType dt = header.dtype();
            long row = (long) header.headDim() * dt.bytes();
            long at = block + ((long) kvHead * header.tokens() + fromToken) * row;
            ElementCodec.read(dt, file, at, dst, dstOffset, count * header.headDim());
        }
    }
}
