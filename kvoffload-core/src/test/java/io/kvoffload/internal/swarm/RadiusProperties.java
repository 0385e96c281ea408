package io.kvoffload.internal.swarm;

import static io.kvoffload.internal.swarm.ProfileTest.assertMessage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.util.List;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;

/** τ turned into integer thresholds exactly, and τ derived from a quantile. */
class RadiusProperties {

    @Property(tries = 500)
    void minSumIsTheExactThresholdOfEq5(@ForAll @DoubleRange(min = 0, max = 1, maxIncluded = false) double tau,
            @ForAll @LongRange(min = 1, max = 1_000_000) long z, @ForAll @IntRange(min = 1, max = 5000) int size) {
        RadiusThreshold t = new RadiusThreshold(tau, z);
        long s = t.minSum(size);
        // mean distance 1 − S/(Z·size) ≤ τ  ⇔  Z·size − S ≤ τ·Z·size, in exact arithmetic
        BigDecimal bound = new BigDecimal(tau).multiply(BigDecimal.valueOf(z * size));
        assertTrue(BigDecimal.valueOf(z * size - s).compareTo(bound) <= 0, "S = " + s + " must qualify");
        assertTrue(BigDecimal.valueOf(z * size - (s - 1)).compareTo(bound) > 0, "S − 1 = " + (s - 1) + " must not");
        assertTrue(t.pairThreshold() >= 1);
    }

    @Property(tries = 500)
    void radiusForCountHasExactlyThatPairThreshold(@ForAll @LongRange(min = 1, max = 10_000_000) long z,
            @ForAll @LongRange(min = 1, max = 10_000_000) long count0) {
        long count = 1 + (count0 - 1) % z;
        double tau = RadiusThreshold.radiusForCount(count, z);
        assertTrue(tau >= 0 && tau < 1);
        assertEquals(count, new RadiusThreshold(tau, z).pairThreshold());
    }

    @Provide
    Arbitrary<ProfileInputs> inputs() {
        return ProfileInputs.arbitrary(200, 80);
    }

    @Property(tries = 100)
    void aQuantileRadiusIsDeterministicAndKeepsThePairsAtItsCount(@ForAll("inputs") ProfileInputs in,
            @ForAll @DoubleRange(min = 0.01, max = 1) double q) {
        CoActivationProfile p = in.profile(CoActivationNormaliser.perQuery());
        ClusterRadius r = ClusterRadius.quantile(q, 2000, 11);
        double tau = r.resolve(p);
        assertEquals(tau, r.resolve(p));
        assertTrue(tau >= 0 && tau < 1);
        long pairs = 0;
        for (long size : setSizes(p)) {
            pairs += size * (size - 1) / 2;
        }
        if (pairs == 0) {
            assertEquals(0.0, tau);
        } else {
            // τ is one of the distances that occur, with the pairs at that distance inside it.
            long t = new RadiusThreshold(tau, p.normaliser()).pairThreshold();
            assertEquals(tau, RadiusThreshold.radiusForCount(t, p.normaliser()));
        }
    }

    @Example
    void theQuantileFollowsTheSampledDistances() {
        // 10 queries: pair (0,1) together in all of them, pair (2,3) in one.
        List<int[]> sets = new java.util.ArrayList<>();
        for (int i = 0; i < 10; i++) {
            sets.add(i == 0 ? new int[] {0, 1, 2, 3} : new int[] {0, 1});
        }
        CoActivationProfile p = CoActivationProfile.fromActivationSets(4, sets, CoActivationNormaliser.perQuery());
        // 9 of 15 co-activated pairs (weighted) are (0,1) at distance 0.
        assertEquals(0.0, ClusterRadius.quantile(0.5, 10_000, 1).resolve(p));
        double loose = ClusterRadius.quantile(1.0, 10_000, 1).resolve(p);
        assertEquals(1, new RadiusThreshold(loose, 10).pairThreshold());
        assertEquals(0.35, ClusterRadius.fixed(0.35).resolve(p));
    }

    @Example
    void rejectsRadiiOutsideTheirRange() {
        assertMessage(() -> ClusterRadius.fixed(1.0), "tau = 1.0", "[0.0, 1.0)");
        assertMessage(() -> ClusterRadius.fixed(-0.1), "tau = -0.1");
        assertMessage(() -> ClusterRadius.quantile(0, 10, 1), "quantile = 0.0", "(0, 1]");
        assertMessage(() -> ClusterRadius.quantile(0.5, 0, 1), "samples = 0", "1..10000000");
        assertMessage(() -> RadiusThreshold.radiusForCount(5, 4), "count = 5", "1..4");
    }

    private static long[] setSizes(CoActivationProfile p) {
        long[] s = new long[p.queries()];
        for (int q = 0; q < s.length; q++) {
            s[q] = p.activationSetSize(q);
        }
        return s;
    }
}
