package io.kvoffload.internal.sched;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

class BucketSchedulerProperties {
    static final int ENTRY = 4096;

    /** A random layout: each entry has 1..maxCopies copies on distinct devices at distinct offsets. */
    static final class Layout extends ReplicaTable implements BucketScheduler.Residency {
        final boolean[] resident;

        Layout(Random rnd, int entries, int devices, int maxCopies, double residentShare) {
            super(entries);
            resident = new boolean[entries];
            long[] next = new long[devices];
            for (int e = 0; e < entries; e++) {
                int copies = 1 + rnd.nextInt(Math.min(maxCopies, devices));
                device[e] = new int[copies];
                offset[e] = new long[copies];
                int start = rnd.nextInt(devices);
                for (int r = 0; r < copies; r++) {
                    int d = (start + r) % devices;
                    device[e][r] = d;
                    // Mostly sequential placement, sometimes a gap, so some runs merge and some do not.
                    next[d] += rnd.nextInt(4) == 0 ? 2 * ENTRY : ENTRY;
                    offset[e][r] = next[d];
                }
                resident[e] = rnd.nextDouble() < residentShare;
            }
        }

        @Override
        public boolean resident(int e) {
            return resident[e];
        }
    }

    static int[] clusters(Random rnd, int entries, int n) {
        int[] c = new int[n];
        for (int i = 0; i < n; i++) {
            c[i] = rnd.nextInt(entries);
        }
        return c;
    }

    @Property(tries = 300)
    void swarmReadsEachNeededEntryExactlyOnceFromARealCopyInContiguousRuns(@ForAll long seed,
            @ForAll @IntRange(min = 1, max = 8) int devices, @ForAll @IntRange(min = 1, max = 4) int maxCopies,
            @ForAll @IntRange(min = 0, max = 3000) int n) {
        Random rnd = new Random(seed);
        int entries = 1 + rnd.nextInt(2000);
        Layout layout = new Layout(rnd, entries, devices, maxCopies, 0.2);
        int[] selected = clusters(rnd, entries, n);
        BucketScheduler s = new BucketScheduler(devices, ENTRY, 1 + rnd.nextInt(64), BucketScheduler.Mode.BALANCED);
        for (int repeat = 0; repeat < 2; repeat++) { // reuse must not leak state between plans
            s.plan(selected, n, layout, layout);
            Set<Integer> expected = new HashSet<>();
            for (int i = 0; i < n; i++) {
                if (!layout.resident[selected[i]]) {
                    expected.add(selected[i]);
                }
            }
            Set<Integer> read = new HashSet<>();
            int sum = 0;
            for (int run = 0; run < s.runs(); run++) {
                int d = s.runDevice(run);
                for (int k = 0; k < s.runEntries(run); k++) {
                    int e = s.plannedEntries()[s.runFirst(run) + k];
                    assertTrue(read.add(e), "entry " + e + " read twice");
                    assertFalse(layout.resident[e], "entry " + e + " is in DRAM");
                    long want = s.runOffset(run) + (long) k * ENTRY;
                    boolean isCopy = false;
                    for (int r = 0; r < layout.count(e); r++) {
                        isCopy |= layout.device[e][r] == d && layout.offset[e][r] == want;
                    }
                    assertTrue(isCopy, "run " + run + " reads entry " + e + " where no copy of it is");
                }
                sum += s.runEntries(run);
            }
            assertEquals(expected, read);
            assertEquals(expected.size(), s.plannedCount());
            assertEquals(sum, s.plannedCount());
        }
    }

    @Property(tries = 200)
    void bucketsDifferByAtMostOneWhenEveryEntryIsOnEveryDevice(@ForAll long seed,
            @ForAll @IntRange(min = 1, max = 8) int devices, @ForAll @IntRange(min = 0, max = 2000) int n) {
        Random rnd = new Random(seed);
        int entries = 500;
        Layout layout = new Layout(rnd, entries, devices, devices, 0);
        for (int e = 0; e < entries; e++) { // full replication
            layout.device[e] = new int[devices];
            layout.offset[e] = new long[devices];
            for (int d = 0; d < devices; d++) {
                layout.device[e][d] = d;
                layout.offset[e][d] = (long) e * ENTRY;
            }
        }
        BucketScheduler s = new BucketScheduler(devices, ENTRY, 8, BucketScheduler.Mode.BALANCED);
        s.plan(clusters(rnd, entries, n), n, layout, layout);
        int min = Integer.MAX_VALUE;
        int max = 0;
        for (int d = 0; d < devices; d++) {
            min = Math.min(min, s.bucketSize(d));
            max = Math.max(max, s.bucketSize(d));
        }
        assertTrue(max - min <= 1, "bucket sizes " + min + ".." + max);
    }

