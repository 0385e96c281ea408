package io.kvoffload.internal.sched;

import io.kvoffload.internal.util.Checks;
import io.kvoffload.internal.util.StampSet;
import java.util.Arrays;

/**
 * Swarm's decoupled entry-bucket scheduler [Swarm §6.1, Eq. 8, Fig. 9]: turns the entries of
 * the activated clusters into one batch of reads spread evenly over the SSDs.
 *
 * <ol>
 *   <li>Global merge (Eq. 8): the union of the activated clusters' entries, each entry once, minus
 *       entries already resident in DRAM.
 *   <li>Entries sorted by replica count, ascending (a counting sort: counts are small).
 *   <li>An entry with one replica goes to its SSD's bucket; an entry with several goes to the
 *       bucket, among the SSDs holding a copy, with the fewest entries so far (ties: the lowest
 *       device index, so plans are deterministic).
 *   <li>Each bucket is sorted by file offset and adjacent entries are merged into one run (up to
 *       {@code maxRunEntries}).
 *   <li>With a {@linkplain #readAlignment read alignment}, neighbouring runs of a bucket whose aligned
 *       spans share an aligned block are one read (O_DIRECT reads whole aligned blocks, so two runs in
 *       one block would read it twice), and so are runs whose spans touch, up to {@code maxRunEntries}
 *       entries' bytes (one request instead of two).
 *   <li>The heads of all buckets' reads are interleaved into one batch, so one submission feeds every
 *       SSD; a read's runs are consecutive.
 * </ol>
 *
 * The ablations of the paper's Fig. 14 are {@link Mode}s. All working arrays are allocated up front
 * (or grown when a larger input is first seen), so planning allocates nothing in steady state.
 * Not thread-safe: one scheduler per sequence and layer pipeline.
 */
public final class BucketScheduler {

    /** Scheduling policy ([Swarm] §6.1, Eq. 8), or one of the ablations of Fig. 14. */
    public enum Mode {
        /** Dedup + rarest-replica-first + least-loaded bucket. */
        BALANCED(true, true),
        /** First replica, no dedup. */
        STATIC(false, false),
        /** Dedup, but every entry reads its first replica. */
        NO_BALANCE(true, false),
        /** Least-loaded bucket, but entries shared by clusters are read once per cluster. */
        NO_DEDUP(false, true);

        final boolean dedup;
        final boolean balance;

        Mode(boolean dedup, boolean balance) {
            this.dedup = dedup;
            this.balance = balance;
        }

        /** The mode of a public scheduling option. */
        public static Mode of(io.kvoffload.DecodeOptions.Scheduling s) {
            return switch (s) {
                case BALANCED -> BALANCED;
                case STATIC -> STATIC;
                case NO_BALANCE -> NO_BALANCE;
                case NO_DEDUP -> NO_DEDUP;
            };
        }
    }

    /** Where the copies of an entry are. Implementations must not allocate. */
    public interface Replicas {
        /** Number of copies of {@code entry}, at least 1. */
        int count(int entry);

        /** Device of copy {@code r} of {@code entry}. */
        int device(int entry, int r);

        /** File offset of copy {@code r} of {@code entry} on its device. */
        long offset(int entry, int r);
    }

    /** Whether an entry is already in DRAM (and needs no read). Implementations must not allocate. */
    public interface Residency {
        boolean resident(int entry);
    }

    private final int devices;
    private int entryBytes;
    private final int maxRunEntries;
    private Mode mode;

    // Dedup: the entries already in this step's set.
    private final StampSet inSet = new StampSet();

    // I/O set after merge, then grouped by replica count.
    private int[] set;
    private int setSize;
    private int[] sorted;
    private int[] countHistogram = new int[9];

    // Buckets: entries chosen per device, with the offset of the chosen copy.
    private final int[] bucketSize;
    private int[][] bucketEntry;
    private long[][] bucketOffset;
    private long[] scratchOffset;
    private int[] scratchEntry;
    private final int[] radixCount = new int[256];

