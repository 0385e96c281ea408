package io.kvoffload.iouring;

import io.kvoffload.spi.IoBatch;

/**
 * A ring's record of one batch in flight: which batch, its generation (so a stale CQE can never be
 * credited to a later batch in the same slot) and per-request progress. The arrays grow to the
 * largest batch capacity seen and are then reused, so steady-state batches allocate nothing.
 */
final class InflightBatch {
    IoBatch batch;
    int generation;
    int size;
    int remaining;
    /** Requests handed to the SQ so far; the rest wait in the ring's backlog. */
    int queued;
    int[] done = new int[0];
    int[] retries = new int[0];

    /** Grows the per-request arrays to hold at least {@code capacity} requests (their contents are not kept). */
    void ensureCapacity(int capacity) {
        if (done.length < capacity) {
            done = new int[capacity];
            retries = new int[capacity];
        }
    }

    /** Requests the per-request arrays hold. */
    int capacity() {
        return done.length;
    }

    void start(IoBatch b) {
        int n = b.size();
        ensureCapacity(b.capacity());
        java.util.Arrays.fill(done, 0, n, 0);
        java.util.Arrays.fill(retries, 0, n, 0);
        batch = b;
        size = n;
        remaining = n;
        queued = 0;
        generation = UserData.nextGeneration(generation);
    }

    void release() {
        batch = null;
        size = 0;
        remaining = 0;
        queued = 0;
    }
}
