package io.kvoffload.internal.sched;

/**
 * {@link BucketScheduler.Replicas} as plain tables: entry {@code e} has {@code device[e].length}
 * copies, copy {@code r} on device {@code device[e][r]} at byte offset {@code offset[e][r]}. For a
 * layout built by hand (scheduler benchmarks and properties); the stored layouts answer from their
 * own segment tables.
 */
public class ReplicaTable implements BucketScheduler.Replicas {
    public final int[][] device;
    public final long[][] offset;

    /** A table of {@code entries} entries whose rows the caller fills. */
    public ReplicaTable(int entries) {
        device = new int[entries][];
        offset = new long[entries][];
    }

    @Override
    public int count(int entry) {
        return device[entry].length;
    }

    @Override
    public int device(int entry, int copy) {
        return device[entry][copy];
    }

    @Override
    public long offset(int entry, int copy) {
        return offset[entry][copy];
    }
}
