package io.kvoffload;

/**
 * Element type of the K and V tensors. F16 and BF16 values are handled as raw 16-bit patterns:
 * the library stores and returns bytes, it never converts precision.
 */
public enum DType {
    /** IEEE 754 binary32. */
    F32(4),
    /** IEEE 754 binary16. */
    F16(2),
    /** bfloat16 (the upper half of a binary32). */
    BF16(2);

    private final int bytes;

    DType(int bytes) {
        this.bytes = bytes;
    }

    /** Size of one element in bytes. */
    public int bytes() {
        return bytes;
    }
}
