package io.kvoffload.internal.cache;

import io.kvoffload.internal.util.Checks;
import java.util.Arrays;

/**
 * Swarm's hot-cluster cache [Swarm §5.2 "Tier 1", §6.2 "Cache Replacement"]: cached clusters sit in
 * a min-heap ordered by their cost-effectiveness score (Eq. 6). Each step, an activated cluster's
 * frequency rises by one and a cached cluster that was not activated loses one; an activated
 * cluster that is not cached is admitted if it fits the budget, evicting lower-scoring clusters
 * from the heap top while the newcomer scores higher than them.
 */
public final class CostEffectivenessCache extends AbstractClusterCache {
    private final int entryBytes;
    private final CostEffectiveness score;

    private int[] frequency;
    private int[] heapPos; // -1: not cached
    private int[] heap;
    private double[] heapScore;
    private int heapSize;
    private int[] scratch;

    /**
     * @param clusters number of cluster ids (0..clusters-1); grows if larger ids appear
     * @param initialFrequency frequencies from offline profiling, or null for zeros
     */
    public CostEffectivenessCache(int clusters, long budgetBytes, int entryBytes, Sizes sizes, CostEffectiveness score,
            int[] initialFrequency) {
        super(budgetBytes, sizes);
        Checks.inRange("clusters", clusters, 0, Integer.MAX_VALUE - 8);
        this.entryBytes = Checks.positive("entryBytes", entryBytes);
        this.score = Checks.notNull("score", score);
        grow(Math.max(16, clusters));
        if (initialFrequency != null) {
            System.arraycopy(initialFrequency, 0, frequency, 0, Math.min(initialFrequency.length, frequency.length));
        }
    }

    @Override
    protected int capacity() {
        return frequency.length;
    }

    @Override
    protected void grow(int n) {
        int old = frequency == null ? 0 : frequency.length;
        if (n <= old) {
            return;
        }
        frequency = frequency == null ? new int[n] : Arrays.copyOf(frequency, n);
        heapPos = heapPos == null ? new int[n] : Arrays.copyOf(heapPos, n);
        Arrays.fill(heapPos, old, n, -1);
        heap = heap == null ? new int[n] : Arrays.copyOf(heap, n);
        heapScore = heapScore == null ? new double[n] : Arrays.copyOf(heapScore, n);
        growLists(n);
        scratch = new int[n];
    }

    private double scoreOf(int c) {
        long bytes = sizes.bytes(c);
        return score.score(frequency[c], (int) Math.max(1, bytes / entryBytes));
    }

    @Override
    public void step(int[] activated, int n) {
        beginStep();
        for (int i = 0; i < n; i++) {
            int c = firstActivation(activated, i);
            if (c < 0) {
                continue;
            }
            frequency[c]++;
            if (heapPos[c] >= 0) {
                hits++;
                heapScore[heapPos[c]] = scoreOf(c);
                siftDown(siftUp(heapPos[c]));
            } else {
                misses++;
            }
        }
        // Cached but not activated: frequency falls by one (not below zero), score re-keyed. Snapshot
        // first: re-keying moves entries inside the heap.
        int m = 0;
        for (int k = 0; k < heapSize; k++) {
            int c = heap[k];
            if (!seenThisStep(c) && frequency[c] > 0) {
                scratch[m++] = c;
            }
        }
        for (int i = 0; i < m; i++) {
            int c = scratch[i];
            frequency[c]--;
            int k = heapPos[c];
            heapScore[k] = scoreOf(c);
            siftDown(siftUp(k));
        }
        for (int i = 0; i < n; i++) {
            int c = activated[i];
            if (heapPos[c] < 0 && seenThisStep(c)) {
                admit(c);
                markHandled(c); // a repeat in activated[] must not retry
            }
        }
    }

    private void admit(int c) {
        long bytes = sizes.bytes(c);
        if (bytes > budget) {
            return;
        }
        double s = scoreOf(c);
        // Evict lower-scoring clusters while the newcomer does not fit and beats the heap top.
        long freeable = budget - used;
        if (freeable < bytes) {
            // Check first that evicting lower-scoring clusters can make room, so nothing is evicted in vain.
            long could = freeable;
            for (int k = 0; k < heapSize && could < bytes; k++) {
                if (heapScore[k] < s) {
                    could += sizes.bytes(heap[k]);
                }
            }
            if (could < bytes) {
                return;
            }
            while (budget - used < bytes && heapSize > 0 && heapScore[0] < s) {
                int victim = heap[0];
                removeAt(0);
                used -= sizes.bytes(victim);
                recordEviction(victim);
            }
            if (budget - used < bytes) {
                return;
            }
        }
        int k = heapSize++;
        heap[k] = c;
        heapScore[k] = s;
        heapPos[c] = k;
        siftUp(k);
        used += bytes;
        recordAdmission(c);
    }

    private void removeAt(int k) {
        int c = heap[k];
        heapPos[c] = -1;
        int last = --heapSize;
        if (k != last) {
            heap[k] = heap[last];
            heapScore[k] = heapScore[last];
            heapPos[heap[k]] = k;
            siftDown(siftUp(k));
        }
    }

    private int siftUp(int k) {
        while (k > 0) {
            int p = (k - 1) >>> 1;
            if (heapScore[p] <= heapScore[k]) {
                break;
            }
            swap(p, k);
            k = p;
        }
        return k;
    }

    private int siftDown(int k) {
        while (true) {
            int l = 2 * k + 1;
            if (l >= heapSize) {
                return k;
            }
            int m = l + 1 < heapSize && heapScore[l + 1] < heapScore[l] ? l + 1 : l;
            if (heapScore[k] <= heapScore[m]) {
                return k;
            }
            swap(k, m);
            k = m;
        }
    }

    private void swap(int a, int b) {
        int ca = heap[a];
        double sa = heapScore[a];
        heap[a] = heap[b];
        heapScore[a] = heapScore[b];
        heap[b] = ca;
        heapScore[b] = sa;
        heapPos[heap[a]] = a;
        heapPos[heap[b]] = b;
    }

    @Override
    public boolean cached(int cluster) {
        return cluster >= 0 && cluster < heapPos.length && heapPos[cluster] >= 0;
    }

    /** The cluster's current activation frequency. */
    public int frequency(int cluster) {
        return cluster < frequency.length ? frequency[cluster] : 0;
    }

    /** Shrinking (see {@link ClusterCache#resize}) evicts the lowest-scoring clusters, heap top first. */
    @Override
    protected int detachLeastWorth() {
        if (heapSize == 0) {
            return -1;
        }
        int victim = heap[0];
        removeAt(0);
        return victim;
    }

    @Override
    protected void detach(int cluster) {
        removeAt(heapPos[cluster]);
    }

    /** The cluster's Eq. 6 score while cached. */
    @Override
    public double retention(int cluster) {
        return cached(cluster) ? heapScore[heapPos[cluster]] : Double.NEGATIVE_INFINITY;
    }

    /** Lowest score among cached clusters (the heap top), or NaN when empty. */
    public double minCachedScore() {
        return heapSize == 0 ? Double.NaN : heapScore[0];
    }
}
