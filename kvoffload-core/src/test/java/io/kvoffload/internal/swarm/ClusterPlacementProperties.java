package io.kvoffload.internal.swarm;

import static io.kvoffload.internal.swarm.ProfileTest.assertMessage;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;

/** Eq. 7 round-robin placement. */
class ClusterPlacementProperties {

    @Provide
    Arbitrary<int[]> sizes() {
        return Arbitraries.integers().between(1, 300).array(int[].class).ofMinSize(0).ofMaxSize(200);
    }

    @Property(tries = 300)
    void startDisksFollowEq7AndEachClusterIsBalanced(@ForAll("sizes") int[] sizes,
            @ForAll @IntRange(min = 1, max = 16) int disks) {
        ClusterPlacement pl = ClusterPlacement.of(sizes, disks);
        long p = 0;
        long[] perDisk = new long[disks];
        for (int c = 0; c < sizes.length; c++) {
            assertEquals((int) (p % disks), pl.startDisk(c), "Eq. 7 start disk of cluster " + c);
            p += sizes[c];
            int min = Integer.MAX_VALUE, max = 0, total = 0;
            List<Integer> seen = new ArrayList<>();
            for (int d = 0; d < disks; d++) {
                int n = pl.countOn(c, d);
                min = Math.min(min, n);
                max = Math.max(max, n);
                total += n;
                perDisk[d] += n;
                for (int j = 0; j < n; j++) {
                    int i = pl.memberIndex(c, d, j);
                    assertEquals(d, pl.diskOf(c, i));
                    assertEquals((pl.startDisk(c) + i) % disks, d, "round robin from the start disk");
                    if (j > 0) {
                        assertTrue(i > pl.memberIndex(c, d, j - 1), "an extent keeps member order");
                    }
                    seen.add(i);
                }
            }
            assertTrue(max - min <= 1, "cluster " + c + " per-disk counts differ by " + (max - min));
            assertEquals(sizes[c], total);
            seen.sort(null);
            for (int i = 0; i < sizes[c]; i++) {
                assertEquals(i, seen.get(i), "every member placed once");
            }
            assertEquals((int) ((pl.startDisk(c) + (long) sizes[c]) % disks), pl.nextDisk(c));
        }
        for (int d = 0; d < disks; d++) {
            assertEquals(perDisk[d], pl.entriesOnDisk(d));
        }
    }

    @Property(tries = 200)
    void isAPureFunctionOfTheSizes(@ForAll("sizes") int[] sizes, @ForAll @IntRange(min = 1, max = 16) int disks) {
        ClusterPlacement a = ClusterPlacement.of(sizes, disks), b = ClusterPlacement.of(sizes.clone(), disks);
        assertEquals(a.fingerprint(), b.fingerprint());
        for (int c = 0; c < sizes.length; c++) {
            assertEquals(a.startDisk(c), b.startDisk(c));
        }
        if (sizes.length > 0 && disks > 1) {
            int[] other = sizes.clone();
            other[0]++;
            assertNotEquals(a.fingerprint(), ClusterPlacement.of(other, disks).fingerprint());
            assertNotEquals(a.fingerprint(), ClusterPlacement.of(sizes, disks + 1).fingerprint());
        }
    }

    @Example
    void replicasAreCopiesAndExtentsListTheirEntries() {
        List<int[]> sets = new ArrayList<>();
        for (int q = 0; q < 10; q++) {
            sets.add(q % 2 == 0 ? new int[] {0, 1, 2, 3, 4} : new int[] {0, 5, 6, 7});
        }
        CoActivationProfile p = CoActivationProfile.fromActivationSets(40, sets, CoActivationNormaliser.perQuery());
        Clustering cl = new CoActivationClustering(ClusteringConfig.defaults().withRadius(ClusterRadius.fixed(0.5))).cluster(p);
        assertEquals(2, cl.replicaCount(0), "entry 0 is co-activated with both groups");
        ClusterPlacement pl = ClusterPlacement.of(cl, 3);
        long total = 0;
        int copiesOf0 = 0;
        for (int c = 0; c < cl.clusterCount(); c++) {
            int[] placed = new int[0];
            for (int d = 0; d < 3; d++) {
                int[] e = pl.entriesOn(c, d);
                total += e.length;
                placed = concat(placed, e);
                for (int x : e) {
                    copiesOf0 += x == 0 ? 1 : 0;
                }
            }
            int[] members = cl.members(c);
            Arrays.sort(members);
            Arrays.sort(placed);
            assertArrayEquals(members, placed);
        }
        assertEquals(cl.memberships(), total);
        assertEquals(2, copiesOf0);
        assertEquals(ClusterPlacement.of(cl, 3).fingerprint(), ClusterPlacement.of(sizesOf(cl), 3).fingerprint());
        assertThrows(IllegalStateException.class, () -> ClusterPlacement.of(sizesOf(cl), 3).entriesOn(0, 0));
    }

