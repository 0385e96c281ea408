package io.kvoffload.workload;

import io.kvoffload.internal.util.ElementCodec;
import io.kvoffload.strategy.LayerKv;
import io.kvoffload.internal.util.Checks;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Writes a trace file ({@link TraceHeader} describes the format) layer by layer, streaming: a
 * layer's keys are read from its {@link LayerKv} in chunks, so a trace of a generated
 * million-token layer never needs the layer in memory.
 */
public final class TraceWriter implements AutoCloseable {
    private static final int BUFFER = 1 << 20;

    private final TraceHeader header;
    private final FileChannel channel;
    private final byte[] bytes = new byte[BUFFER];
    private final MemorySegment segment = MemorySegment.ofArray(bytes);
    private int layersWritten;
    private boolean closed;

    /** Creates (or truncates) {@code file} and writes the header. */
    public TraceWriter(Path file, TraceHeader header) throws IOException {
        Checks.notNull("file", file);
        Checks.notNull("header", header);
        this.header = header;
        this.channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE);
        ByteBuffer h = ByteBuffer.allocate(TraceHeader.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        h.put(TraceHeader.MAGIC.getBytes(StandardCharsets.US_ASCII));
        h.putInt(TraceHeader.VERSION).putInt(header.layers()).putInt(header.queryHeads()).putInt(header.kvHeads())
                .putInt(header.headDim()).putInt(header.tokens()).putInt(header.queriesPerLayer())
                .putInt(TraceHeader.dtypeCode(header.dtype())).putInt(header.values() ? 1 : 0);
        h.position(TraceHeader.BYTES).flip();
        writeFully(h);
    }

    /**
     * Appends the next layer.
     *
     * @param kv the layer's keys (and values when the header says so); its shape must match
     * @param queries {@code queriesPerLayer} queries of {@code queryHeads × headDim} floats
     */
    public void writeLayer(LayerKv kv, float[][] queries) throws IOException {
        Checks.notNull("kv", kv);
        Checks.notNull("queries", queries);
        if (closed) {
            throw new IllegalStateException("the writer is closed");
        }
        Checks.inRange("layer index", layersWritten, 0, header.layers() - 1);
        if (kv.tokens() != header.tokens() || kv.kvHeads() != header.kvHeads() || kv.headDim() != header.headDim()) {
            throw new IllegalArgumentException("layer has tokens = " + kv.tokens() + ", kvHeads = " + kv.kvHeads()
                    + ", headDim = " + kv.headDim() + "; the header says tokens = " + header.tokens() + ", kvHeads = "
                    + header.kvHeads() + ", headDim = " + header.headDim());
        }
        if (header.values() && !kv.hasValues()) {
            throw new IllegalArgumentException("the header says values are stored but the layer holds keys only");
        }
        if (queries.length != header.queriesPerLayer()) {
            throw new IllegalArgumentException("queries.length = " + queries.length + " must be queriesPerLayer = "
                    + header.queriesPerLayer());
        }
        int qLen = header.queryHeads() * header.headDim();
        Checks.rowLengths("queries", queries, qLen, "queryHeads × headDim");
        writeBlock(kv, false);
        if (header.values()) {
            writeBlock(kv, true);
        }
        for (float[] q : queries) {
            writeFloats(q, 0, q.length);
        }
        layersWritten++;
    }

    private void writeBlock(LayerKv kv, boolean values) throws IOException {
        int d = header.headDim();
        int chunk = Math.max(1, (BUFFER / header.dtype().bytes()) / d);
        float[] floats = new float[chunk * d];
        for (int h = 0; h < kv.kvHeads(); h++) {
            for (int t = 0; t < kv.tokens(); t += chunk) {
                int n = Math.min(chunk, kv.tokens() - t);
                if (values) {
                    kv.values(h, t, n, floats, 0);
                } else {
                    kv.keys(h, t, n, floats, 0);
                }
                writeFloats(floats, 0, n * d);
            }
        }
    }

    private void writeFloats(float[] src, int from, int count) throws IOException {
        int per = BUFFER / header.dtype().bytes();
        for (int done = 0; done < count; done += per) {
            int n = Math.min(per, count - done);
            if (header.dtype() == io.kvoffload.DType.F32) {
                MemorySegment.copy(src, from + done, segment, ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, n);
            } else {
                ElementCodec.write(header.dtype(), segment, 0, src, from + done, n);
            }
            writeFully(ByteBuffer.wrap(bytes, 0, n * header.dtype().bytes()));
        }
    }

    private void writeFully(ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            channel.write(b);
        }
    }

    /**
     * Closes the file.
     *
     * @throws IllegalStateException if fewer layers were written than the header declares (the file
     *     is then incomplete and a reader rejects it)
     */
    @Override
    public void close() throws IOException {
        if (closed) {
            return;
        }
        closed = true;
        channel.close();
        if (layersWritten != header.layers()) {
            throw new IllegalStateException("wrote " + layersWritten + " of " + header.layers() + " layers; the trace is incomplete");
        }
    }
}
