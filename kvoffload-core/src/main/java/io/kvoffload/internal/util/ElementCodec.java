package io.kvoffload.internal.util;

import io.kvoffload.DType;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Converts between {@code float} and the on-disk element types, little-endian. The library itself
 * never converts precision (it moves bytes); this is for producing test data and reading traces.
 * BF16 and F16 round to nearest, ties to even.
 */
public final class ElementCodec {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private ElementCodec() {}

    /** bfloat16 bits of {@code f}, rounded to nearest even; NaN stays a (quiet) NaN. */
    public static short toBf16(float f) {
        int bits = Float.floatToRawIntBits(f);
        if (Float.isNaN(f)) {
            return (short) ((bits >>> 16) | 0x0040);
        }
        int rounding = 0x7FFF + ((bits >>> 16) & 1);
        return (short) ((bits + rounding) >>> 16);
    }

    /** The float a bfloat16 bit pattern stands for (exact). */
    public static float fromBf16(short bits) {
        return Float.intBitsToFloat((bits & 0xFFFF) << 16);
    }

    /** Writes {@code value} as one element of {@code dtype} at byte {@code offset}. */
    public static void write(DType dtype, MemorySegment dst, long offset, float value) {
        switch (dtype) {
            case F32 -> dst.set(F32, offset, value);
            case F16 -> dst.set(U16, offset, Float.floatToFloat16(value));
            case BF16 -> dst.set(U16, offset, toBf16(value));
        }
    }

    /** Reads one element of {@code dtype} at byte {@code offset}. */
    public static float read(DType dtype, MemorySegment src, long offset) {
        return switch (dtype) {
            case F32 -> src.get(F32, offset);
            case F16 -> Float.float16ToFloat(src.get(U16, offset));
            case BF16 -> fromBf16(src.get(U16, offset));
        };
    }

    /** Writes {@code count} floats from {@code src[srcOffset..]} as consecutive elements. */
    public static void write(DType dtype, MemorySegment dst, long offset, float[] src, int srcOffset, int count) {
        int b = dtype.bytes();
        for (int i = 0; i < count; i++) {
            write(dtype, dst, offset + (long) i * b, src[srcOffset + i]);
        }
    }

    /** Reads {@code count} consecutive elements into {@code dst[dstOffset..]}. */
    public static void read(DType dtype, MemorySegment src, long offset, float[] dst, int dstOffset, int count) {
        if (dtype == DType.F32) {
            MemorySegment.copy(src, F32, offset, dst, dstOffset, count);
            return;
        }
        int b = dtype.bytes();
        for (int i = 0; i < count; i++) {
            dst[dstOffset + i] = read(dtype, src, offset + (long) i * b);
        }
    }
}
