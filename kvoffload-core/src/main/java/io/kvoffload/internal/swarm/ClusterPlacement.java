package io.kvoffload.internal.swarm;

import io.kvoffload.internal.util.Checks;

/**
 * Swarm's round-robin multi-SSD placement (§5.2, Tier 2, Eq. 7): a running pointer {@code p}
 * starts at 0; cluster {@code c}, taken in id order, starts on disk {@code p mod N_disk}, then
 * {@code p += |C|}. Member {@code i} of the cluster (in {@link Clustering}'s member order) goes to disk
 * {@code (start + i) mod N_disk}, so every cluster is spread over all disks and its share per disk
 * differs by at most one entry. Replicas are physical copies: an entry in two clusters is placed
 * once for each.
 *
 * <h2>Extents</h2>
 * The storage layer writes each cluster's share of one disk as one contiguous extent, so reading a
 * cluster is one read per disk. Slot {@code j} of the extent of cluster {@code c} on disk
 * {@code d} holds member {@link #memberIndex(int, int, int) memberIndex(c, d, j)}; the extent holds
 * {@link #countOn(int, int) countOn(c, d)} entries ({@code entryBytes} each).
 *
 * <p>The placement is a pure function of the cluster sizes (in id order) and the number of disks:
 * {@link #of(int[], int)} recomputes it from a persisted size list, and {@link #fingerprint()} lets a
 * manifest check that the recomputation matches what was written.
 */
public final class ClusterPlacement {
    private final int disks;
    private final int[] sizes;
    private final int[] startDisk;
    private final long[] entriesPerDisk;
    private final Clustering clustering;

    private ClusterPlacement(int disks, int[] sizes, Clustering clustering, boolean firstDevice) {
        Checks.inRange("disks", disks, 1, 4096);
        this.disks = disks;
        this.sizes = sizes;
        this.clustering = clustering;
        this.startDisk = new int[sizes.length];
        this.entriesPerDisk = new long[disks];
        long p = 0;
        for (int c = 0; c < sizes.length; c++) {
            int start = firstDevice ? 0 : (int) (p % disks);
            startDisk[c] = start;
            p += sizes[c];
            int base = sizes[c] / disks, extra = sizes[c] % disks;
            for (int d = 0; d < disks; d++) {
                // the first `extra` disks from the start disk take one more
                entriesPerDisk[d] += base + (Math.floorMod(d - start, disks) < extra ? 1 : 0);
            }
        }
    }

    /** The placement of a clustering over {@code disks} SSDs, 1..4096. */
    public static ClusterPlacement of(Clustering clustering, int disks) {
        return of(clustering, disks, false);
    }

    /**
     * The "No-Balance" placement ablation: every cluster starts on disk 0 (member {@code i} on disk
     * {@code i mod disks}), so clusters smaller than the disk count leave the last disks idle and
     * the first ones take most reads. Only for measuring what Eq. 7's pointer buys.
     */
    public static ClusterPlacement firstDevice(Clustering clustering, int disks) {
        return of(clustering, disks, true);
    }

    private static ClusterPlacement of(Clustering clustering, int disks, boolean firstDevice) {
        Checks.notNull("clustering", clustering);
        int[] sizes = new int[clustering.clusterCount()];
        for (int c = 0; c < sizes.length; c++) {
            sizes[c] = clustering.size(c);
        }
        return new ClusterPlacement(disks, sizes, clustering, firstDevice);
    }

    /**
     * The placement of clusters of the given sizes (in id order): what a manifest that stores only
     * the sizes recomputes. {@link #entriesOn} needs the clustering and is unavailable here.
     */
    public static ClusterPlacement of(int[] clusterSizes, int disks) {
        Checks.notNull("clusterSizes", clusterSizes);
        for (int c = 0; c < clusterSizes.length; c++) {
            Checks.inRange("clusterSizes[" + c + "]", clusterSizes[c], 1, Integer.MAX_VALUE);
        }
        return new ClusterPlacement(disks, clusterSizes.clone(), null, false);
    }

    public int disks() { return disks; }

    public int clusterCount() { return sizes.length; }

    public int size(int cluster) {
        Checks.index("cluster", cluster, sizes.length);
        return sizes[cluster];
    }

    /** Eq. 7: the disk of the cluster's first member. */
    public int startDisk(int cluster) {
        Checks.index("cluster", cluster, sizes.length);
        return startDisk[cluster];
    }

    /** The disk of member {@code memberIndex} of {@code cluster}. */
    public int diskOf(int cluster, int memberIndex) {
        Checks.index("memberIndex", memberIndex, size(cluster));
        return (int) ((startDisk[cluster] + (long) memberIndex) % disks);
    }

    /**
     * The disk the next member appended to {@code cluster} goes to (online maintenance, Eq. 9:
     * "place on the cluster's next disk"): it continues the cluster's round robin.
     */
    public int nextDisk(int cluster) {
        return (int) ((startDisk(cluster) + (long) sizes[cluster]) % disks);
    }

    /** Entries of {@code cluster} on {@code disk}: the length of that extent (may be 0). */
    public int countOn(int cluster, int disk) {
        Checks.index("cluster", cluster, sizes.length);
        Checks.index("disk", disk, disks);
        int offset = Math.floorMod(disk - startDisk[cluster], disks); // first member index on this disk
        return sizes[cluster] <= offset ? 0 : (sizes[cluster] - offset + disks - 1) / disks;
    }

    /** The member index in slot {@code slot} of the extent of {@code cluster} on {@code disk}. */
    public int memberIndex(int cluster, int disk, int slot) {
        Checks.index("slot", slot, countOn(cluster, disk));
        return Math.floorMod(disk - startDisk[cluster], disks) + slot * disks;
    }

    /** The entries (token positions) of the extent of {@code cluster} on {@code disk}, in slot order. */
    public int[] entriesOn(int cluster, int disk) {
        if (clustering == null) {
            throw new IllegalStateException("this placement was computed from sizes only; entries need the clustering");
        }
        int n = countOn(cluster, disk);
        int[] out = new int[n];
        for (int j = 0; j < n; j++) {
            out[j] = clustering.member(cluster, memberIndex(cluster, disk, j));
        }
        return out;
    }

    /** Entries stored on {@code disk} over all clusters, replicas included. */
    public long entriesOnDisk(int disk) {
        Checks.index("disk", disk, disks);
        return entriesPerDisk[disk];
    }

    /**
     * A 64-bit fingerprint of the disk count, the sizes and the start disks: equal placements have
     * equal fingerprints, and a manifest stores it to detect a recomputation that differs.
     */
    public long fingerprint() {
        long h = mix(0x4B564F504C414345L ^ disks) ^ sizes.length;
        for (int c = 0; c < sizes.length; c++) {
            h = mix(h ^ ((long) sizes[c] << 32 | startDisk[c]));
        }
        return h;
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
