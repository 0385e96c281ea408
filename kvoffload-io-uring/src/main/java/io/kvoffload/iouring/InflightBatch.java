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

    void start(IoBatch b) {
        int n = b.size();
        if (done.length < b.capacity()) {
            done = new int[b.capacity()];
            retries = new int[b.capacity()];
        } else {
            java.util.Arrays.fill(done, 0, n, 0);
            java.util.Arrays.fill(retries, 0, n, 0);
        }
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
