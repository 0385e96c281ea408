package io.kvoffload.internal.swarm;

import io.kvoffload.internal.util.Checks;
import io.kvoffload.internal.util.PartialTopK;
import io.kvoffload.internal.util.TopK;

/**
 * One decoding step's cluster choice (Swarm §6, online selection): given every cluster's
 * {@link MedoidIndex} score and size, the clusters in descending score order (equal scores: lower id
 * first; order of scores as {@link Float#compare}, so {@code 0.0} before {@code −0.0}) until the sum
 * of their sizes reaches the token budget. The cluster that reaches it is the last one taken, so the
 * result may overshoot the budget by less than that cluster's size; when all sizes together stay
 * below the budget, every cluster is taken. Sizes are summed as given: replicas that several taken
 * clusters hold are counted in each, and the caller removes them (Eq. 8).
 *
 * <p>The step must not sort all C clusters (C is 65,536 at a 1M-token context with 16-entry
 * clusters) nor allocate. It quickselects the k-th best score for {@code k = 2·B / avgSize + 16}, a
 * candidate set about twice as large as the budget needs with average sizes; sorts only the
 * candidates (every score at or above the threshold, so they are exactly a prefix of the full
 * order); and, should the best clusters be small enough that the candidates do not fill the budget,
 * doubles k and repeats. Expected cost O(C + k log k).
 *
 * <p>The working arrays are preallocated and grow only when a call brings more clusters than any
 * before. One instance per decoder thread: it is not thread-safe.
 */
public final class ClusterSelection {
    /** Below this many keys, insertion sort; above, quicksort partitions. */
    private static final int INSERTION = 24;

    private PartialTopK topK = new PartialTopK(0); // the k-th best score (its capacity is the arrays')
    private int capacity;
    private long[] keys = new long[0];   // candidates: descending score, then ascending id, as one long
    private long selectedTokens;
    // the walk (begin/next): the ranked prefix so far and where the caller is in it
    private int[] ranked = new int[0];
    private float[] walkScores;
    private int[] walkSizes;
    private int walkClusters;
    private int rankedCount;
    private int used;
    private long want;

    /**
     * @param initialClusters clusters the working arrays are sized for, 0..2^31−9; larger calls grow them
     */
    public ClusterSelection(int initialClusters) {
        Checks.inRange("initialClusters", initialClusters, 0, Integer.MAX_VALUE - 8);
        grow(initialClusters);
    }

    /** Clusters the working arrays hold without growing. */
    public int capacity() {
        return capacity;
    }

    /** The sum of the sizes of the clusters the last {@link #select} returned. */
    public long selectedTokens() {
        return selectedTokens;
    }

    /**
     * Selects clusters best first until their sizes sum to at least {@code budget}.
     *
     * @param scores one score per cluster; the first {@code clusters} are read, none may be NaN
     * @param sizes one size per cluster, each ≥ 0; the first {@code clusters} are read
     * @param clusters clusters to choose from, 0..min(scores.length, sizes.length)
     * @param budget tokens to cover, ≥ 0; 0 selects nothing
     * @param out receives the chosen cluster ids, best first; length at least {@code clusters}
     * @return how many clusters were written to {@code out}
     * @throws IllegalArgumentException if an argument is out of range
     */
    public int select(float[] scores, int[] sizes, int clusters, int budget, int[] out) {
        Checks.notNull("scores", scores);
        Checks.notNull("sizes", sizes);
        Checks.notNull("out", out);
        Checks.inRange("clusters", clusters, 0, Math.min(scores.length, sizes.length));
        Checks.inRange("budget", budget, 0, Integer.MAX_VALUE);
        if (out.length < clusters) {
            throw new IllegalArgumentException("out.length = " + out.length + " is too small; allowed: at least clusters = "
                    + clusters);
        }
        long total = 0;
        for (int c = 0; c < clusters; c++) {
            int s = sizes[c];
            if (s < 0) {
                throw new IllegalArgumentException("sizes[" + c + "] = " + s + " is out of range; allowed: 0.."
                        + Integer.MAX_VALUE);
            }
            if (Float.isNaN(scores[c])) {
                throw new IllegalArgumentException("scores[" + c + "] = NaN; allowed: finite or infinite values");
            }
            total += s;
        }
        selectedTokens = 0;
        if (budget == 0 || clusters == 0) {
            return 0;
        }
        if (clusters > capacity) {
            grow(clusters);
        }
        long k;
        if (total < budget) {
            k = clusters; // all of them, best first
        } else {
            long avg = Math.max(1, total / clusters);
            k = Math.min(clusters, 2L * budget / avg + 16);
        }
        while (true) {
            int m = candidates(scores, clusters, (int) k);
            sort(keys, 0, m);
            long sum = 0;
            int n = 0;
            for (int i = 0; i < m; i++) {
                int id = (int) (keys[i] & 0x7FFFFFFF);
                out[n++] = id;
                sum += sizes[id];
                if (sum >= budget) {
                    selectedTokens = sum;
                    return n;
                }
            }
            if (m == clusters) { // every cluster taken and the budget still open
                selectedTokens = sum;
                return n;
            }
            k = Math.min(clusters, 2 * k); // the best clusters were small: widen the prefix
        }
    }

