package io.kvoffload.internal.storage;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/**
 * {@link ReplicaSpread}: every cluster keeps its tokens and its per-device counts (Eq. 7's balance),
 * and copies of a token share a device no more often than under Eq. 7's member order — on the
 * probe's case (64 doubly stored tokens, 21 of them with both copies on one device) never.
 */
class ReplicaSpreadProperties {
    /** A plan from explicit per-cluster, per-device token lists (cluster c's medoid is its first token). */
    record Fixed(int tokens, int[][][] on) implements ClusterPlan {
        public int clusteredTokens() {
            return tokens;
        }

        public int clusterCount() {
            return on.length;
        }

        public double tau() {
            return 0.35;
        }

        public int coActivationClusters() {
            return on.length;
        }

        public int medoid(int cluster) {
            for (int[] d : on[cluster]) {
                if (d.length > 0) {
                    return d[0];
                }
            }
            throw new IllegalStateException("empty cluster");
        }

        public int[] tokensOn(int cluster, int device) {
            return on[cluster][device];
        }
    }

    /** Round-robin (Eq. 7 style) placement of random clusters in which some tokens appear twice or more. */
    static Fixed randomPlan(long seed, int devices, int tokens, int extraCopies) {
        Random rnd = new Random(seed);
        List<List<Integer>> clusters = new ArrayList<>();
        for (int t = 0; t < tokens; t += 1 + rnd.nextInt(12)) {
            List<Integer> c = new ArrayList<>();
            for (int u = t; u < Math.min(tokens, t + 1 + rnd.nextInt(12)); u++) {
                c.add(u);
            }
            clusters.add(c);
        }
        // every token in at least one cluster
        boolean[] seen = new boolean[tokens];
        clusters.forEach(c -> c.forEach(u -> seen[u] = true));
        for (int t = 0; t < tokens; t++) {
            if (!seen[t]) {
                clusters.add(new ArrayList<>(List.of(t)));
            }
        }
        for (int i = 0; i < extraCopies; i++) {
            List<Integer> c = clusters.get(rnd.nextInt(clusters.size()));
            int t = rnd.nextInt(tokens);
            if (!c.contains(t)) {
                c.add(t);
            }
        }
        int[][][] on = new int[clusters.size()][devices][];
        long p = 0;
        for (int c = 0; c < clusters.size(); c++) {
            List<Integer> members = clusters.get(c);
            List<List<Integer>> per = new ArrayList<>();
            for (int d = 0; d < devices; d++) {
                per.add(new ArrayList<>());
            }
            for (int i = 0; i < members.size(); i++) {
                per.get((int) ((p + i) % devices)).add(members.get(i));
            }
            p += members.size();
            for (int d = 0; d < devices; d++) {
                on[c][d] = per.get(d).stream().mapToInt(Integer::intValue).toArray();
            }
        }
        return new Fixed(tokens, on);
    }

    static int collisions(ClusterPlan plan, int devices) {
        int n = 0;
        int[][] count = new int[plan.clusteredTokens()][devices];
        for (int c = 0; c < plan.clusterCount(); c++) {
            for (int d = 0; d < devices; d++) {
                for (int t : plan.tokensOn(c, d)) {
                    if (count[t][d]++ > 0) {
                        n++;
                    }
                }
            }
        }
        return n;
    }

    @Property(tries = 300)
    void keepsCountsAndTokensAndNeverAddsCollisions(@ForAll long seed, @ForAll @IntRange(min = 1, max = 8) int devices,
            @ForAll @IntRange(min = 1, max = 400) int tokens, @ForAll @IntRange(min = 0, max = 200) int extra) {
        Fixed plan = randomPlan(seed, devices, tokens, extra);
        ReplicaSpread spread = ReplicaSpread.of(plan, devices);
        for (int c = 0; c < plan.clusterCount(); c++) {
            int[] before = new int[0];
            int[] after = new int[0];
            for (int d = 0; d < devices; d++) {
                assertEquals(plan.tokensOn(c, d).length, spread.tokensOn(c, d).length, "per-device count");
                before = concat(before, plan.tokensOn(c, d));
                after = concat(after, spread.tokensOn(c, d));
                int[] s = spread.tokensOn(c, d);
                for (int i = 1; i < s.length; i++) {
                    assertTrue(s[i - 1] < s[i], "ascending within a segment");
                }
            }
            Arrays.sort(before);
            Arrays.sort(after);
            assertArrayEquals(before, after, "cluster " + c + " keeps its members");
            assertEquals(plan.medoid(c), spread.plan().medoid(c));
        }
        int eq7 = collisions(plan, devices);
        int spreadCollisions = collisions(spread.plan(), devices);
        assertTrue(spreadCollisions <= eq7, "spread " + spreadCollisions + " > eq7 " + eq7);
        assertEquals(spreadCollisions, spread.collisions());
    }

    @Test
    void doublyStoredTokensEndOnDistinctDevices() {
        int devices = 4;
        Fixed plan = randomPlan(17, devices, 512, 64);
        int eq7 = collisions(plan, devices);
        assertTrue(eq7 > 5, "the raw order collides: " + eq7);
        assertEquals(0, collisions(ReplicaSpread.of(plan, devices).plan(), devices));
    }

    private static int[] concat(int[] a, int[] b) {
        int[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
