package io.kvoffload.workload;

import io.kvoffload.internal.util.Checks;

/**
 * Rotary position embedding [RoFormer, Su et al. 2021] in Llama's "rotate half" layout: channel
 * {@code p} and {@code p + d/2} form pair {@code p}, turned by the angle {@code position × ω_p} with
 * {@code ω_p = θ^(−2p/d)}. Because both a key and a query are turned by their own position, their
 * dot product depends on the content and on the position difference only. Llama 3 uses
 * θ = 500,000 (Grattafiori et al. 2024, "The Llama 3 Herd of Models"). Public so that a benchmark or
 * an engine's test can turn a generated query to another position as a decoder's queries turn.
 */
public final class Rope {
    private final int headDim;
    private final int pairs;
    private final double[] omega;

    /**
     * @param headDim an even head dimension, 2..16384
     * @param theta the base, 2..10^12 (Llama 3: 500,000)
     * @throws IllegalArgumentException naming a bad argument
     */
    public Rope(int headDim, double theta) {
        Checks.inRange("headDim", headDim, 2, 16384);
        if (headDim % 2 != 0) {
            throw new IllegalArgumentException("headDim = " + headDim + " is odd; allowed: an even number (RoPE pairs)");
        }
        Checks.inRange("theta", theta, 2, 1e12);
        this.headDim = headDim;
        this.pairs = headDim / 2;
        this.omega = new double[pairs];
        for (int p = 0; p < pairs; p++) {
            omega[p] = Math.pow(theta, -2.0 * p / headDim);
        }
    }

    int pairs() {
        return pairs;
    }

    /** Angular frequency of pair {@code p}, radians per position. */
    double omega(int p) {
        return omega[p];
    }

    /** Positions for pair {@code p} to turn once: {@code 2π / ω_p}. */
    double wavelength(int p) {
        return 2 * Math.PI / omega[p];
    }

    /** Writes {@code src[srcOff .. + headDim)} turned to {@code position} into {@code dst[dstOff ..]} (may be the same array and offset). */
    public void rotate(float[] src, int srcOff, long position, float[] dst, int dstOff) {
        for (int p = 0; p < pairs; p++) {
            double a = position * omega[p];
            double c = Math.cos(a);
            double s = Math.sin(a);
            double x = src[srcOff + p];
            double y = src[srcOff + p + pairs];
            dst[dstOff + p] = (float) (x * c - y * s);
            dst[dstOff + p + pairs] = (float) (x * s + y * c);
        }
    }

    int headDim() {
        return headDim;
    }
}
