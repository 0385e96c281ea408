package io.kvoffload.internal.kvswap;

/** Checks for floating-point arguments, worded like {@code Checks}: name, value, allowed range. */
final class KvSwapArgs {
    private KvSwapArgs() {}

    static double inRange(String name, double value, double minInclusive, double maxInclusive) {
        if (!(value >= minInclusive && value <= maxInclusive)) { // also rejects NaN
            throw new IllegalArgumentException(
                    name + " = " + value + " is out of range; allowed: " + minInclusive + ".." + maxInclusive);
        }
        return value;
    }

    static double positiveFinite(String name, double value) {
        if (!(value > 0) || Double.isInfinite(value)) {
            throw new IllegalArgumentException(name + " = " + value + " is out of range; allowed: a finite value > 0");
        }
        return value;
    }

    /** Checks that {@code [offset, offset + length)} lies inside an array of {@code size}. */
    static void slice(String name, int offset, long length, int size) {
        if (offset < 0 || length < 0 || offset + length > size) {
            throw new IllegalArgumentException(name + ": offset " + offset + " + length " + length
                    + " is out of range; allowed: 0.." + size);
        }
    }
}
