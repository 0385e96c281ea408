package io.kvoffload.internal.swarm;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;

/**
 * Random activation sets with the structure that makes clustering non-trivial: recurring groups
 * (all members activated together), overlapping groups, hubs activated by most queries, noise, and
 * entries never activated.
 */
record ProfileInputs(int entries, List<int[]> sets, long seed) {

    static ProfileInputs generate(int entries, int queries, int groups, double hubShare, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        int[][] members = new int[groups][];
        for (int g = 0; g < groups; g++) {
            int size = 1 + r.nextInt(Math.max(1, Math.min(entries, 12)));
            members[g] = new int[size];
            int base = r.nextInt(entries);
            for (int i = 0; i < size; i++) {
                // mostly a run of positions, sometimes scattered: both kinds occur in real traces
                members[g][i] = r.nextInt(4) == 0 ? r.nextInt(entries) : (base + i) % entries;
            }
        }
        double[] popularity = new double[groups];
        for (int g = 0; g < groups; g++) {
            popularity[g] = r.nextDouble() * r.nextDouble();
        }
        int hubs = (int) (hubShare * entries);
        List<int[]> sets = new ArrayList<>();
        for (int q = 0; q < queries; q++) {
            List<Integer> set = new ArrayList<>();
            for (int g = 0; g < groups; g++) {
                if (r.nextDouble() < popularity[g]) {
                    for (int e : members[g]) {
                        if (r.nextInt(10) != 0) { // a member occasionally misses its group's activation
                            set.add(e);
                        }
                    }
                }
            }
            for (int h = 0; h < hubs; h++) {
                if (r.nextInt(10) != 0) {
                    set.add(h * 7 % entries);
                }
            }
            int noise = r.nextInt(1 + entries / 10);
            for (int i = 0; i < noise; i++) {
                set.add(r.nextInt(entries));
            }
            if (r.nextInt(5) == 0) {
                set.add(set.isEmpty() ? 0 : set.get(0)); // duplicates must count once
            }
            sets.add(set.stream().mapToInt(Integer::intValue).toArray());
        }
        return new ProfileInputs(entries, sets, seed);
    }

    static Arbitrary<ProfileInputs> arbitrary(int maxEntries, int maxQueries) {
        return Combinators.combine(
                        Arbitraries.integers().between(1, maxEntries),
                        Arbitraries.integers().between(1, maxQueries),
                        Arbitraries.integers().between(0, 40),
                        Arbitraries.of(0.0, 0.0, 0.02, 0.1),
                        Arbitraries.longs())
                .as(ProfileInputs::generate);
    }

    CoActivationProfile profile(CoActivationNormaliser normaliser) {
        return CoActivationProfile.fromActivationSets(entries, sets, normaliser);
    }

    @Override
    public String toString() {
        return "ProfileInputs[entries=" + entries + ", queries=" + sets.size() + ", seed=" + seed + "]";
    }
}
