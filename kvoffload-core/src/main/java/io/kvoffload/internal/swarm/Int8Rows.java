package io.kvoffload.internal.swarm;

import io.kvoffload.internal.util.Int8Rounding;

/**
 * One summary statistic of a {@link BlockMassIndex} (per KV head, per dimension, per block), kept as
 * int8 with one float scale per head and dimension: {@code value ≈ scale(h, j) × row(h)[j × blocks + b]}.
 * Values are collected as floats first ({@link #set}), then {@link #quantise}d once; the scale is the
 * dimension's largest magnitude over all blocks / 127, so an outlier channel gets its own range and
 * does not flatten the others. {@link Int8Rounding.Mode#UP} and {@link Int8Rounding.Mode#DOWN} round away
 * from the inside of a bound, so a quantised upper bound still bounds.
 */
final class Int8Rows {
    private final int heads;
    private final int dims;
    private final int blocks;
    private final Int8Rounding.Mode rounding;
    private float[][] staged;     // allocated by stage(), dropped by quantise() or copyOf()
    private boolean quantised;
    private final byte[][] rows;
    private final float[] scales;
    private final float[] spreads;

    Int8Rows(int heads, int dims, int blocks, Int8Rounding.Mode rounding) {
        this.heads = heads;
        this.dims = dims;
        this.blocks = blocks;
        this.rounding = rounding;
        this.rows = new byte[heads][dims * blocks];
        this.scales = new float[heads * dims];
        this.spreads = new float[heads * dims];
    }

    /**
     * Makes room for the floats {@link #set} stages (a summary copied from another's, {@link #copyOf},
     * never needs it); idempotent until quantised.
     */
    void stage() {
        if (staged == null && !quantised) {
            staged = new float[heads][dims * blocks];
        }
    }

    /** Stages element {@code at} ({@code j × blocks + b}) of head {@code h}, after {@link #stage}, before {@link #quantise}. */
    void set(int h, int at, float value) {
        staged[h][at] = value;
    }

    /**
     * Converts the staged floats to int8 and drops them.
     *
     * @throws IllegalStateException if nothing was staged ({@link #stage}) or the rows were quantised
     */
    void quantise() {
        if (staged == null) {
            throw new IllegalStateException((quantised ? "rows quantised twice" : "rows quantised before stage()")
                    + "; allowed: stage(), set(…), then quantise() once");
        }
        for (int h = 0; h < heads; h++) {
            float[] v = staged[h];
            for (int j = 0; j < dims; j++) {
                int from = j * blocks;
                float big = Int8Rounding.absMax(v, from, blocks);
                float scale = big > 0 ? big / 127f : 1f;
                scales[h * dims + j] = scale;
                spreads[h * dims + j] = Int8Rounding.round(v, from, blocks, scale, rounding, rows[h]);
            }
        }
        staged = null;
        quantised = true;
    }

    /**
     * Whether {@code a} and {@code b} are both absent, or both rows of the same heads, dimensions, blocks
     * and rounding: what staging the same values into each would quantise to the same bytes.
     */
    static boolean sameShape(Int8Rows a, Int8Rows b) {
        return a == null ? b == null : b != null && a.heads == b.heads && a.dims == b.dims && a.blocks == b.blocks
                && a.rounding == b.rounding;
    }

    /**
     * Takes {@code source}'s bytes, scales and spreads in place of staging and quantising the same
     * values ({@link #sameShape}); drops what was staged.
     *
     * @throws IllegalStateException if these rows were quantised or {@code source}'s were not
     */
    void copyOf(Int8Rows source) {
        if (quantised || !source.quantised || !sameShape(this, source)) {
            throw new IllegalStateException("copy of " + (source.quantised ? "quantised" : "unquantised") + " rows into "
                    + (quantised ? "quantised" : "unquantised") + " rows, same shape " + sameShape(this, source));
        }
        for (int h = 0; h < heads; h++) {
            System.arraycopy(source.rows[h], 0, rows[h], 0, rows[h].length);
        }
        System.arraycopy(source.scales, 0, scales, 0, scales.length);
        System.arraycopy(source.spreads, 0, spreads, 0, spreads.length);
        staged = null;
        quantised = true;
    }

    /** Head {@code h}'s int8 elements, dimension-major. */
    byte[] row(int h) {
        return rows[h];
    }

    /**
     * How far the int8 elements of head {@code h}, dimension {@code j} spread over the blocks (largest
     * minus smallest, in int8 steps): a sweep term {@code c × row} moves a block's estimate relative to
     * the others by at most {@code |c| × spread}.
     */
    float spread(int h, int j) {
        return spreads[h * dims + j];
    }

    /** The scale of head {@code h}, dimension {@code j}. */
    float scale(int h, int j) {
        return scales[h * dims + j];
    }
}
