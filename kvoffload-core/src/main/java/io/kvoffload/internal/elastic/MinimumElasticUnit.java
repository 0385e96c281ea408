package io.kvoffload.internal.elastic;

import io.kvoffload.internal.util.Checks;

/**
 * SwiftCache's minimum elastic unit [SwiftCache §3.4, Eq. 8–9]: the consumers of one elastic pool
 * store entries of different sizes (a hot-cache entry, a reuse-buffer group, a GPU block), so the
 * pool grows and shrinks in units of the least common multiple of those sizes. Every consumer then
 * fits a whole number of its entries in a unit ({@link #entriesPerUnit}, the paper's MEU), and a unit
 * handed from one consumer to another wastes no byte.
 *
 * <p>Immutable; the arithmetic of both the DRAM tier's {@link ElasticDramPool} and the GPU
 * module's block pool.
 */
public final class MinimumElasticUnit {
    /** Largest unit allowed: entry sizes whose LCM exceeds it are too unlike to share units. */
    public static final long MAX_UNIT_BYTES = 1L << 30;

    private final long unitBytes;

    private MinimumElasticUnit(long unitBytes) {
        this.unitBytes = unitBytes;
    }

    /**
     * The unit for entries of the given sizes: their least common multiple.
     *
     * @param entryBytes one or more entry sizes, each at least 1
     * @throws IllegalArgumentException when a size is below 1 or the LCM exceeds {@link #MAX_UNIT_BYTES}
     */
    public static MinimumElasticUnit of(long... entryBytes) {
        Checks.notNull("entryBytes", entryBytes);
        if (entryBytes.length == 0) {
            throw new IllegalArgumentException("entryBytes is empty; allowed: one or more entry sizes");
        }
        long unit = 1;
        for (int i = 0; i < entryBytes.length; i++) {
            long e = entryBytes[i];
            if (e < 1) {
                throw new IllegalArgumentException("entryBytes[" + i + "] = " + e + "; allowed: 1 or more");
            }
            unit = lcm(unit, e);
        }
        return new MinimumElasticUnit(unit);
    }

    /** This unit widened so that entries of {@code entryBytes} also fit exactly. */
    public MinimumElasticUnit with(long entryBytes) {
        return of(unitBytes, entryBytes);
    }

    /**
     * Least common multiple of two positive sizes.
     *
     * @throws IllegalArgumentException when it exceeds {@link #MAX_UNIT_BYTES}
     */
    public static long lcm(long a, long b) {
        Checks.positive("a", a);
        Checks.positive("b", b);
        long g = gcd(a, b);
        long q = a / g;
        if (q > MAX_UNIT_BYTES / b) {
            throw new IllegalArgumentException("lcm(" + a + ", " + b + ") exceeds " + MAX_UNIT_BYTES
                    + " bytes; allowed: entry sizes whose least common multiple is at most that (give such"
                    + " consumers pools of their own)");
        }
        long l = q * b;
        if (l > MAX_UNIT_BYTES) {
            throw new IllegalArgumentException("lcm(" + a + ", " + b + ") = " + l + " exceeds " + MAX_UNIT_BYTES
                    + " bytes; allowed: entry sizes whose least common multiple is at most that");
        }
        return l;
    }

    static long gcd(long a, long b) {
        while (b != 0) {
            long t = a % b;
            a = b;
            b = t;
        }
        return a;
    }

    /** Bytes of one unit. */
    public long unitBytes() {
        return unitBytes;
    }

    /**
     * Entries of {@code entryBytes} one unit holds (the paper's MEU for that consumer).
     *
     * @throws IllegalArgumentException when the size does not divide the unit
     */
    public int entriesPerUnit(long entryBytes) {
        Checks.positive("entryBytes", entryBytes);
        if (unitBytes % entryBytes != 0) {
            throw new IllegalArgumentException("entryBytes = " + entryBytes + " does not divide the unit of "
                    + unitBytes + " bytes; allowed: a size the unit was built from (MinimumElasticUnit.of/with)");
        }
        long n = unitBytes / entryBytes;
        return (int) Math.min(Integer.MAX_VALUE - 8, n);
    }

    /** Units needed to hold {@code entries} entries of {@code entryBytes} (rounded up). */
    public long unitsFor(long entries, long entryBytes) {
        Checks.inRange("entries", entries, 0, Long.MAX_VALUE);
        long per = entriesPerUnit(entryBytes);
        return (entries + per - 1) / per;
    }

    /** Whole units a budget of {@code bytes} holds (rounded down). */
    public long unitsWithin(long bytes) {
        Checks.inRange("bytes", bytes, 0, Long.MAX_VALUE);
        return bytes / unitBytes;
    }

    /** Bytes of {@code units} units. */
    public long bytes(long units) {
        Checks.inRange("units", units, 0, Long.MAX_VALUE / unitBytes);
        return units * unitBytes;
    }

    /**
     * Units per chunk for chunks of about {@code chunkBytes}: the largest whole number of units that
     * fits, at least one, at most 2^20.
     */
    public int unitsPerChunk(long chunkBytes) {
        Checks.positive("chunkBytes", chunkBytes);
        return (int) Math.max(1, Math.min(1 << 20, chunkBytes / unitBytes));
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof MinimumElasticUnit m && m.unitBytes == unitBytes;
    }

    @Override
    public int hashCode() {
        return Long.hashCode(unitBytes);
    }

    @Override
    public String toString() {
        return "MinimumElasticUnit{" + unitBytes + " bytes}";
    }
}