    // Output: runs in batch order.
    private int runs;
    private int[] runDevice;
    private long[] runOffset;
    private int[] runFirst;
    private int[] runCount;
    private int[] planned;
    private int plannedSize;
    private int[][] bucketRunStart;
    private int[] bucketRuns;
    // Reads: runs sharing aligned blocks, per bucket (as run indices into bucketRunStart), then in batch order.
    private int readAlignment;
    private int[][] bucketReadStart;
    private int[] bucketReads;
    private int reads;
    /** Batch order: read {@code i}'s runs are {@code [readFirstRun[i], readFirstRun[i + 1])}. */
    private int[] readFirstRun;
    /** Entries other sequences of a batch already put on each device (null: none), see {@link #carryLoad}. */
    private int[] carriedLoad;

    public BucketScheduler(int devices, int entryBytes, int maxRunEntries, Mode mode) {
        this.devices = Checks.inRange("devices", devices, 1, 4096);
        this.entryBytes = Checks.positive("entryBytes", entryBytes);
        this.maxRunEntries = Checks.inRange("maxRunEntries", maxRunEntries, 1, 1 << 20);
        this.mode = Checks.notNull("mode", mode);
        bucketSize = new int[devices];
        bucketRuns = new int[devices];
        bucketReads = new int[devices];
        ensureCapacity(1024);
    }

    public Mode mode() {
        return mode;
    }

    /**
     * Sets the bytes of one stored entry for the plans that follow: neighbours merge into a run
     * when one starts where the other ends. A head-sharded layout stores head-group shards, smaller
     * than the entries the scheduler was built for.
     */
    public void entryBytes(int bytes) {
        this.entryBytes = Checks.positive("entryBytes", bytes);
    }

    public void mode(Mode m) {
        this.mode = Checks.notNull("mode", m);
    }

    /**
     * Makes the least-loaded choice count {@code load[d]} entries already on device {@code d}, so
     * that the plans of several sequences submitted together balance the SSDs jointly (batched
     * decoding); null plans alone again. The array is read, not copied.
     */
    public void carryLoad(int[] load) {
        if (load != null && load.length != devices) {
            throw new IllegalArgumentException("load.length = " + load.length + "; allowed: " + devices + " (one per device)");
        }
        carriedLoad = load;
    }

    private int load(int d) {
        return carriedLoad == null ? bucketSize[d] : bucketSize[d] + carriedLoad[d];
    }

    private void ensureCapacity(int n) {
        if (set != null && set.length >= n) {
            return;
        }
        int c = Math.max(n, set == null ? 0 : set.length * 2);
        set = new int[c];
        sorted = new int[c];
        planned = new int[c];
        scratchOffset = new long[c];
        scratchEntry = new int[c];
        runDevice = new int[c];
        runOffset = new long[c];
        runFirst = new int[c];
        runCount = new int[c];
        bucketEntry = new int[devices][c];
        bucketOffset = new long[devices][c];
        bucketRunStart = new int[devices][c];
        bucketReadStart = new int[devices][c + 1];
        readFirstRun = new int[c + 1];
    }

    /**
     * Sets the alignment of the reads that will carry the plans that follow ({@code 0}: every run is
     * its own read). Runs of one device whose aligned spans share an aligned block then form one read,
     * so no block is read twice in a plan; runs whose spans touch do too, up to {@code maxRunEntries}
     * entries' bytes, so they take one request.
     */
    public void readAlignment(int alignment) {
        if (alignment != 0 && (alignment < 0 || Integer.bitCount(alignment) != 1)) {
            throw new IllegalArgumentException("alignment = " + alignment + "; allowed: 0 or a power of two");
        }
        this.readAlignment = alignment;
    }

    /** The alignment {@link #readAlignment} set, 0 where every run is its own read. */
    public int readAlignment() {
        return readAlignment;
    }

    /**
     * Plans the reads for the entries of the activated clusters.
     *
     * @param clusterEntries the activated clusters' entries, concatenated (an entry shared by two
     *     clusters appears twice); entry ids are non-negative
     * @param n how many of {@code clusterEntries} to use
     */
    public void plan(int[] clusterEntries, int n, Replicas replicas, Residency residency) {
        Checks.inRange("n", n, 0, clusterEntries.length);
        ensureCapacity(n);
        mergeEq8(clusterEntries, n, residency);
        sortByReplicaCount(replicas);
        assignToBuckets(replicas);
        buildRuns();
    }