    @Example
    void aRestoredClusteringPlacesExactlyLikeTheOriginal() {
        ProfileInputs in = ProfileInputs.generate(500, 60, 30, 0.02, 3);
        Clustering cl = new CoActivationClustering(ClusteringConfig.defaults().withRadius(ClusterRadius.fixed(0.6)))
                .cluster(in.profile(CoActivationNormaliser.perQuery()));
        Clustering back = Clustering.restore(cl.entries(), cl.memberOffsets(), cl.allMembers(), cl.medoids(),
                cl.coActivationClusters(), cl.stats().tau());
        assertEquals(cl.clusterCount(), back.clusterCount());
        for (int c = 0; c < cl.clusterCount(); c++) {
            assertArrayEquals(cl.members(c), back.members(c));
            assertEquals(cl.medoid(c), back.medoid(c));
            assertTrue(Double.isNaN(back.joinDistance(c, 0)));
        }
        for (int e = 0; e < cl.entries(); e++) {
            assertEquals(cl.replicaCount(e), back.replicaCount(e));
        }
        assertEquals(ClusterPlacement.of(cl, 4).fingerprint(), ClusterPlacement.of(back, 4).fingerprint());
        assertEquals(cl.stats().replicationFactor(), back.stats().replicationFactor(), 1e-12);
        assertEquals(cl.memoryBytes(), back.memoryBytes());
    }

    @Example
    void restoreRejectsCorruptArrays() {
        int[] off = {0, 2, 3}, mem = {0, 1, 2}, med = {0, 2};
        Clustering.restore(3, off, mem, med, 1, 0.35);
        assertMessage(() -> Clustering.restore(4, off, mem, med, 1, 0.35), "entry 3 is in no cluster");
        assertMessage(() -> Clustering.restore(3, new int[] {0, 2}, mem, med, 1, 0.35), "offsets.length = 2");
        assertMessage(() -> Clustering.restore(3, new int[] {0, 3, 3}, mem, med, 1, 0.35), "cluster 1 has offsets 3..3");
        assertMessage(() -> Clustering.restore(3, off, new int[] {0, 0, 2}, med, 1, 0.35), "holds entry 0 twice");
        assertMessage(() -> Clustering.restore(3, off, new int[] {0, 1, 7}, med, 1, 0.35), "members[2] = 7", "0..2");
        assertMessage(() -> Clustering.restore(3, off, mem, new int[] {1, 2}, 1, 0.35), "medoids[0] = 1", "first member");
        assertMessage(() -> Clustering.restore(3, off, mem, med, 3, 0.35), "coActivationClusters = 3", "0..2");
        assertMessage(() -> Clustering.restore(3, new int[] {1, 2, 3}, mem, med, 1, 0.35), "offsets run from 1");
        assertMessage(() -> Clustering.restore(3, off, mem, med, 1, 1.0), "tau = 1.0");
    }

    @Example
    void rejectsBadInput() {
        assertMessage(() -> ClusterPlacement.of(new int[] {1}, 0), "disks = 0", "1..4096");
        assertMessage(() -> ClusterPlacement.of(new int[] {0}, 2), "clusterSizes[0] = 0");
        ClusterPlacement pl = ClusterPlacement.of(new int[] {5}, 2);
        assertMessage(() -> pl.countOn(0, 2), "disk = 2", "0..1");
        assertMessage(() -> pl.countOn(1, 0), "cluster = 1", "0..0");
        assertMessage(() -> pl.memberIndex(0, 1, 2), "slot = 2", "0..1");
        assertMessage(() -> pl.diskOf(0, 5), "memberIndex = 5", "0..4");
    }

    private static int[] sizesOf(Clustering cl) {
        int[] s = new int[cl.clusterCount()];
        for (int c = 0; c < s.length; c++) {
            s[c] = cl.size(c);
        }
        return s;
    }

    private static int[] concat(int[] a, int[] b) {
        int[] r = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }
}
