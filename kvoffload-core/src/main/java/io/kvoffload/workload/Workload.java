package io.kvoffload.workload;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.internal.util.ElementCodec;
import io.kvoffload.strategy.LayerKv;
import java.lang.foreign.MemorySegment;

/**
 * Keys, values and decoding queries of one sequence, layer by layer: what a strategy is measured
 * on. A synthetic family ({@link WorkloadFamilies}) or a trace captured from a real model
 * ({@link TraceWorkload}); the comparison benchmarks take any of them, so a strategy measured on a
 * generator is measured the same way on a real model's tensors.
 */
public interface Workload {
    /** Layers, query and KV heads, head dimension and the dtype the byte emitters default to. */
    KvShape shape();

    /** Context length per layer (keys stored before the first decoding query). */
    int tokens();

    /** Layer {@code layer}'s keys and values, head-major (each read may generate them anew). */
    LayerKv layer(int layer);

    /** Decoding queries available per layer: steps {@code 0 .. queryCount() − 1}. */
    int queryCount();

    /** Writes the query of decoding step {@code step} of {@code layer} ({@code queryHeads × headDim} floats). */
    void query(int layer, int step, float[] dst, int offset);

    /** The query of decoding step {@code step} of {@code layer}. */
    default float[] query(int layer, int step) {
        float[] q = new float[shape().queryHeads() * shape().headDim()];
        query(layer, step, q, 0);
        return q;
    }

    /**
     * Writes the K and V of tokens {@code [fromToken, fromToken + count)} of one layer in the engine's
     * layout (token-major, {@code kvHeads × headDim} elements per token, head after head) as
     * {@code dtype} elements, little-endian, from byte 0 of each segment.
     *
     * @throws IllegalArgumentException if the range or a segment's size is wrong
     * @throws IllegalStateException if the layer holds keys only
     */
    default void writeKv(int layer, int fromToken, int count, DType dtype, MemorySegment keys, MemorySegment values) {
        KvShape shape = shape();
        long tokenBytes = WriteKvArgs.check(shape, tokens(), layer, fromToken, count, dtype, keys, values);
        int headDim = shape.headDim();
        LayerKv kv = layer(layer);
        if (!kv.hasValues()) {
            throw new IllegalStateException("layer " + layer + " holds keys only; writeKv needs values");
        }
        float[] row = new float[headDim];
        for (int h = 0; h < shape.kvHeads(); h++) {
            for (int i = 0; i < count; i++) {
                long at = i * tokenBytes + (long) h * headDim * dtype.bytes();
                kv.keys(h, fromToken + i, 1, row, 0);
                ElementCodec.write(dtype, keys, at, row, 0, headDim);
                kv.values(h, fromToken + i, 1, row, 0);
                ElementCodec.write(dtype, values, at, row, 0, headDim);
            }
        }
    }
}
