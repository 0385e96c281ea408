package io.kvoffload.internal.util;

/**
 * Items bucketed by label, as a clustering's members per cluster: {@code groups[j]} holds, in item
 * order, every item whose label is {@code j}. Both k-means implementations (the ClusterKV/PQCache
 * one in core and the bench's key-space baseline) group their points this way.
 */
public final class LabelGroups {
    private LabelGroups() {}

    /** The indices {@code 0..labels.length-1} grouped by {@code labels}, each label in {@code 0..k-1}. */
    public static int[][] of(int[] labels, int k) {
        return of(null, labels, k);
    }

    /**
     * {@code items[i]} grouped by {@code labels[i]} (each in {@code 0..k-1}); a null {@code items}
     * stands for the indices themselves.
     */
    public static int[][] of(int[] items, int[] labels, int k) {
        int[] sizes = new int[k];
        for (int l : labels) {
            sizes[l]++;
        }
        int[][] g = new int[k][];
        for (int j = 0; j < k; j++) {
            g[j] = new int[sizes[j]];
        }
        int[] fill = new int[k];
        for (int i = 0; i < labels.length; i++) {
            g[labels[i]][fill[labels[i]]++] = items == null ? i : items[i];
        }
        return g;
    }
}
