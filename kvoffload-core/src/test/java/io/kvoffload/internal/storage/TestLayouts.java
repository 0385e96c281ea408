package io.kvoffload.internal.storage;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/** Cluster layouts built in memory for tests of what sits on top of them (no device behind the offsets). */
public final class TestLayouts {
    private TestLayouts() {}

    /**
     * Every token in one cluster of 1..8 consecutive tokens, plus random replicas in other clusters;
     * one segment per cluster on device {@code c % 2}.
     */
    public static ClusterLayout random(int tokens, int entryBytes, SplittableRandom rnd) {
        List<List<Integer>> clusters = new ArrayList<>();
        for (int t = 0; t < tokens; ) {
            int n = Math.min(tokens - t, 1 + rnd.nextInt(8));
            List<Integer> c = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                c.add(t + i);
            }
            clusters.add(c);
            t += n;
        }
        for (int r = 0; r < tokens / 4; r++) {
            List<Integer> c = clusters.get(rnd.nextInt(clusters.size()));
            int t = rnd.nextInt(tokens);
            if (!c.contains(t)) {
                c.add(t);
            }
        }
        int n = clusters.size();
        int entries = clusters.stream().mapToInt(List::size).sum();
        int[] medoid = new int[n];
        int[] clusterSeg = new int[n + 1];
        int[] segDevice = new int[n];
        long[] segOffset = new long[n];
        int[] segLength = new int[n];
        int[] segFirst = new int[n + 1];
        int[] entryToken = new int[entries];
        int[] entryCrc = new int[entries];
        int[] nextDevice = new int[n];
        long offset = 0;
        int e = 0;
        for (int c = 0; c < n; c++) {
            List<Integer> members = clusters.get(c);
            medoid[c] = members.get(0);
            clusterSeg[c + 1] = c + 1;
            segDevice[c] = c % 2;
            segOffset[c] = offset;
            segLength[c] = (int) ((long) members.size() * entryBytes + 4095 & -4096L);
            offset += segLength[c];
            segFirst[c] = e;
            for (int t : members) {
                entryToken[e++] = t;
            }
            segFirst[c + 1] = e;
            nextDevice[c] = (c + 1) % 2;
        }
        return new ClusterLayout(tokens, entryBytes, 0.35, n, medoid, clusterSeg, segDevice, segOffset, segLength,
                segFirst, entryToken, entryCrc, nextDevice);
    }
}
