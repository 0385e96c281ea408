package io.kvoffload.internal.util;

/**
 * Floats to int8 steps of one scale: a block-mass index's summaries ({@code Int8Rows}), one row of
 * blocks per head and dimension. Through the Vector API where {@link Softmax#VECTORISED} and a row is
 * long enough ({@link #VECTOR_MIN}), else element by element; both round exactly, so they write the
 * same bytes and an index does not depend on whether the Vector API is there.
 */
public final class Int8Rounding {
    private Int8Rounding() {}

    /** How a value is rounded to its step: up or down (away from the inside of a bound), or to the nearest (ties to even). */
    public enum Mode { UP, DOWN, NEAREST }

    /**
     * Rows shorter than this stay scalar: Vector API code runs slowly and allocates until C2 has compiled
     * it, which a layer's long rows reach at once and a short layer's would not.
     */
    static final int VECTOR_MIN = 1024;

    /** The largest magnitude of {@code v[from, from + n)}, 0 for none. */
    public static float absMax(float[] v, int from, int n) {
        return Softmax.VECTORISED && n >= VECTOR_MIN ? VectorInt8.absMax(v, from, n) : absMax(v, from, n, 0f);
    }

    /** {@link #absMax(float[], int, int)} of {@code big} and the elements (also the vector path's tail). */
    static float absMax(float[] v, int from, int n, float big) {
        for (int b = 0; b < n; b++) {
            big = Math.max(big, Math.abs(v[from + b]));
        }
        return big;
    }

    /**
     * Writes {@code v[from + b] / scale}, rounded by {@code mode} and clamped to ±127, to {@code out[from +
     * b]} for every {@code b < n}, and returns how far the bytes written spread (largest minus smallest; 0
     * for none).
     *
     * @param scale a positive finite step
     */
    public static int round(float[] v, int from, int n, float scale, Mode mode, byte[] out) {
        int[] range = {127, -127}; // smallest and largest byte written
        int done = Softmax.VECTORISED && n >= VECTOR_MIN ? VectorInt8.round(v, from, n, scale, mode, out, range) : 0;
        for (int b = from + done; b < from + n; b++) {
            double x = v[b] / scale;
            byte s = (byte) Math.max(-127, Math.min(127, switch (mode) {
                case UP -> Math.ceil(x);
                case DOWN -> Math.floor(x);
                case NEAREST -> Math.rint(x);
            }));
            out[b] = s;
            range[0] = Math.min(range[0], s);
            range[1] = Math.max(range[1], s);
        }
        return Math.max(0, range[1] - range[0]);
    }
}