    @Property(tries = 100)
    void theBatchStartsWithTheHeadOfEveryNonEmptyBucket(@ForAll long seed,
            @ForAll @IntRange(min = 2, max = 8) int devices) {
        Random rnd = new Random(seed);
        Layout layout = new Layout(rnd, 1000, devices, 3, 0);
        int[] sel = clusters(rnd, 1000, 600);
        BucketScheduler s = new BucketScheduler(devices, ENTRY, 4, BucketScheduler.Mode.BALANCED);
        s.plan(sel, sel.length, layout, layout);
        int nonEmpty = 0;
        for (int d = 0; d < devices; d++) {
            nonEmpty += s.bucketSize(d) > 0 ? 1 : 0;
        }
        Set<Integer> firstDevices = new HashSet<>();
        for (int r = 0; r < Math.min(nonEmpty, s.runs()); r++) {
            firstDevices.add(s.runDevice(r));
        }
        assertEquals(nonEmpty, firstDevices.size());
    }

    /**
     * Reads group a plan's runs without reading an aligned block twice: each read is consecutive runs of
     * one device in ascending offset order; on each device no two reads share an aligned block; reads
     * that touch are apart only where one would outgrow {@code maxRunEntries} entries' bytes; without a
     * read alignment every run is its own read. Entries are small and of any size, on
     * one copy each, so parts of pages land in the same aligned blocks.
     */
    @Property(tries = 300)
    void readsNeverReadAnAlignedBlockTwice(@ForAll long seed, @ForAll @IntRange(min = 1, max = 4) int devices,
            @ForAll @IntRange(min = 64, max = 6144) int entry, @ForAll @IntRange(min = 0, max = 2000) int n) {
        Random rnd = new Random(seed);
        int entries = 1 + rnd.nextInt(3000);
        ReplicaTable t = new ReplicaTable(entries);
        long[] next = new long[devices];
        for (int e = 0; e < entries; e++) {
            int d = rnd.nextInt(devices);
            t.device[e] = new int[] {d};
            t.offset[e] = new long[] {next[d]};
            next[d] += entry + (rnd.nextInt(8) == 0 ? entry : 0); // packed, now and then a gap
        }
        int[] selected = clusters(rnd, entries, n);
        int maxRun = 1 + rnd.nextInt(64);
        int align = 4096;
        BucketScheduler s = new BucketScheduler(devices, entry, maxRun, BucketScheduler.Mode.BALANCED);
        s.readAlignment(align);
        s.plan(selected, n, t, null);
        assertEquals(0, s.reads() == 0 ? 0 : s.readFirstRun(0));
        assertEquals(s.runs(), s.readFirstRun(s.reads()));
        long cap = (long) maxRun * entry;
        Map<Integer, List<long[]>> spans = new HashMap<>();
        for (int i = 0; i < s.reads(); i++) {
            int first = s.readFirstRun(i), to = s.readFirstRun(i + 1);
            assertTrue(to > first, "read " + i + " carries a run");
            long start = s.runOffset(first) & -align, end = 0;
            for (int r = first; r < to; r++) {
                assertEquals(s.runDevice(first), s.runDevice(r), "one device per read");
                long runStart = s.runOffset(r) & -align;
                if (r > first) {
                    assertTrue(runStart <= end, "run " + r + " shares or touches the read's blocks");
                    assertTrue(s.runOffset(r) >= s.runOffset(r - 1) + s.runBytes(r - 1), "ascending offsets");
                }
                end = Math.max(end, (s.runOffset(r) + s.runBytes(r) + align - 1) & -align);
            }
            spans.computeIfAbsent(s.runDevice(first), k -> new java.util.ArrayList<>()).add(new long[] {start, end, to - first});
        }
        for (List<long[]> l : spans.values()) {
            l.sort((a, b) -> Long.compare(a[0], b[0]));
            for (int k = 1; k < l.size(); k++) {
                long[] prev = l.get(k - 1), cur = l.get(k);
                assertTrue(cur[0] >= prev[1], "two reads of one device share an aligned block");
                if (cur[0] == prev[1]) {
                    // They touch: kept apart only because one read would have outgrown the cap.
                    assertTrue(cur[1] - prev[0] > cap, "touching reads within the cap are one");
                }
            }
        }
        BucketScheduler plain = new BucketScheduler(devices, entry, maxRun, BucketScheduler.Mode.BALANCED);
        plain.plan(selected, n, t, null);
        assertEquals(plain.runs(), plain.reads(), "without a read alignment each run is a read");
        assertEquals(plain.runs(), s.runs(), "reads group runs, they do not change them");
    }