    private void mergeEq8(int[] clusterEntries, int n, Residency residency) {
        inSet.clear(0);
        setSize = 0;
        for (int i = 0; i < n; i++) {
            int e = clusterEntries[i];
            if (e < 0) {
                throw new IllegalArgumentException("clusterEntries[" + i + "] = " + e + " is not an entry id; allowed: >= 0");
            }
            if (mode.dedup && !inSet.add(e)) {
                continue;
            }
            if (residency != null && residency.resident(e)) {
                continue;
            }
            set[setSize++] = e;
        }
    }

    private void sortByReplicaCount(Replicas replicas) {
        int max = 1;
        for (int i = 0; i < setSize; i++) {
            int c = replicas.count(set[i]);
            if (c < 1) {
                throw new IllegalArgumentException("entry " + set[i] + " has " + c + " replicas; allowed: >= 1");
            }
            max = Math.max(max, c);
        }
        if (countHistogram.length < max + 2) {
            countHistogram = new int[max + 2];
        }
        Arrays.fill(countHistogram, 0, max + 2, 0);
        for (int i = 0; i < setSize; i++) {
            countHistogram[replicas.count(set[i]) + 1]++;
        }
        for (int c = 1; c <= max + 1; c++) {
            countHistogram[c] += countHistogram[c - 1];
        }
        // Stable: entries with equal counts keep their merge order.
        for (int i = 0; i < setSize; i++) {
            sorted[countHistogram[replicas.count(set[i])]++] = set[i];
        }
    }

    private void assignToBuckets(Replicas replicas) {
        Arrays.fill(bucketSize, 0);
        for (int i = 0; i < setSize; i++) {
            int e = sorted[i];
            int copies = mode.balance ? replicas.count(e) : 1;
            int best = 0;
            int bestDevice = replicas.device(e, 0);
            for (int r = 1; r < copies; r++) {
                int d = replicas.device(e, r);
                if (load(d) < load(bestDevice) || (load(d) == load(bestDevice) && d < bestDevice)) {
                    best = r;
                    bestDevice = d;
                }
            }
            if (bestDevice < 0 || bestDevice >= devices) {
                throw new IllegalArgumentException("entry " + e + " replica " + best + " is on device " + bestDevice
                        + "; allowed: 0.." + (devices - 1));
            }
            int k = bucketSize[bestDevice]++;
            bucketEntry[bestDevice][k] = e;
            bucketOffset[bestDevice][k] = replicas.offset(e, best);
        }
    }

    private void buildRuns() {
        // Per bucket: sort by offset, then merge adjacent entries into runs.
        plannedSize = 0;
        int totalRuns = 0;
        for (int d = 0; d < devices; d++) {
            int size = bucketSize[d];
            bucketRuns[d] = 0;
            if (size == 0) {
                continue;
            }
            sortByOffset(bucketOffset[d], bucketEntry[d], size);
            long[] off = bucketOffset[d];
            int k = 0;
            while (k < size) {
                int start = k;
                k++;
                while (k < size && k - start < maxRunEntries && off[k] == off[start] + (long) (k - start) * entryBytes) {
                    k++;
                }
                bucketRunStart[d][bucketRuns[d]++] = start;
            }
            totalRuns += bucketRuns[d];
        }
        for (int d = 0; d < devices; d++) {
            groupReads(d);
        }
        // Interleave the heads of all buckets: read 0 of every device, then read 1, …
        runs = 0;
        reads = 0;
        for (int round = 0; runs < totalRuns; round++) {
            for (int d = 0; d < devices; d++) {
                if (round >= bucketReads[d]) {
                    continue;
                }
                readFirstRun[reads] = runs;
                for (int k = bucketReadStart[d][round], to = bucketReadStart[d][round + 1]; k < to; k++) {
                    int start = bucketRunStart[d][k];
                    int end = k + 1 < bucketRuns[d] ? bucketRunStart[d][k + 1] : bucketSize[d];
                    runDevice[runs] = d;
                    runOffset[runs] = bucketOffset[d][start];
                    runFirst[runs] = plannedSize;
                    runCount[runs] = end - start;
                    System.arraycopy(bucketEntry[d], start, planned, plannedSize, end - start);
                    plannedSize += end - start;
                    runs++;
                }
                reads++;
            }
        }
        readFirstRun[reads] = runs;
    }

