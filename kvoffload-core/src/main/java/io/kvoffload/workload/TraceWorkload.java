package io.kvoffload.workload;

import io.kvoffload.KvShape;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.strategy.LayerKv;
import java.io.IOException;
import java.nio.file.Path;

/**
 * A trace file ({@link TraceHeader}) as a {@link Workload}: the stored keys, values and queries of a
 * real model. Query {@code i} of a layer is decoding step {@code i}; there are
 * {@code queriesPerLayer} of them. Close it to unmap the file.
 */
public final class TraceWorkload implements Workload, AutoCloseable {
    private final TraceReader reader;
    private final KvShape shape;

    private TraceWorkload(TraceReader reader) {
        this.reader = reader;
        TraceHeader h = reader.header();
        this.shape = new KvShape(h.layers(), h.queryHeads(), h.kvHeads(), h.headDim(), h.dtype());
    }

    /**
     * Opens a trace.
     *
     * @throws IllegalArgumentException if the file is not a valid trace
     */
    public static TraceWorkload open(Path path) throws IOException {
        return new TraceWorkload(TraceReader.open(path));
    }

    public TraceHeader header() {
        return reader.header();
    }

    @Override public KvShape shape() { return shape; }
    @Override public int tokens() { return reader.header().tokens(); }
    @Override public int queryCount() { return reader.header().queriesPerLayer(); }

    @Override
    public LayerKv layer(int layer) {
        return reader.layer(layer);
    }

    @Override
    public void query(int layer, int step, float[] dst, int offset) {
        Checks.notNull("dst", dst);
        int n = shape.queryHeads() * shape.headDim();
        Checks.slice("dst", offset, n, dst.length);
        System.arraycopy(reader.query(layer, step), 0, dst, offset, n);
    }

    @Override
    public void close() {
        reader.close();
    }
}
