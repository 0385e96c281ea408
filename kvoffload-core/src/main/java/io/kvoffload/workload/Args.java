package io.kvoffload.workload;

/**
 * Argument checks for floating-point knobs, worded like {@code io.kvoffload.internal.util.Checks}:
 * the message names the argument, the value and the allowed range.
 */
final class Args {
    private Args() {}

    static double inRange(String name, double value, double minInclusive, double maxInclusive) {
        if (!(value >= minInclusive && value <= maxInclusive)) { // also rejects NaN
            throw new IllegalArgumentException(
                    name + " = " + value + " is out of range; allowed: " + minInclusive + ".." + maxInclusive);
        }
        return value;
    }

    static void notNull(String name, Object value) {
        if (value == null) {
            throw new NullPointerException(name + " must not be null");
        }
    }

    /** Checks that {@code [offset, offset + length)} lies inside an array of {@code size}. */
    static void slice(String name, int offset, long length, int size) {
        if (offset < 0 || length < 0 || offset + length > size) {
            throw new IllegalArgumentException(name + ": offset " + offset + " + length " + length
                    + " is out of range; allowed: 0.." + size);
        }
    }
}