    @Test
    void runsInOneAlignedBlockAreOneRead() {
        // 1.5 KiB entries packed on one device: 0 at [0, 1536), 2 at [3072, 4608), 5 at [7680, 9216),
        // 9 at [13824, 15360). Runs {0} and {2} share the block [0, 4096); {5} shares [4096, 8192) with
        // {2}; {9} starts in [12288, 16384), which touches the read's end at 12288.
        ReplicaTable t = new ReplicaTable(12);
        for (int e = 0; e < 12; e++) {
            t.device[e] = new int[] {0};
            t.offset[e] = new long[] {e * 1536L};
        }
        int[] sel = {9, 0, 5, 2};
        BucketScheduler s = new BucketScheduler(1, 1536, 2, BucketScheduler.Mode.BALANCED);
        s.readAlignment(4096);
        s.plan(sel, sel.length, t, null);
        assertEquals(4, s.runs());
        // The cap (2 entries, 3 KiB) keeps the touching run apart; the overlapping ones join regardless.
        assertEquals(2, s.reads());
        assertEquals(List.of(0, 3, 4), List.of(s.readFirstRun(0), s.readFirstRun(1), s.readFirstRun(2)));
        BucketScheduler wide = new BucketScheduler(1, 1536, 64, BucketScheduler.Mode.BALANCED);
        wide.readAlignment(4096);
        wide.plan(sel, sel.length, t, null);
        assertEquals(1, wide.reads(), "within the cap the touching run joins too");
    }

    @Test
    void ablationsBehaveAsInFig14() {
        // Entry 0 on devices {0,1}, entry 1 on {0,1}, entry 2 only on 0; clusters share entry 0.
        ReplicaTable r = new ReplicaTable(3);
        r.device[0] = new int[] {0, 1};
        r.device[1] = new int[] {0, 1};
        r.device[2] = new int[] {0};
        r.offset[0] = new long[] {0, 4096};
        r.offset[1] = new long[] {4096, 8192};
        r.offset[2] = new long[] {8192};
        int[] sel = {0, 1, 0, 2};
        Map<BucketScheduler.Mode, List<Integer>> buckets = new HashMap<>();
        for (BucketScheduler.Mode m : BucketScheduler.Mode.values()) {
            BucketScheduler s = new BucketScheduler(2, ENTRY, 16, m);
            s.plan(sel, sel.length, r, null);
            buckets.put(m, List.of(s.bucketSize(0), s.bucketSize(1), s.plannedCount()));
        }
        // Swarm: entry 2 (one copy) first, to device 0; entry 0 to the emptier device 1; entry 1 finds
        // both buckets at 1 and takes the lower device, 0. Entry 0's second mention is merged away.
        assertEquals(List.of(2, 1, 3), buckets.get(BucketScheduler.Mode.BALANCED));
        assertEquals(List.of(3, 0, 3), buckets.get(BucketScheduler.Mode.NO_BALANCE));
        assertEquals(List.of(4, 0, 4), buckets.get(BucketScheduler.Mode.STATIC));
        assertEquals(List.of(2, 2, 4), buckets.get(BucketScheduler.Mode.NO_DEDUP));
    }
}