    /**
     * Groups bucket {@code d}'s runs (in offset order) into reads: a run joins the read before it where
     * its aligned span starts inside that read's last aligned block, or right after it while the read
     * stays within {@code maxRunEntries} entries' bytes.
     */
    private void groupReads(int d) {
        int n = bucketRuns[d];
        int[] at = bucketReadStart[d];
        bucketReads[d] = 0;
        if (n == 0) {
            at[0] = 0;
            return;
        }
        long[] off = bucketOffset[d];
        long a = readAlignment, cap = (long) maxRunEntries * entryBytes;
        long readStart = 0, readEnd = -1;
        for (int k = 0; k < n; k++) {
            int start = bucketRunStart[d][k];
            int end = k + 1 < n ? bucketRunStart[d][k + 1] : bucketSize[d];
            long from = off[start], to = off[start] + (long) (end - start) * entryBytes;
            long alignedFrom = a == 0 ? from : from & -a;
            long alignedTo = a == 0 ? to : (to + a - 1) & -a;
            // A run in the read's last block joins it (else that block is read twice); one that only
            // touches it joins while the read stays within the cap (one request instead of two).
            if (a != 0 && k > 0 && (alignedFrom < readEnd || alignedFrom == readEnd && alignedTo - readStart <= cap)) {
                readEnd = Math.max(readEnd, alignedTo);
                continue;
            }
            at[bucketReads[d]++] = k;
            readStart = alignedFrom;
            readEnd = alignedTo;
        }
        at[bucketReads[d]] = n;
    }

    /**
     * Sorts the pairs (off[i], ent[i]) by offset: an LSD radix sort over the offset's bytes into
     * preallocated scratch arrays, skipping bytes on which all offsets agree. Stable, O(n), no
     * allocation (a library sort of nearly sorted data may allocate merge buffers).
     */
    private void sortByOffset(long[] off, int[] ent, int size) {
        long or = 0;
        long and = -1;
        for (int i = 0; i < size; i++) {
            or |= off[i];
            and &= off[i];
        }
        long varying = or ^ and;
        long[] srcOff = off;
        int[] srcEnt = ent;
        long[] dstOff = scratchOffset;
        int[] dstEnt = scratchEntry;
        for (int shift = 0; shift < 64; shift += 8) {
            if (((varying >>> shift) & 0xFF) == 0) {
                continue;
            }
            int[] count = radixCount;
            java.util.Arrays.fill(count, 0);
            for (int i = 0; i < size; i++) {
                count[(int) ((srcOff[i] >>> shift) & 0xFF)]++;
            }
            for (int b = 0, sum = 0; b < 256; b++) {
                int c = count[b];
                count[b] = sum;
                sum += c;
            }
            for (int i = 0; i < size; i++) {
                int pos = count[(int) ((srcOff[i] >>> shift) & 0xFF)]++;
                dstOff[pos] = srcOff[i];
                dstEnt[pos] = srcEnt[i];
            }
            long[] to = srcOff;
            srcOff = dstOff;
            dstOff = to;
            int[] te = srcEnt;
            srcEnt = dstEnt;
            dstEnt = te;
        }
        if (srcOff != off) {
            System.arraycopy(srcOff, 0, off, 0, size);
            System.arraycopy(srcEnt, 0, ent, 0, size);
        }
    }

    // ---- the plan ----

    /** Number of runs in the batch (entries at one stride from {@link #runOffset}). */
    public int runs() {
        return runs;
    }

    /** Number of reads in the batch: each one or more consecutive runs ({@link #readAlignment}). */
    public int reads() {
        return reads;
    }

    /** The first run of read {@code i}; its runs end where read {@code i + 1}'s begin ({@code i < reads()}). */
    public int readFirstRun(int i) {
        return readFirstRun[i];
    }


    public int runDevice(int i) {
        return runDevice[i];
    }

    public long runOffset(int i) {
        return runOffset[i];
    }

    /** Entries read by run {@code i}: {@code plannedEntries()[runFirst(i) .. runFirst(i)+runEntries(i))}. */
    public int runFirst(int i) {
        return runFirst[i];
    }

    public int runEntries(int i) {
        return runCount[i];
    }

    public long runBytes(int i) {
        return (long) runCount[i] * entryBytes;
    }

    /** Entry ids in batch order; valid until the next {@link #plan}. */
    public int[] plannedEntries() {
        return planned;
    }

    /** Entries to read (after merge and residency filter). */
    public int plannedCount() {
        return plannedSize;
    }

    /** Entries assigned to device {@code d}'s bucket in the last plan. */
    public int bucketSize(int d) {
        return bucketSize[d];
    }
}
