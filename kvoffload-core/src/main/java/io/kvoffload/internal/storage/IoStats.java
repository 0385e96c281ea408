package io.kvoffload.internal.storage;

import java.util.concurrent.atomic.LongAdder;

/** Counters per device and for checksums; cheap to update from any thread. */
public final class IoStats {
    public final LongAdder[] bytesRead;
    public final LongAdder[] bytesWritten;
    public final LongAdder[] reads;
    public final LongAdder[] writes;
    public final LongAdder checksumsVerified = new LongAdder();
    public final LongAdder checksumFailures = new LongAdder();
    public final LongAdder evictions = new LongAdder();
    /** Reads served from another copy after the chosen one failed ({@link ReplicaFailover}). */
    public final LongAdder failovers = new LongAdder();
    /** Single-copy reads that verified when repeated (transient faults). */
    public final LongAdder rereads = new LongAdder();
    /** Bad copies rewritten from a good one. */
    public final LongAdder repairs = new LongAdder();
    /** Reads served from the remote tier after every local copy failed (the local copy is then repaired). */
    public final LongAdder remoteFailovers = new LongAdder();

    public IoStats(int devices) {
        bytesRead = adders(devices);
        bytesWritten = adders(devices);
        reads = adders(devices);
        writes = adders(devices);
    }

    /** Counts every request of a completed batch against its device. */
    public void count(io.kvoffload.spi.IoBatch batch) {
        for (int i = 0; i < batch.size(); i++) {
            int d = batch.device(i);
            if (batch.op(i) == io.kvoffload.spi.IoBatch.READ) {
                bytesRead[d].add(batch.length(i));
                reads[d].increment();
            } else {
                bytesWritten[d].add(batch.length(i));
                writes[d].increment();
            }
        }
    }

    private static LongAdder[] adders(int n) {
        LongAdder[] a = new LongAdder[n];
        for (int i = 0; i < n; i++) {
            a[i] = new LongAdder();
        }
        return a;
    }
}
