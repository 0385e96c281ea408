package io.kvoffload.internal.sequence;

import io.kvoffload.DType;
import io.kvoffload.internal.util.Checks;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/** Java arrays as the K/V segments of a sequence of one dtype: float[] for F32, short[] (raw bits) for F16/BF16. */
public final class DTypeArrays {
    private final DType dtype;

    public DTypeArrays(DType dtype) {
        this.dtype = dtype;
    }

    /**
     * {@code array} (argument {@code arg}) as a segment.
     *
     * @throws IllegalArgumentException if the sequence's dtype is not F32, or {@code array} is null
     */
    public MemorySegment f32(String arg, float[] array) {
        require(arg, "float[]", DType.F32);
        return MemorySegment.ofArray(Checks.notNull(arg, array));
    }

    /**
     * {@code array} (argument {@code arg}) as a segment.
     *
     * @throws IllegalArgumentException if the sequence's dtype is not F16 or BF16, or {@code array} is null
     */
    public MemorySegment f16(String arg, short[] array) {
        require(arg, "short[]", DType.F16, DType.BF16);
        return MemorySegment.ofArray(Checks.notNull(arg, array));
    }

    /** The second array of a pair whose first one passed {@link #f32}. */
    public static MemorySegment of(String arg, float[] array) {
        return MemorySegment.ofArray(Checks.notNull(arg, array));
    }

    /** The second array of a pair whose first one passed {@link #f16}. */
    public static MemorySegment of(String arg, short[] array) {
        return MemorySegment.ofArray(Checks.notNull(arg, array));
    }

    private void require(String arg, String javaType, DType... allowed) {
        for (DType d : allowed) {
            if (dtype == d) {
                return;
            }
        }
        throw new IllegalArgumentException(arg + " is " + javaType + " but the sequence's dtype is " + dtype
                + "; allowed for " + javaType + ": " + Arrays.toString(allowed) + " (or pass a MemorySegment)");
    }
}
