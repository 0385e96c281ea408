package io.kvoffload.internal.baseline;

import io.kvoffload.internal.util.Checks;

/**
 * A binary max-heap of ids ordered by a score array (ties: lower id first; NaN lowest), for
 * selectors that take units best-first until a token budget is filled: heapifying is linear and only
 * the units actually taken cost a {@code log} each, so no full sort of the scores is needed. Holds a
 * reference to the caller's score array between {@link #reset} and the last {@link #poll}; allocates
 * nothing after construction.
 */
final class ScoreHeap {
    private final int[] heap;
    private float[] scores;
    private int size;

    ScoreHeap(int capacity) {
        Checks.inRange("capacity", capacity, 0, Integer.MAX_VALUE - 8);
        this.heap = new int[Math.max(1, capacity)];
    }

    /** Puts ids {@code 0 … count−1} in the heap, ordered by {@code scores}. */
    void reset(float[] scores, int count) {
        Checks.inRange("count", count, 0, Math.min(heap.length, scores.length));
        this.scores = scores;
        this.size = count;
        for (int i = 0; i < count; i++) {
            heap[i] = i;
        }
        for (int i = count / 2 - 1; i >= 0; i--) {
            siftDown(i);
        }
    }

    boolean isEmpty() {
        return size == 0;
    }

    /** Removes and returns the best id. */
    int poll() {
        if (size == 0) {
            throw new IllegalStateException("the heap is empty");
        }
        int top = heap[0];
        heap[0] = heap[--size];
        if (size > 0) {
            siftDown(0);
        }
        return top;
    }

    private void siftDown(int i) {
        int x = heap[i];
        while (true) {
            int l = 2 * i + 1;
            if (l >= size) {
                break;
            }
            int r = l + 1;
            int c = r < size && before(heap[r], heap[l]) ? r : l;
            if (!before(heap[c], x)) {
                break;
            }
            heap[i] = heap[c];
            i = c;
        }
        heap[i] = x;
    }

    private boolean before(int a, int b) {
        float x = scores[a], y = scores[b];
        if (x != x) x = Float.NEGATIVE_INFINITY;
        if (y != y) y = Float.NEGATIVE_INFINITY;
        return x != y ? x > y : a < b;
    }
}
