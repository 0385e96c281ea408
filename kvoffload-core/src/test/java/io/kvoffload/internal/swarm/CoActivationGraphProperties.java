package io.kvoffload.internal.swarm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Set;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;

/** The prefix-filtered pair search finds exactly the pairs a full scan finds. */
class CoActivationGraphProperties {

    @Provide
    Arbitrary<ProfileInputs> inputs() {
        return ProfileInputs.arbitrary(250, 200);
    }

    @Property(tries = 200)
    void findsExactlyThePairsAtOrAboveTheThreshold(@ForAll("inputs") ProfileInputs in,
            @ForAll @IntRange(min = 1, max = 200) int threshold, @ForAll @IntRange(min = 1, max = 4) int threads) {
        CoActivationProfile p = in.profile(CoActivationNormaliser.perQuery());
        CoActivationGraph g = CoActivationGraph.build(p, threshold, threads);
        int n = p.entries();
        long pairs = 0;
        int frequent = 0;
        for (int i = 0; i < n; i++) {
            Set<Integer> expected = new HashSet<>();
            for (int j = 0; j < n; j++) {
                if (i != j && p.coActivations(i, j) >= threshold) {
                    expected.add(j);
                }
            }
            Set<Integer> actual = new HashSet<>();
            for (int k = g.neighbourStart(i); k < g.neighbourEnd(i); k++) {
                assertTrue(actual.add(g.neighbour(k)), "duplicate neighbour of " + i);
            }
            assertEquals(expected, actual, "neighbours of " + i);
            assertEquals(expected.size(), g.density(i));
            pairs += expected.size();
            frequent += p.activations(i) >= threshold ? 1 : 0;
        }
        assertEquals(pairs / 2, g.edges());
        assertEquals(threshold > p.queries() ? 0 : frequent, g.frequentEntries());
        assertTrue(g.candidatesChecked() >= g.edges());
    }
}
