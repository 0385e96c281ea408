package io.kvoffload.internal.sequence;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.internal.util.ElementCodec;
import java.lang.foreign.MemorySegment;

/**
 * K and V given as {@code float[]} for a sequence of any dtype: passed through for F32, converted
 * for F16 ({@link Float#floatToFloat16}) and BF16 ({@link ElementCodec#toBf16}: round to nearest
 * even, NaN kept quiet) in chunks of whole tokens,
 * each chunk appended as it is converted, so a long prefill needs no second full-size copy. The
 * conversion's cost is measured by the {@code FloatAppendBench} JMH benchmark (docs/benchmarks.md).
 */
public final class FloatKv {
    /** Elements converted per chunk (per K and per V): 128 KiB of bits each. */
    static final int CHUNK_ELEMENTS = 1 << 16;

    /** Where the segments go: the sequence's or the decoder's segment {@code appendKv}. */
    @FunctionalInterface
    public interface Sink {
        void append(MemorySegment keys, MemorySegment values);
    }

    private FloatKv() {}

    /**
     * Appends {@code keys}/{@code values} ({@code tokens × kvHeads × headDim} floats each) through
     * {@code sink} in {@code shape}'s dtype.
     *
     * @throws IllegalArgumentException if the lengths differ or are not whole tokens
     */
    public static void append(KvShape shape, float[] keys, float[] values, Sink sink) {
        Checks.notNull("keys", keys);
        Checks.notNull("values", values);
        int row = shape.kvHeads() * shape.headDim();
        if (keys.length != values.length || keys.length % row != 0) {
            throw new IllegalArgumentException("keys.length = " + keys.length + ", values.length = " + values.length
                    + "; allowed: equal lengths, a multiple of kvHeads × headDim = " + row + " (whole tokens)");
        }
        DType dtype = shape.dtype();
        if (dtype == DType.F32 || keys.length == 0) {
            sink.append(MemorySegment.ofArray(keys), MemorySegment.ofArray(values));
            return;
        }
        int chunk = Math.max(1, CHUNK_ELEMENTS / row) * row;
        short[] k = new short[Math.min(chunk, keys.length)];
        short[] v = new short[k.length];
        for (int from = 0; from < keys.length; from += chunk) {
            int n = Math.min(chunk, keys.length - from);
            convert(dtype, keys, from, k, n);
            convert(dtype, values, from, v, n);
            sink.append(MemorySegment.ofArray(k).asSlice(0, 2L * n), MemorySegment.ofArray(v).asSlice(0, 2L * n));
        }
    }

    /** {@code src[from..from+n)} as {@code dtype} bits into {@code dst[0..n)}. */
    static void convert(DType dtype, float[] src, int from, short[] dst, int n) {
        if (dtype == DType.F16) {
            for (int i = 0; i < n; i++) {
                dst[i] = Float.floatToFloat16(src[from + i]);
            }
        } else {
            for (int i = 0; i < n; i++) {
                dst[i] = ElementCodec.toBf16(src[from + i]);
            }
        }
    }
}
