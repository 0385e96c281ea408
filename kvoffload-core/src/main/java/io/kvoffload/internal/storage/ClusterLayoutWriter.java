package io.kvoffload.internal.storage;

import io.kvoffload.KvShape;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.internal.util.IntList;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.IntUnaryOperator;
import java.util.zip.CRC32C;

/**
 * Writes one layer's cluster layout: clusters are taken in groups of a few thousand entries; a
 * group's entries are gathered once from the current layout, then each (cluster, device) share is
 * written as one extent, every entry with its {@link EntryChecksum}, through an
 * {@link ExtentBatchWriter} (all or nothing). Offline work: it may allocate.
 *
 * <p>{@link #append} grows a written layout online (Swarm §6.2, Eq. 9): tokens leaving the local
 * window join clusters, each member going to its cluster's next device.
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
     * @param checksum how the owner's records are checksummed ({@link Manifest#entryChecksum()})
     * @param layer the layer being laid out (part of every entry's checksum)
     */
    public static ClusterLayout write(Store store, String owner, EntryChecksum checksum, int layer, KvShape shape,
            ClusterPlan plan, Source source) {
        Checks.notNull("checksum", checksum);
        Checks.index("layer", layer, shape.layers());
        int devices = store.devices().size();
        int half = shape.halfEntryBytes();
        int entry = shape.entryBytes();
        int clusters = plan.clusterCount();
        Checks.inRange("clusterCount", clusters, 1, Integer.MAX_VALUE - 8);
        // Sequences from manifests before identity checksums keep their format: token-striped.
        int shards = checksum.salted() ? HeadShards.shards(store.config().placement(), shape, devices) : 1;
        if (shards > 1) {
            return writeSharded(store, owner, checksum, layer, shape, plan, source, shards);
        }
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

        CRC32C crc = new CRC32C();
        try (ExtentBatchWriter w = new ExtentBatchWriter(store, owner, BATCH)) {
            writeInBatches(w, source, half, segTokens.toArray(int[][]::new), (g, row, keys, values) -> {
                int count = segFirst[g + 1] - segFirst[g];
                long len = allocateSegment(store, w, g, (long) count * entry, dev, segOffset, segLength);
                MemorySegment dst = w.stage(len);
                int base = segFirst[g] - row; // entry e of the segment was read into row e - base
                new Rows(keys, values, shape, checksum, crc, layer).stage(dst, len, segFirst[g], count, e -> e - base,
                        entryToken, entryCrc);
                w.write(dev[g], segOffset[g], dst.asSlice(0, len), g);
            });
            w.finish();
            int[] sizes = new int[clusters];
            for (int c = 0; c < clusters; c++) {
                sizes[c] = segFirst[clusterSeg[c + 1]] - segFirst[clusterSeg[c]];
            }
            ClusterLayout layout = new ClusterLayout(plan.clusteredTokens(), entry, plan.tau(),
                    plan.coActivationClusters(), medoid, clusterSeg, dev, segOffset, segLength, segFirst, entryToken,
                    entryCrc, ClusterLayout.eq7NextDevices(sizes, devices));
            w.keep();
            return layout;
        }
    }

    /**
     * {@link #write} of a head-sharded layout ({@link HeadShards}): per cluster, its tokens (the
     * plan's members, device shares concatenated) once per head group, group {@code g} as one
     * extent on {@link HeadShards#device}; every shard with its own {@link EntryChecksum.Kind#SHARD}
     * checksum. Clusters are taken in groups of about {@code GROUP_ENTRIES} tokens, each token read once.
     */
    private static ClusterLayout writeSharded(Store store, String owner, EntryChecksum checksum, int layer,
            KvShape shape, ClusterPlan plan, Source source, int shards) {
        int devices = store.devices().size();
        int half = shape.halfEntryBytes();
        int entry = shape.entryBytes();
        int unit = entry / shards;
        int clusters = plan.clusterCount();
        int[] medoid = new int[clusters];
        int[][] members = new int[clusters][];
        for (int c = 0; c < clusters; c++) {
            medoid[c] = plan.medoid(c);
            int n = 0;
            for (int d = 0; d < devices; d++) {
                n += plan.tokensOn(c, d).length;
            }
            members[c] = new int[n];
            int k = 0;
            for (int d = 0; d < devices; d++) {
                for (int t : plan.tokensOn(c, d)) {
                    members[c][k++] = t;
                }
            }
        }
        int[] rotation = HeadShards.rotations(layer, members, plan.clusteredTokens(), devices, plan::rotationStep);
        int segs = Math.multiplyExact(clusters, shards);
        int[] clusterSeg = new int[clusters + 1];
        int[] segFirst = new int[segs + 1];
        int[] segShard = new int[segs];
        int[] dev = new int[segs];
        for (int c = 0; c < clusters; c++) {
            clusterSeg[c + 1] = clusterSeg[c] + shards;
            for (int g = 0; g < shards; g++) {
                int sg = c * shards + g;
                segShard[sg] = g;
                dev[sg] = HeadShards.device(rotation[c], g, shards, devices);
                segFirst[sg + 1] = Math.addExact(segFirst[sg], members[c].length);
            }
        }
        int[] entryToken = new int[segFirst[segs]];
        for (int sg = 0; sg < segs; sg++) {
            System.arraycopy(members[sg / shards], 0, entryToken, segFirst[sg], members[sg / shards].length);
        }
        int[] entryCrc = new int[entryToken.length];
        long[] segOffset = new long[segs];
        int[] segLength = new int[segs];
        CRC32C crc = new CRC32C();
        try (ExtentBatchWriter w = new ExtentBatchWriter(store, owner, BATCH); Arena scratch = Arena.ofConfined()) {
            MemorySegment whole = scratch.allocate(entry, 64);
            writeInBatches(w, source, half, members, (k, row, keys, values) -> {
                int count = members[k].length;
                for (int g = 0; g < shards; g++) {
                    int sg = k * shards + g;
                    long len = allocateSegment(store, w, sg, (long) count * unit, dev, segOffset, segLength);
                    MemorySegment dst = w.stage(len);
                    for (int i = 0; i < count; i++) {
                        long r = row + i;
                        MemorySegment.copy(keys, r * half, whole, 0, half);
                        MemorySegment.copy(values, r * half, whole, half, half);
                        HeadShards.extract(whole, 0, entry, g, shards, dst, (long) i * unit);
                        int e = segFirst[sg] + i;
                        entryCrc[e] = checksum.compute(crc, EntryChecksum.Kind.SHARD, layer,
                                entryToken[e] * shards + g, dst.asSlice((long) i * unit, unit).asByteBuffer());
                    }
                    if ((long) count * unit < len) {
                        dst.asSlice((long) count * unit, len - (long) count * unit).fill((byte) 0);
                    }
                    w.write(dev[sg], segOffset[sg], dst.asSlice(0, len), sg);
                }
            });
            w.finish();
            int[] next = new int[clusters];
            for (int k = 0; k < clusters; k++) {
                next[k] = k % devices; // unused: head-sharded layouts do not grow online
            }
            ClusterLayout layout = new ClusterLayout(plan.clusteredTokens(), unit, plan.tau(),
                    plan.coActivationClusters(), medoid, clusterSeg, dev, segOffset, segLength, segFirst, entryToken,
                    entryCrc, next, shards, segShard);
            w.keep();
            return layout;
        }
    }

    /**
     * Online cluster maintenance's write (Swarm §6.2, Eq. 9): appends tokens that left the local
     * window to the clusters they joined, and returns a <em>new</em> layout; {@code old} is not
     * changed. Each appended member goes to its cluster's {@linkplain ClusterLayout#nextDevice next
     * device} (round robin, continuing Eq. 7); a new cluster starts on device {@code p mod N}, where
     * {@code p} counts the stored entries before it (Eq. 7's pointer). The members one call appends to
     * one cluster on one device form one new aligned extent, every entry with its CRC32C, written
     * through the store's backend like {@link #write}; then the devices written are synced.
     *
     * <p>The new layout holds all of {@code old}'s segments, unchanged and still in use, plus the new
     * ones ({@link ClusterLayout#segmentsAddedSince(ClusterLayout) segmentsAddedSince(old)}). The
     * caller must not free {@code old}'s extents when it swaps layouts; if it abandons the new layout
     * before a commit, it frees only the added segments. On failure this method frees what it
     * allocated and {@code old} stays valid.
     *
     * <p>How the decoder calls it, every {@code blockTokens} tokens or so (off the per-step path; it
     * allocates): {@code OnlineClusterMaintenance} collected the assignments as tokens left the
     * window, in position order:
     * <pre>{@code
     * OnlineClusterMaintenance.Assignments a = maintenance.drainAssignments();
     * ClusterLayout next = ClusterLayoutWriter.append(store, sequenceId, checksum, layer, shape, old,
     *         a.tokens(), a.clusterStart(), a.clusterIds(), (pos, k, v) -> read(layer, pos, k, v));
     * // swap old for next; commit persists next (its manifest names old's segments and the new ones)
     * }</pre>
     *
     * @param owner the sequence id (an allocation never evicts its owner)
     * @param checksum how the owner's records are checksummed ({@link Manifest#entryChecksum()})
     * @param layer the layer the layout belongs to (part of every entry's checksum)
     * @param old the layer's current layout; its entry size must be {@code shape.entryBytes()}
     * @param tokens the tokens to append: exactly {@code old.clusteredTokens() + 0, +1, …}, at least one,
     *     so the clustered tokens stay a prefix of the layer
     * @param clusterStart {@code tokens.length + 1} offsets into {@code clusterIds}, from 0 to
     *     {@code clusterIds.length}: token {@code i} joins clusters
     *     {@code clusterIds[clusterStart[i] .. clusterStart[i+1])}, at least one, distinct
     * @param clusterIds cluster ids: an existing cluster ({@code < old.clusterCount()}) or a new one.
     *     New ids are dense and introduced in order: the first mention of a new cluster must be
     *     {@code old.clusterCount()}, the next new one {@code +1}, and so on; the token that first
     *     names a new cluster is its medoid
     * @param source reads the appended tokens' K and V (token-major), as {@link #write}'s does
     * @return the extended layout
     */
    public static ClusterLayout append(Store store, String owner, EntryChecksum checksum, int layer, KvShape shape,
            ClusterLayout old, int[] tokens, int[] clusterStart, int[] clusterIds, Source source) {
        if (old != null && old.shards > 1) {
            throw new IllegalStateException("layer " + layer + "'s layout is head-sharded (" + old.shards + " head"
                    + " groups); online appends are for token-striped layouts");
        }
        LayoutArgs.checkAppend(store, owner, checksum, layer, shape, old, old == null ? 0 : old.entryBytes);
        Checks.notNull("tokens", tokens);
        Checks.notNull("clusterStart", clusterStart);
        Checks.notNull("clusterIds", clusterIds);
        Checks.notNull("source", source);
        int devices = store.devices().size();
        int entry = shape.entryBytes();
        int half = shape.halfEntryBytes();
        int n = Checks.inRange("tokens.length", tokens.length, 1, Integer.MAX_VALUE - 8 - old.clusteredTokens);
        for (int i = 0; i < n; i++) {
            int expected = old.clusteredTokens + i;
            if (tokens[i] != expected) {
                throw new IllegalArgumentException("tokens[" + i + "] = " + tokens[i] + " is out of range; allowed: "
                        + expected + ".." + expected + " (appended tokens continue the clustered prefix 0.."
                        + (old.clusteredTokens - 1) + " in order)");
            }
        }
        if (clusterStart.length != n + 1) {
            throw new IllegalArgumentException("clusterStart.length = " + clusterStart.length + " is out of range; allowed: "
                    + (n + 1) + ".." + (n + 1) + " (tokens.length + 1)");
        }
        if (clusterStart[0] != 0 || clusterStart[n] != clusterIds.length) {
            throw new IllegalArgumentException("clusterStart runs from " + clusterStart[0] + " to " + clusterStart[n]
                    + "; allowed: from 0 to clusterIds.length = " + clusterIds.length);
        }
        int oldClusters = old.clusterCount();
        int clusters = oldClusters;
        IntList newMedoids = new IntList();
        int[] stamp = new int[oldClusters + clusterIds.length]; // duplicate check: the token (+1) that last named a cluster
        for (int i = 0; i < n; i++) {
            int from = clusterStart[i], to = clusterStart[i + 1];
            if (to <= from || from < 0 || to > clusterIds.length) {
                throw new IllegalArgumentException("clusterStart[" + i + "].." + "clusterStart[" + (i + 1) + "] = "
                        + from + ".." + to + " is out of range; allowed: at least one cluster per token, within 0.."
                        + clusterIds.length);
            }
            for (int k = from; k < to; k++) {
                int c = clusterIds[k];
                if (c < 0 || c > clusters) {
                    throw new IllegalArgumentException("clusterIds[" + k + "] = " + c + " is out of range; allowed: 0.."
                            + clusters + " (existing clusters 0.." + (oldClusters - 1) + ", new ones in order from "
                            + oldClusters + ")");
                }
                if (c == clusters) {
                    newMedoids.add(tokens[i]);
                    clusters++;
                }
                if (stamp[c] == i + 1) {
                    throw new IllegalArgumentException("clusterIds[" + k + "] = " + c + " names a cluster token "
                            + tokens[i] + " already joins; allowed: distinct clusters per token");
                }
                stamp[c] = i + 1;
            }
        }

        // Round robin per cluster: count the members each (cluster, device) share gets, then fill.
        int[] next = Arrays.copyOf(old.nextDevice, clusters);
        long p = old.storedEntries();
        int[] deviceOf = new int[clusterIds.length];
        int[] perShare = new int[clusters * devices];
        boolean[] created = new boolean[clusters];
        for (int i = 0; i < n; i++) {
            for (int k = clusterStart[i]; k < clusterStart[i + 1]; k++) {
                int c = clusterIds[k];
                if (c >= oldClusters && !created[c]) {
                    created[c] = true;
                    next[c] = (int) (p % devices); // Eq. 7: a new cluster starts where the pointer is
                }
                int d = next[c] % devices;
                deviceOf[k] = d;
                perShare[c * devices + d]++;
                next[c] = (d + 1) % devices;
                p++;
            }
        }
        int[] shareSeg = new int[clusters * devices];
        int segs = 0;
        for (int x = 0; x < shareSeg.length; x++) {
            shareSeg[x] = perShare[x] > 0 ? segs++ : -1;
        }
        int[] segCluster = new int[segs];
        int[] segDevice = new int[segs];
        int[] segFirst = new int[segs + 1];
        for (int x = 0; x < shareSeg.length; x++) {
            if (shareSeg[x] >= 0) {
                int g = shareSeg[x];
                segCluster[g] = x / devices;
                segDevice[g] = x % devices;
                segFirst[g + 1] = segFirst[g] + perShare[x];
            }
        }
        int total = segFirst[segs];
        int[] entryToken = new int[total];
        int[] entrySource = new int[total]; // index into tokens: where the entry's bytes come from
        int[] fill = Arrays.copyOf(segFirst, segs);
        for (int i = 0; i < n; i++) {
            for (int k = clusterStart[i]; k < clusterStart[i + 1]; k++) {
                int g = shareSeg[clusterIds[k] * devices + deviceOf[k]];
                entryToken[fill[g]] = tokens[i];
                entrySource[fill[g]++] = i;
            }
        }
        int[] entryCrc = new int[total];
        long[] segOffset = new long[segs];
        int[] segLength = new int[segs];

        CRC32C crc = new CRC32C();
        try (ExtentBatchWriter w = new ExtentBatchWriter(store, owner, BATCH); Arena arena = Arena.ofConfined()) {
            // Each appended token is read once, however many clusters it joined.
            MemorySegment keys = arena.allocate((long) n * half, 64);
            MemorySegment values = arena.allocate((long) n * half, 64);
            source.read(tokens.clone(), keys, values);
            Rows rows = new Rows(keys, values, shape, checksum, crc, layer);
            for (int g = 0; g < segs; g++) {
                int count = segFirst[g + 1] - segFirst[g];
                long len = allocateSegment(store, w, g, (long) count * entry, segDevice, segOffset, segLength);
                MemorySegment dst = w.stage(len);
                rows.stage(dst, len, segFirst[g], count, e -> entrySource[e], entryToken, entryCrc);
                w.write(segDevice[g], segOffset[g], dst.asSlice(0, len), g);
            }
            w.finish();
            for (int c = 0; c < clusters; c++) {
                next[c] %= devices;
            }
            ClusterLayout layout = old.extend(old.clusteredTokens + n, newMedoids.toArray(), segCluster, segDevice,
                    segOffset, segLength, segFirst, entryToken, entryCrc, next);
            w.keep();
            return layout;
        }
    }

    /** Stages and writes one item of a batch (a segment, or a cluster's head-group shards) once its K and V are read. */
    @FunctionalInterface
    private interface ItemWrite {
        /** Item {@code item}'s tokens are rows {@code [row, row + its tokens)} of {@code keys} and {@code values}. */
        void write(int item, int row, MemorySegment keys, MemorySegment values);
    }

    /**
     * Writes items {@code [0, tokens.length)} in batches of whole items of about {@code GROUP_ENTRIES}
     * tokens: a batch's tokens ({@code tokens[i]} of each item, in order) are gathered with one
     * {@code source} read, every item of it goes to {@code write}, then the batch's writes are flushed.
     */
    private static void writeInBatches(ExtentBatchWriter w, Source source, int half, int[][] tokens, ItemWrite write) {
        int from = 0;
        while (from < tokens.length) {
            int end = batchEnd(from, tokens.length, i -> tokens[i].length);
            int n = 0;
            for (int i = from; i < end; i++) {
                n += tokens[i].length;
            }
            int[] positions = new int[n];
            for (int i = from, at = 0; i < end; at += tokens[i].length, i++) {
                System.arraycopy(tokens[i], 0, positions, at, tokens[i].length);
            }
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment keys = arena.allocate((long) n * half, 64);
                MemorySegment values = arena.allocate((long) n * half, 64);
                source.read(positions, keys, values);
                for (int i = from, row = 0; i < end; row += tokens[i].length, i++) {
                    write.write(i, row, keys, values);
                }
            }
            w.flush();
            from = end;
        }
    }

    /**
     * The end of the batch of whole items that starts at {@code from}: items are added while the batch
     * stays within about {@code GROUP_ENTRIES} entries, and it takes at least one, however large.
     */
    private static int batchEnd(int from, int items, IntUnaryOperator entriesOf) {
        int end = from;
        int n = 0;
        while (end < items && (n == 0 || n + entriesOf.applyAsInt(end) <= GROUP_ENTRIES)) {
            n += entriesOf.applyAsInt(end);
            end++;
        }
        return end;
    }

    /**
     * Allocates segment {@code s}'s extent: {@code dataBytes} aligned up for the device
     * {@code segDevice[s]} names. Records where it landed in the three arrays (a full device hands the
     * segment to another one) and returns its aligned length.
     */
    private static long allocateSegment(Store store, ExtentBatchWriter w, int s, long dataBytes, int[] segDevice,
            long[] segOffset, int[] segLength) {
        long len = Checks.alignUp(dataBytes, store.devices().get(segDevice[s]).alignment());
        long packed = w.allocate(segDevice[s], len);
        segDevice[s] = Store.packedDevice(packed);
        segOffset[s] = Store.packedOffset(packed);
        segLength[s] = (int) len;
        return len;
    }

    /**
     * K and V rows read from the source (token-major), laid into extents entry by entry
     * ({@code [K | V]}), each entry with its checksum.
     */
    private record Rows(MemorySegment keys, MemorySegment values, KvShape shape, EntryChecksum checksum, CRC32C crc,
            int layer) {
        /**
         * Fills {@code dst} with layout entries {@code [first, first + count)}, entry {@code e} from
         * row {@code rowOf(e)}; records each entry's checksum in {@code entryCrc}; zeroes the rest
         * up to {@code len}.
         */
        void stage(MemorySegment dst, long len, int first, int count, IntUnaryOperator rowOf, int[] entryToken,
                int[] entryCrc) {
            int half = shape.halfEntryBytes();
            int entry = shape.entryBytes();
            for (int k = 0; k < count; k++) {
                int src = rowOf.applyAsInt(first + k);
                MemorySegment.copy(keys, (long) src * half, dst, (long) k * entry, half);
                MemorySegment.copy(values, (long) src * half, dst, (long) k * entry + half, half);
                entryCrc[first + k] = checksum.compute(crc, EntryChecksum.Kind.ENTRY, layer, entryToken[first + k],
                        dst.asSlice((long) k * entry, entry).asByteBuffer());
            }
            if ((long) count * entry < len) {
                dst.asSlice((long) count * entry, len - (long) count * entry).fill((byte) 0);
            }
        }
    }
}
