package io.kvoffload.internal.util;

/**
 * Argument checks whose messages name the argument, the value and what is allowed, so a user sees
 * at once what they did wrong.
 */
public final class Checks {
    private Checks() {}

    public static int inRange(String name, int value, int minInclusive, int maxInclusive) {
        if (value < minInclusive || value > maxInclusive) {
            throw new IllegalArgumentException(
                    name + " = " + value + " is out of range; allowed: " + minInclusive + ".." + maxInclusive);
        }
        return value;
    }

    public static long inRange(String name, long value, long minInclusive, long maxInclusive) {
        if (value < minInclusive || value > maxInclusive) {
            throw new IllegalArgumentException(
                    name + " = " + value + " is out of range; allowed: " + minInclusive + ".." + maxInclusive);
        }
        return value;
    }

    public static double inRange(String name, double value, double minInclusive, double maxInclusive) {
        if (!(value >= minInclusive && value <= maxInclusive)) {
            throw new IllegalArgumentException(
                    name + " = " + value + " is out of range; allowed: " + minInclusive + ".." + maxInclusive);
        }
        return value;
    }

    /** {@code value} in {@code [minInclusive, maxExclusive)}; NaN is refused. */
    public static double inHalfOpen(String name, double value, double minInclusive, double maxExclusive) {
        if (!(value >= minInclusive && value < maxExclusive)) {
            throw new IllegalArgumentException(
                    name + " = " + value + " is out of range; allowed: [" + minInclusive + ", " + maxExclusive + ")");
        }
        return value;
    }

    /** A finite {@code value > 0}. */
    public static double positiveFinite(String name, double value) {
        if (!(value > 0) || Double.isInfinite(value)) {
            throw new IllegalArgumentException(name + " = " + value + " is out of range; allowed: a finite value > 0");
        }
        return value;
    }

    /**
     * Checks that {@code query} holds one row of {@code headDim} values per query head, the layout
     * every scorer takes; returns it.
     */
    public static float[] queryRows(float[] query, int queryHeads, int headDim) {
        if (query.length != queryHeads * headDim) {
            throw new IllegalArgumentException("query.length = " + query.length + " must be queryHeads × headDim = "
                    + queryHeads * headDim);
        }
        return query;
    }

    /**
     * Checks that every row of {@code rows} (the array {@code name}) holds exactly {@code expected}
     * values; {@code what} says what that count is in the refusal ("tokens × headDim").
     */
    public static void rowLengths(String name, float[][] rows, long expected, String what) {
        for (int i = 0; i < rows.length; i++) {
            if (rows[i] == null || rows[i].length != expected) {
                throw new IllegalArgumentException(name + "[" + i + "].length = "
                        + (rows[i] == null ? "null" : rows[i].length) + " must be " + what + " = " + expected);
            }
        }
    }

    /** Checks that the array {@code name}, {@code length} long, has room for at least {@code need} values. */
    public static void capacity(String name, int length, int need) {
        if (length < need) {
            throw new IllegalArgumentException(name + ".length = " + length + " is too small; allowed: at least " + need);
        }
    }

    /** Checks that {@code [offset, offset + length)} lies inside an array of {@code size}. */
    public static void slice(String name, int offset, long length, int size) {
        if (offset < 0 || length < 0 || offset + length > size) {
            throw new IllegalArgumentException(name + ": offset " + offset + " + length " + length
                    + " is out of range; allowed: 0.." + size);
        }
    }

    /** Checks grouped-query attention's head counts: {@code queryHeads} a positive multiple of {@code kvHeads}. */
    public static int queryHeads(int queryHeads, int kvHeads) {
        if (queryHeads <= 0 || queryHeads % kvHeads != 0) {
            throw new IllegalArgumentException("queryHeads = " + queryHeads + " must be a positive multiple of kvHeads = "
                    + kvHeads);
        }
        return queryHeads;
    }

    public static int index(String name, int value, int size) {
        if (value < 0 || value >= size) {
            throw new IllegalArgumentException(name + " = " + value + " is out of range; allowed: 0.."
                    + (size - 1) + (size == 0 ? " (none: the range is empty)" : ""));
        }
        return value;
    }

    public static int positive(String name, int value) {
        if (value <= 0) {
            throw new IllegalArgumentException(name + " = " + value + " must be positive");
        }
        return value;
    }

    public static long positive(String name, long value) {
        if (value <= 0) {
            throw new IllegalArgumentException(name + " = " + value + " must be positive");
        }
        return value;
    }

    public static long powerOfTwo(String name, long value) {
        if (value <= 0 || Long.bitCount(value) != 1) {
            throw new IllegalArgumentException(name + " = " + value + " must be a positive power of two");
        }
        return value;
    }

    public static <T> T notNull(String name, T value) {
        if (value == null) {
            throw new NullPointerException(name + " must not be null");
        }
        return value;
    }

    public static long alignUp(long value, long alignment) {
        return (value + alignment - 1) & -alignment;
    }

    public static boolean isAligned(long value, long alignment) {
        return (value & (alignment - 1)) == 0;
    }
}
