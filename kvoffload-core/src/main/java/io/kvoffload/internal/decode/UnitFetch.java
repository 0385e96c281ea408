package io.kvoffload.internal.decode;

import io.kvoffload.KvChecksumException;
import io.kvoffload.internal.sched.BucketScheduler;
import io.kvoffload.internal.storage.EntryChecksum;
import io.kvoffload.internal.storage.EntryVerifier;
import io.kvoffload.internal.storage.Store;
import io.kvoffload.internal.storage.UnitLayout;
import io.kvoffload.strategy.UnitReads;
import java.lang.foreign.MemorySegment;

/**
 * A strategy's auxiliary read before its selection ({@link io.kvoffload.strategy.LayerSelector#planUnits}):
 * the units of a {@link UnitLayout} it asked for, planned by a {@link BucketScheduler} (each unit
 * once, spread over the SSDs, adjacent units merged into one read), read in one batched submission
 * through {@link StagedReads} and verified unit by unit as each run lands. A unit that fails its
 * checksum is read a second time (a fault in transit passes then); if that fails too the step fails
 * with a {@link KvChecksumException} naming the unit, its device and offset: a unit has one copy,
 * and nothing unverified reaches the strategy. Bytes and reads count in the decoder's statistics
 * like the entry fetch's. One per pipeline slot; allocates only when a step is larger than any before.
 */
final class UnitFetch implements StagedReads.RunSink, AutoCloseable {
    private final Store store;
    private final EntryChecksum checksum;
    private final EntryVerifier verifier;
    private final String sequenceId;
    private final int alignment;
    private final DecodeCounters counters;
    private final StagedReads reads;
    private BucketScheduler scheduler;
    private int schedulerStride;
    // The read in flight.
    private UnitLayout layout;
    private UnitReads target;
    private int layer;
    private int[] bad = new int[8];
    private long[] badAt = new long[8];
    private int badCount;

    UnitFetch(Store store, EntryChecksum checksum, String sequenceId, int alignment, DecodeCounters counters) {
        this.store = store;
        this.checksum = checksum;
        this.verifier = new EntryVerifier(store, checksum, sequenceId);
        this.sequenceId = sequenceId;
        this.alignment = alignment;
        this.counters = counters;
        this.reads = new StagedReads(store, alignment);
    }

    /** Reads, verifies and hands to {@code units} every unit it asks for; returns when all landed. */
    void read(UnitLayout layout, int layer, UnitReads units) {
        int n = units.size();
        if (n == 0) {
            return;
        }
        this.layout = layout;
        this.layer = layer;
        this.target = units;
        badCount = 0;
        BucketScheduler sched = scheduler(layout.stride());
        long t0 = System.nanoTime();
        try {
            sched.plan(units.unitArray(), n, layout, null);
            reads.clear();
            reads.fill(sched);
            reads.submit();
            reads.gatherAsLanded(this);
            if (badCount > 0) {
                reread();
            }
        } finally {
            reads.clear();
            counters.ioNanos += System.nanoTime() - t0;
        }
    }

    private BucketScheduler scheduler(int stride) {
        if (scheduler == null || schedulerStride != stride) {
            scheduler = new BucketScheduler(store.devices().size(), stride, Math.max(1, (256 << 10) / stride),
                    BucketScheduler.Mode.BALANCED);
            scheduler.readAlignment(alignment);
            schedulerStride = stride;
        }
        return scheduler;
    }

    @Override
    public void landed(int r) {
        BucketScheduler sched = scheduler;
        int[] planned = sched.plannedEntries();
        int first = sched.runFirst(r);
        int stride = layout.stride();
        reads.countRead(r, counters);
        MemorySegment mem = reads.memory();
        for (int k = 0; k < sched.runEntries(r); k++) {
            int unit = planned[first + k];
            long at = reads.at(r) + (long) k * stride;
            if (verifier.enabled() && reads.checksum(checksum, EntryChecksum.Kind.UNIT, layer, unit, at,
                    layout.unitBytes()) != layout.unitCrc(unit)) {
                verifier.mismatch(layout.unitDevice(unit), layer, unit, false);
                if (badCount == bad.length) {
                    bad = java.util.Arrays.copyOf(bad, badCount * 2);
                    badAt = java.util.Arrays.copyOf(badAt, badCount * 2);
                }
                bad[badCount] = unit;
                badAt[badCount++] = at;
                continue;
            }
            if (verifier.enabled()) {
                verifier.verified();
            }
            target.landed(unit, mem, at);
        }
    }

    /** The second read of every unit that failed its checksum, into its place in the first read's staging. */
    private void reread() {
        try (StagedReads again = new StagedReads(store, alignment)) {
            BucketScheduler sched = new BucketScheduler(store.devices().size(), layout.stride(), 1,
                    BucketScheduler.Mode.BALANCED);
            sched.plan(bad, badCount, layout, null);
            again.fill(sched);
            again.submit();
            again.gatherAsLanded(r -> {
                again.countRead(r, counters);
                int unit = sched.plannedEntries()[sched.runFirst(r)];
                long at = again.at(r);
                int actual = again.checksum(checksum, EntryChecksum.Kind.UNIT, layer, unit, at, layout.unitBytes());
                if (actual != layout.unitCrc(unit)) {
                    throw failure(unit, actual);
                }
                verifier.verified();
                long dst = badAt[indexOfBad(unit)];
                MemorySegment.copy(again.memory(), at, reads.memory(), dst, layout.unitBytes());
                target.landed(unit, reads.memory(), dst);
            });
        }
    }

    private int indexOfBad(int unit) {
        for (int i = 0; i < badCount; i++) {
            if (bad[i] == unit) {
                return i;
            }
        }
        throw new IllegalStateException("unit " + unit + " was not read again");
    }

    private KvChecksumException failure(int unit, int actual) {
        int dev = layout.unitDevice(unit);
        verifier.mismatch(dev, layer, unit, true);
        return new KvChecksumException("checksum mismatch on device " + dev + " ("
                + store.devices().get(dev).directory() + "), sequence " + sequenceId + ", layer " + layer
                + ": unit " + unit + " of the unit layout of strategy '" + layout.owner() + "' (offset "
                + layout.unitOffset(unit) + ", " + layout.unitBytes() + " bytes): expected CRC32C "
                + Integer.toHexString(layout.unitCrc(unit)) + ", read " + Integer.toHexString(actual)
                + " twice; the unit has one copy", dev, sequenceId, layer, 0, 0);
    }

    @Override
    public void close() {
        reads.close();
    }
}