    /**
     * Starts a step's walk over the clusters best first ({@link #next}), for a caller that still
     * misses {@code missing} distinct tokens. The walk ranks only a prefix ({@link #select} with the
     * missing tokens as budget) and ranks further, asking for twice as many tokens plus 16 each time,
     * when the caller takes every ranked cluster and still misses tokens: replicas and rows already
     * resident make clusters add fewer new tokens than their size. Both Swarm's decoder layer and the
     * in-memory {@link SwarmSelector} walk clusters this way ({@code missing} below 1 counts as 1).
     * Arguments as {@link #select}'s; the
     * arrays are read, not copied, until the walk ends.
     */
    public void begin(float[] scores, int[] sizes, int clusters, long missing) {
        Checks.notNull("scores", scores);
        Checks.notNull("sizes", sizes);
        Checks.inRange("clusters", clusters, 0, Math.min(scores.length, sizes.length));
        if (ranked.length < clusters) {
            ranked = new int[clusters];
        }
        walkScores = scores;
        walkSizes = sizes;
        walkClusters = clusters;
        want = Math.max(1, missing); // a caller that walks wants at least one cluster
        rankedCount = 0;
        used = 0;
    }

    /** The walk's next cluster in descending score order, or −1 once every cluster was taken. */
    public int next() {
        // Rank further until the prefix grows: a large best cluster may cover a doubled request alone,
        // and stopping then would leave the caller's budget unfilled. `want` grows past the clusters'
        // total, where select takes them all, so this ends.
        while (used == rankedCount) {
            if (rankedCount == walkClusters) {
                return -1;
            }
            rankedCount = select(walkScores, walkSizes, walkClusters, (int) Math.min(Integer.MAX_VALUE, want), ranked);
            want = Math.min(Integer.MAX_VALUE, want * 2 + 16);
        }
        return ranked[used++];
    }

    /**
     * Fills {@code keys[0 .. m)} with the clusters whose score is at least the k-th best and returns
     * m ≥ k (ties at the threshold are all included, so the set is a prefix of the full order).
     */
    private int candidates(float[] scores, int clusters, int k) {
        int m = 0;
        if (k >= clusters) {
            for (int c = 0; c < clusters; c++) {
                keys[m++] = key(scores[c], c);
            }
            return m;
        }
        float threshold = topK.kthLargest(scores, 0, clusters, k);
        for (int c = 0; c < clusters; c++) {
            float s = scores[c];
            if (s >= threshold) {
                keys[m++] = key(s, c);
            }
        }
        return m;
    }

    /** The sort key of cluster {@code id}: ascending keys are descending scores, then ascending ids. */
    static long key(float score, int id) {
        return TopK.rankKey(score, id);
    }

    private void grow(int clusters) {
        topK = new PartialTopK(clusters);
        keys = new long[clusters];
        capacity = clusters;
    }

    /**
     * Sorts {@code a[from .. to)} ascending without allocating ({@code Arrays.sort} may allocate a
     * merge buffer for inputs made of long runs): quicksort with a median of three, recursing into the
     * smaller side, insertion sort for short ranges and heapsort past a depth limit, so the worst
     * case stays O(n log n). The keys are distinct (they hold the cluster id).
     */
    static void sort(long[] a, int from, int to) {
        quicksort(a, from, to - 1, 2 * (32 - Integer.numberOfLeadingZeros(Math.max(1, to - from))));
    }

    private static void quicksort(long[] a, int lo, int hi, int depth) {
        while (hi - lo + 1 > INSERTION) {
            if (depth-- == 0) {
                heapsort(a, lo, hi + 1);
                return;
            }
            int mid = (lo + hi) >>> 1;
            if (a[mid] < a[lo]) swap(a, mid, lo);
            if (a[hi] < a[lo]) swap(a, hi, lo);
            if (a[hi] < a[mid]) swap(a, hi, mid);
            long pivot = a[mid];
            int i = lo, j = hi;
            while (i <= j) {
                while (a[i] < pivot) i++;
                while (a[j] > pivot) j--;
                if (i <= j) {
                    swap(a, i, j);
                    i++;
                    j--;
                }
            }
            if (j - lo < hi - i) { // recurse into the smaller side: stack depth O(log n)
                quicksort(a, lo, j, depth);
                lo = i;
            } else {
                quicksort(a, i, hi, depth);
                hi = j;
            }
        }
        for (int i = lo + 1; i <= hi; i++) {
            long v = a[i];
            int j = i - 1;
            while (j >= lo && a[j] > v) {
                a[j + 1] = a[j];
                j--;
            }
            a[j + 1] = v;
        }
    }

    private static void heapsort(long[] a, int from, int to) {
        int n = to - from;
        for (int i = n / 2 - 1; i >= 0; i--) {
            siftDown(a, from, i, n);
        }
        for (int end = n - 1; end > 0; end--) {
            swap(a, from, from + end);
            siftDown(a, from, 0, end);
        }
    }

    private static void siftDown(long[] a, int base, int i, int n) {
        long v = a[base + i];
        while (true) {
            int child = 2 * i + 1;
            if (child >= n) {
                break;
            }
            if (child + 1 < n && a[base + child + 1] > a[base + child]) {
                child++;
            }
            if (a[base + child] <= v) {
                break;
            }
            a[base + i] = a[base + child];
            i = child;
        }
        a[base + i] = v;
    }

    private static void swap(long[] a, int i, int j) {
        long t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}
