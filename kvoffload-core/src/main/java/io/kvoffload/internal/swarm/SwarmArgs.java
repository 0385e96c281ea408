package io.kvoffload.internal.swarm;

/** Checks for floating-point arguments, worded like {@code Checks}: name, value, allowed range. */
final class SwarmArgs {
    private SwarmArgs() {}

    static double inRange(String name, double value, double minInclusive, double maxInclusive) {
        if (!(value >= minInclusive && value <= maxInclusive)) {
            throw new IllegalArgumentException(
                    name + " = " + value + " is out of range; allowed: " + minInclusive + ".." + maxInclusive);
        }
        return value;
    }

    static double inHalfOpen(String name, double value, double minInclusive, double maxExclusive) {
        if (!(value >= minInclusive && value < maxExclusive)) {
            throw new IllegalArgumentException(
                    name + " = " + value + " is out of range; allowed: [" + minInclusive + ", " + maxExclusive + ")");
        }
        return value;
    }

    static <T> T notNull(String name, T value) {
        if (value == null) {
            throw new NullPointerException(name + " must not be null");
        }
        return value;
    }
}
