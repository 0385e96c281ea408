package io.kvoffload.internal.storage;

import io.kvoffload.KvShape;
import io.kvoffload.internal.dram.DramSlot;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.spi.IoBatch;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * Writes one layer's cluster layout: clusters are taken in groups of a few thousand entries; a
 * group's entries are gathered once from the current layout, then each (cluster, device) share is
 * written as one extent, every entry with its CRC32C. Offline work: it may allocate.
 */
public final class ClusterLayoutWriter {
    /** Reads entries of the layer being re-laid-out: K into {@code keys}, V into {@code values}, token-major. */
    @FunctionalInterface
    public interface Source {
        void read(int[] positions, MemorySegment keys, MemorySegment values);
    }

    private static final int GROUP_ENTRIES = 4096;
    private static final int BATCH = 64;

    private ClusterLayoutWriter() {}

    /**
     * Writes the plan's extents and returns the layout; on failure frees what it allocated.
     *
     * @param owner the sequence id (an allocation never evicts its owner)
     */
    public static ClusterLayout write(Store store, String owner, KvShape shape, ClusterPlan plan, Source source) {
        int devices = store.devices().size();
        int half = shape.halfEntryBytes();
        int entry = shape.entryBytes();
        int clusters = plan.clusterCount();
        Checks.inRange("clusterCount", clusters, 1, Integer.MAX_VALUE - 8);
        int[] medoid = new int[clusters];
        int[] clusterSeg = new int[clusters + 1];
        List<int[]> segTokens = new ArrayList<>();
        IntList segDevice = new IntList();
        for (int c = 0; c < clusters; c++) {
            medoid[c] = plan.medoid(c);
            for (int d = 0; d < devices; d++) {
                int[] t = plan.tokensOn(c, d);
                if (t.length > 0) {
                    segTokens.add(t);
                    segDevice.add(d);
                }
            }
            clusterSeg[c + 1] = segTokens.size();
        }
        int segs = segTokens.size();
        int[] segFirst = new int[segs + 1];
        for (int s = 0; s < segs; s++) {
            segFirst[s + 1] = segFirst[s] + segTokens.get(s).length;
        }
        int[] entryToken = new int[segFirst[segs]];
        for (int s = 0; s < segs; s++) {
            System.arraycopy(segTokens.get(s), 0, entryToken, segFirst[s], segTokens.get(s).length);
        }
        int[] entryCrc = new int[entryToken.length];
        int[] dev = segDevice.toArray();
        long[] segOffset = new long[segs];
        int[] segLength = new int[segs];
        Arrays.fill(segOffset, -1);

        CRC32C crc = new CRC32C();
        IoBatch batch = store.backend().newBatch(BATCH);
        DramSlot[] slots = new DramSlot[BATCH];
        boolean[] written = new boolean[devices];
        boolean ok = false;
        try {
            int s = 0;
            while (s < segs) {
                // A group of whole segments, about GROUP_ENTRIES entries, gathered with one read.
                int end = s;
                int n = 0;
                while (end < segs && (n == 0 || n + segFirst[end + 1] - segFirst[end] <= GROUP_ENTRIES)) {
                    n += segFirst[end + 1] - segFirst[end];
                    end++;
                }
                int[] positions = Arrays.copyOfRange(entryToken, segFirst[s], segFirst[end]);
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment keys = arena.allocate((long) n * half, 64);
                    MemorySegment values = arena.allocate((long) n * half, 64);
                    source.read(positions, keys, values);
                    for (int g = s; g < end; g++) {
                        int d = dev[g];
                        int count = segFirst[g + 1] - segFirst[g];
                        long len = Checks.alignUp((long) count * entry, store.devices().get(d).alignment());
                        long packed = store.allocate(d, len, owner);
                        dev[g] = Store.packedDevice(packed); // a full device hands the share to another one
                        segOffset[g] = Store.packedOffset(packed);
                        segLength[g] = (int) len;
                        DramSlot slot = store.dram().acquire(len);
                        MemorySegment dst = slot.segment();
                        for (int k = 0; k < count; k++) {
                            int src = segFirst[g] - segFirst[s] + k;
                            MemorySegment.copy(keys, (long) src * half, dst, (long) k * entry, half);
                            MemorySegment.copy(values, (long) src * half, dst, (long) k * entry + half, half);
                            crc.reset();
                            crc.update(dst.asSlice((long) k * entry, entry).asByteBuffer());
                            entryCrc[segFirst[g] + k] = (int) crc.getValue();
                        }
                        if ((long) count * entry < len) {
                            dst.asSlice((long) count * entry, len - (long) count * entry).fill((byte) 0);
                        }
                        slots[batch.size()] = slot;
                        batch.addWrite(dev[g], segOffset[g], dst.asSlice(0, len), g);
                        written[dev[g]] = true;
                        if (batch.isFull()) {
                            flush(store, batch, slots);
                        }
                    }
                }
                flush(store, batch, slots);
                s = end;
            }
            for (int d = 0; d < devices; d++) {
                if (written[d]) {
                    store.backend().sync(d);
                }
            }
            ClusterLayout layout = new ClusterLayout(plan.clusteredTokens(), entry, plan.tau(),
                    plan.coActivationClusters(), medoid, clusterSeg, dev, segOffset, segLength, segFirst, entryToken,
                    entryCrc);
            ok = true;
            return layout;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            for (int i = 0; i < slots.length; i++) {
                if (slots[i] != null) {
                    store.dram().release(slots[i]);
                }
            }
            if (!ok) {
                for (int g = 0; g < segs; g++) {
                    if (segOffset[g] >= 0) {
                        store.free(dev[g], segOffset[g], segLength[g]);
                    }
                }
            }
        }
    }

    private static void flush(Store store, IoBatch batch, DramSlot[] slots) {
        try {
            if (batch.size() > 0) {
                store.backend().execute(batch);
                for (int i = 0; i < batch.size(); i++) {
                    store.stats().bytesWritten[batch.device(i)].add(batch.length(i));
                    store.stats().writes[batch.device(i)].increment();
                }
            }
        } finally {
            for (int i = 0; i < batch.size(); i++) {
                store.dram().release(slots[i]);
                slots[i] = null;
            }
            batch.clear();
        }
    }

    /** A growable int list, to avoid boxing. */
    static final class IntList {
        private int[] a = new int[16];
        private int n;

        void add(int v) {
            if (n == a.length) {
                a = Arrays.copyOf(a, n * 2);
            }
            a[n++] = v;
        }

        int[] toArray() {
            return Arrays.copyOf(a, n);
        }
    }
}
