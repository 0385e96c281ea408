package io.kvoffload.internal.cache;

import java.util.Arrays;

/**
 * Least-recently-used cluster cache, the comparison policy of Swarm's Fig. 15: every activated
 * cluster is admitted, evicting the least recently activated ones until it fits. An intrusive
 * doubly linked list over cluster ids keeps each step allocation-free.
 */
public final class LruClusterCache extends AbstractClusterCache {
    private int[] prev;
    private int[] next;
    private boolean[] in;
    private long[] lastStep; // step count when last activated
    private long steps;
    private int head = -1; // most recent
    private int tail = -1; // least recent

    public LruClusterCache(int clusters, long budgetBytes, Sizes sizes) {
        super(budgetBytes, sizes);
        grow(Math.max(16, clusters));
    }

    @Override
    protected int capacity() {
        return prev.length;
    }

    @Override
    protected void grow(int n) {
        int old = prev == null ? 0 : prev.length;
        if (n <= old) {
            return;
        }
        prev = prev == null ? new int[n] : Arrays.copyOf(prev, n);
        next = next == null ? new int[n] : Arrays.copyOf(next, n);
        in = in == null ? new boolean[n] : Arrays.copyOf(in, n);
        lastStep = lastStep == null ? new long[n] : Arrays.copyOf(lastStep, n);
        growLists(n);
    }

    @Override
    public void step(int[] activated, int n) {
        beginStep();
        steps++;
        for (int i = 0; i < n; i++) {
            int c = firstActivation(activated, i);
            if (c < 0) {
                continue;
            }
            lastStep[c] = steps;
            if (in[c]) {
                hits++;
                if (c != head) {
                    unlink(c);
                    pushFront(c);
                }
                continue;
            }
            misses++;
            long bytes = sizes.bytes(c);
            if (bytes > budget) {
                continue;
            }
            while (budget - used < bytes && tail >= 0) {
                int victim = tail;
                unlink(victim);
                in[victim] = false;
                used -= sizes.bytes(victim);
                recordEviction(victim);
            }
            in[c] = true;
            pushFront(c);
            used += bytes;
            recordAdmission(c);
        }
    }

    /** Shrinking (see {@link ClusterCache#resize}) evicts the least recently activated clusters: the list's tail. */
    @Override
    protected int detachLeastWorth() {
        if (tail < 0) {
            return -1;
        }
        int victim = tail;
        detach(victim);
        return victim;
    }

    @Override
    protected void detach(int cluster) {
        unlink(cluster);
        in[cluster] = false;
    }

    /** The step that last activated the cluster: the least recent goes first. */
    @Override
    public double retention(int cluster) {
        return cached(cluster) ? lastStep[cluster] : Double.NEGATIVE_INFINITY;
    }

    private void unlink(int c) {
        if (prev[c] >= 0) {
            next[prev[c]] = next[c];
        } else {
            head = next[c];
        }
        if (next[c] >= 0) {
            prev[next[c]] = prev[c];
        } else {
            tail = prev[c];
        }
    }

    private void pushFront(int c) {
        prev[c] = -1;
        next[c] = head;
        if (head >= 0) {
            prev[head] = c;
        }
        head = c;
        if (tail < 0) {
            tail = c;
        }
    }

    @Override
    public boolean cached(int cluster) {
        return cluster >= 0 && cluster < in.length && in[cluster];
    }
}
