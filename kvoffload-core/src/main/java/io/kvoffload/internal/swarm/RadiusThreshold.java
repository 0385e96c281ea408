package io.kvoffload.internal.swarm;

import io.kvoffload.internal.util.Checks;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.Arrays;

/**
 * The cluster radius {@code τ} turned into exact integer thresholds on co-activation counts.
 *
 * <p>With {@code d(i,j) = 1 − f(i,j)/Z}, "the mean distance from c to the {@code s} members of C is at
 * most τ" (Eq. 5; for {@code s = 1} it is Eq. 4's and the candidate test {@code d(m,e) ≤ τ}) is
 * exactly {@code Σ_{k∈C} f(c,k) ≥ (1 − τ)·Z·s}. Comparing integer sums with a threshold computed once
 * in exact decimal arithmetic gives the same answer as exact rational arithmetic, whatever the order
 * of summation; a floating-point mean could round a borderline member in or out.
 */
final class RadiusThreshold {
    private final double tau;
    private final long z;
    private final BigDecimal oneMinusTauTimesZ;
    private long[] minSum = new long[0];

    RadiusThreshold(double tau, long z) {
        Checks.inHalfOpen("tau", tau, 0.0, 1.0);
        if (z < 1) {
            throw new IllegalArgumentException("Z = " + z + " is out of range; allowed: 1.." + Long.MAX_VALUE);
        }
        this.tau = tau;
        this.z = z;
        this.oneMinusTauTimesZ = BigDecimal.ONE.subtract(new BigDecimal(tau)).multiply(BigDecimal.valueOf(z));
    }

    double tau() { return tau; }

    long z() { return z; }

    /** Smallest {@code f(i,j)} with {@code d(i,j) ≤ τ}; at least 1 because τ < 1. */
    long pairThreshold() {
        return minSum(1);
    }

    /** Smallest {@code Σ_{k∈C} f(c,k)} with which c joins a cluster of {@code size} members. */
    long minSum(int size) {
        if (size >= minSum.length) {
            int from = minSum.length;
            minSum = Arrays.copyOf(minSum, Math.max(size + 1, 2 * minSum.length));
            for (int s = from; s < minSum.length; s++) {
                minSum[s] = exact(s);
            }
        }
        return minSum[size];
    }

    private long exact(int size) {
        return oneMinusTauTimesZ.multiply(BigDecimal.valueOf(size)).setScale(0, RoundingMode.CEILING).longValueExact();
    }

    /**
     * A radius whose pair threshold is exactly {@code count}: every pair co-activated at least
     * {@code count} times is within it and no pair co-activated fewer times is. Plain
     * {@code 1 − count/Z} can round an ulp too low (losing the pairs at exactly {@code count}) or too
     * high; the result is nudged by single ulps until the exact threshold matches.
     */
    static double radiusForCount(long count, long z) {
        if (count < 1 || count > z) {
            throw new IllegalArgumentException("count = " + count + " is out of range; allowed: 1.." + z);
        }
        double tau = Math.max(0.0, 1.0 - count / (double) z);
        long t = new RadiusThreshold(tau, z).pairThreshold();
        while (t != count) {
            tau = t > count ? Math.nextUp(tau) : Math.nextDown(tau);
            t = new RadiusThreshold(tau, z).pairThreshold();
        }
        return tau;
    }
}
