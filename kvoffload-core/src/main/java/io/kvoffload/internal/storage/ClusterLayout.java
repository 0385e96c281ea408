package io.kvoffload.internal.storage;

import io.kvoffload.internal.sched.BucketScheduler;
import java.util.Arrays;

/**
 * One layer's entries laid out by cluster (Swarm §5.2, Eq. 7): every cluster's share of every
 * device is one contiguous extent (a <em>segment</em>), so reading a cluster is one read per device;
 * an entry in several clusters is stored once per cluster (replicas are physical copies). Each
 * stored entry carries its own CRC32C, because the scheduler reads single entries and runs of
 * entries, not whole extents.
 *
 * <p>Tokens {@code [0, clusteredTokens)} live here; later tokens of the layer stay in the block
 * layout. The replica table (where each token's copies are) is derived, not persisted, and doubles
 * as the scheduler's {@link BucketScheduler.Replicas}.
 *
 * <h2>Online growth (Swarm §6.2, Eq. 9)</h2>
 * Tokens that leave the decoder's local window are appended to clusters by
 * {@link ClusterLayoutWriter#append}: {@link #extend} makes a <em>new</em> layout that holds every
 * segment of this one unchanged plus new segments, one per (cluster, device) written, and
 * {@code clusteredTokens} grows by the tokens appended, so it stays a prefix of the layer. A
 * cluster may then have several segments on one device (one per append); its segments stay
 * contiguous, {@code [clusterSeg[c], clusterSeg[c+1])}, the cluster's original segments first and
 * each append's after them. Each cluster remembers the device its next appended member goes to
 * ({@link #nextDevice}): Eq. 7's round robin, continued.
 */
public final class ClusterLayout extends SegmentedLayout implements BucketScheduler.Replicas {
    final int clusteredTokens;
    final int entryBytes;
    /** The radius the clustering used (persisted so a reopened sequence can restore its clustering). */
    final double tau;
    /** Clusters 0..coActivationClusters-1 came from Algorithm 1; the rest group isolated entries. */
    final int coActivationClusters;
    final int[] medoid;
    /** Segments of cluster c are {@code [clusterSeg[c], clusterSeg[c+1])}. */
    final int[] clusterSeg;
    /** Stored entries of segment s are {@code [segFirst[s], segFirst[s+1])} of the flat arrays. */
    final int[] segFirst;
    final int[] entryToken;
    final int[] entryCrc;
    /** Per cluster, the device its next appended member goes to (Eq. 7's round robin, continued). */
    final int[] nextDevice;
    /**
     * Head groups each token is stored in ({@link HeadShards}): 1 for a token-striped layout, where a
     * stored entry is the token's whole entry; {@code S > 1} for a head-sharded one, where a stored
     * entry is one head group's shard of a token ({@code entryBytes} is then the shard's size).
     */
    final int shards;
    /** Per segment, the head group its entries hold (all 0 when {@code shards == 1}). */
    final int[] segShard;

    // Derived: copies of key k (token t's shard g is key t·S + g) are entries
    // replicaEntry[replicaStart[k] .. replicaStart[k+1]).
    private final int[] replicaStart;
    private final int[] replicaEntry;
    private final int[] entrySeg;

    ClusterLayout(int clusteredTokens, int entryBytes, double tau, int coActivationClusters, int[] medoid,
            int[] clusterSeg, int[] segDevice, long[] segOffset, int[] segLength, int[] segFirst, int[] entryToken,
            int[] entryCrc, int[] nextDevice) {
        this(clusteredTokens, entryBytes, tau, coActivationClusters, medoid, clusterSeg, segDevice, segOffset, segLength,
                segFirst, entryToken, entryCrc, nextDevice, 1, new int[segDevice.length]);
    }

    /**
     * A layout of {@code shards} head groups per token: {@code entryBytes} is one shard's size, each
     * segment holds the shard {@code segShard} names, and every cluster's segments are shard-major
     * (shard 0's first), each shard holding the cluster's tokens in the same order.
     */
    ClusterLayout(int clusteredTokens, int entryBytes, double tau, int coActivationClusters, int[] medoid,
            int[] clusterSeg, int[] segDevice, long[] segOffset, int[] segLength, int[] segFirst, int[] entryToken,
            int[] entryCrc, int[] nextDevice, int shards, int[] segShard) {
        super(segDevice, segOffset, segLength);
        this.shards = shards;
        this.segShard = segShard;
        this.clusteredTokens = clusteredTokens;
        this.entryBytes = entryBytes;
        this.tau = tau;
        this.coActivationClusters = coActivationClusters;
        this.medoid = medoid;
        this.clusterSeg = clusterSeg;
        this.segFirst = segFirst;
        this.entryToken = entryToken;
        this.entryCrc = entryCrc;
        this.nextDevice = nextDevice;
        validateShape();
        entrySeg = new int[entryToken.length];
        for (int s = 0; s < segDevice.length; s++) {
            Arrays.fill(entrySeg, segFirst[s], segFirst[s + 1], s);
        }
        validateShards();
        int keys = clusteredTokens * shards;
        replicaStart = new int[keys + 1];
        for (int e = 0; e < entryToken.length; e++) {
            replicaStart[entryKey(e) + 1]++;
        }
        for (int k = 0; k < keys; k++) {
            if (replicaStart[k + 1] == 0) {
                throw new IllegalArgumentException("cluster layout leaves token " + k / shards + " of " + clusteredTokens
                        + (shards > 1 ? " (head group " + k % shards + ")" : "") + " in no cluster");
            }
            replicaStart[k + 1] += replicaStart[k];
        }
        replicaEntry = new int[entryToken.length];
        int[] fill = Arrays.copyOf(replicaStart, keys);
        for (int e = 0; e < entryToken.length; e++) {
            replicaEntry[fill[entryKey(e)]++] = e;
        }
    }

    /** Head groups: every cluster shard-major, each shard holding shard 0's tokens in its order. */
    private void validateShards() {
        if (shards < 1 || shards > 0xFFFF || segShard.length != segDevice.length
                || (long) clusteredTokens * shards > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("cluster layout of " + shards + " head groups over " + clusteredTokens
                    + " tokens has " + segShard.length + " segment shards for " + segDevice.length + " segments");
        }
        for (int c = 0; c < medoid.length; c++) {
            int from = segFirst[clusterSeg[c]];
            int n = segFirst[clusterSeg[c + 1]] - from;
            if (n % shards != 0) {
                throw new IllegalArgumentException("cluster " + c + " stores " + n + " entries, not a multiple of its "
                        + shards + " head groups");
            }
            int size = n / shards;
            for (int g = clusterSeg[c]; g < clusterSeg[c + 1]; g++) {
                for (int e = segFirst[g]; e < segFirst[g + 1]; e++) {
                    int shard = (e - from) / size;
                    if (segShard[g] != shard || entryToken[e] != entryToken[from + (e - from) % size]) {
                        throw new IllegalArgumentException("cluster " + c + " entry " + (e - from) + " is not head group "
                                + shard + " of its token " + entryToken[from + (e - from) % size]
                                + " (shards must be shard-major and hold the same tokens)");
                    }
                }
            }
        }
    }

    /** The key of stored entry {@code e}: its token × head groups + its head group. */
    public int entryKey(int e) {
        return entryToken[e] * shards + segShard[entrySeg[e]];
    }

    /** Head groups per token (1: token-striped, each stored entry a whole entry). */
    @Override
    public int shards() {
        return shards;
    }

    /** Bytes of one stored entry: the whole entry, or one head group's shard of it. */
    public int storedEntryBytes() {
        return entryBytes;
    }

    /** The head group stored entry {@code e} holds. */
    public int entryShard(int e) {
        return segShard[entrySeg[e]];
    }

    /** How this layout's stored entries are checksummed: whole entries, or head-group shards. */
    public EntryChecksum.Kind checksumKind() {
        return shards == 1 ? EntryChecksum.Kind.ENTRY : EntryChecksum.Kind.SHARD;
    }

    private void validateShape() {
        int clusters = medoid.length;
        if (!(tau >= 0 && tau < 1) || coActivationClusters < 0 || coActivationClusters > clusters) {
            throw new IllegalArgumentException("cluster layout radius " + tau + " or co-activation cluster count "
                    + coActivationClusters + " out of range");
        }
        int segs = segDevice.length;
        if (clusterSeg.length != clusters + 1 || clusterSeg[0] != 0 || clusterSeg[clusters] != segs
                || segOffset.length != segs || segLength.length != segs || segFirst.length != segs + 1
                || segFirst[0] != 0 || segFirst[segs] != entryToken.length || entryCrc.length != entryToken.length
                || nextDevice.length != clusters) {
            throw new IllegalArgumentException("cluster layout arrays are inconsistent");
        }
        for (int c = 0; c < clusters; c++) {
            if (clusterSeg[c] > clusterSeg[c + 1]) {
                throw new IllegalArgumentException("cluster " + c + " has a negative segment count");
            }
            if (nextDevice[c] < 0 || nextDevice[c] > 0xFFFF) {
                throw new IllegalArgumentException("cluster " + c + " next device " + nextDevice[c] + " outside 0..65535");
            }
            if (medoid[c] < 0 || medoid[c] >= clusteredTokens) {
                throw new IllegalArgumentException("cluster " + c + " medoid " + medoid[c] + " outside 0.."
                        + (clusteredTokens - 1));
            }
        }
        for (int s = 0; s < segs; s++) {
            int n = segFirst[s + 1] - segFirst[s];
            if (n <= 0 || (long) n * entryBytes > segLength[s]) {
                throw new IllegalArgumentException("segment " + s + " holds " + n + " entries of " + entryBytes
                        + " bytes in an extent of " + segLength[s]);
            }
        }
        for (int t : entryToken) {
            if (t < 0 || t >= clusteredTokens) {
                throw new IllegalArgumentException("cluster layout names token " + t + " outside 0.."
                        + (clusteredTokens - 1));
            }
        }
    }

    public int clusteredTokens() {
        return clusteredTokens;
    }

    public double tau() {
        return tau;
    }

    public int coActivationClusters() {
        return coActivationClusters;
    }

    /**
     * Members of all clusters, cluster after cluster, each cluster's medoid first and the rest in
     * storage order (the order a restored clustering expects); {@link #memberOffsets} says where
     * each cluster starts.
     */
    public int[] allMembers() {
        int[] out = new int[entryToken.length / shards];
        for (int c = 0; c < medoid.length; c++) {
            int from = segFirst[clusterSeg[c]];
            int to = from + size(c);
            int k = memberStart(c);
            int end = k + size(c);
            out[k++] = medoid[c];
            for (int e = from; e < to; e++) {
                if (entryToken[e] != medoid[c]) {
                    out[k++] = entryToken[e];
                }
            }
            if (k != end) {
                throw new IllegalStateException("cluster " + c + " does not hold its medoid " + medoid[c] + " once");
            }
        }
        return out;
    }

    public int[] memberOffsets() {
        int[] o = new int[medoid.length + 1];
        for (int c = 0; c < medoid.length; c++) {
            o[c + 1] = o[c] + size(c);
        }
        return o;
    }

    /** Where cluster {@code c}'s members start in {@link #allMembers()}. */
    private int memberStart(int c) {
        return segFirst[clusterSeg[c]] / shards;
    }

    public int[] medoids() {
        return medoid.clone();
    }

    public int clusterCount() {
        return medoid.length;
    }

    public int medoid(int cluster) {
        return medoid[cluster];
    }

    /** Number of stored entries (replicas and head groups included). */
    public int storedEntries() {
        return entryToken.length;
    }

    /** Tokens of the cluster (a token's head groups count once). */
    public int size(int cluster) {
        return (segFirst[clusterSeg[cluster + 1]] - segFirst[clusterSeg[cluster]]) / shards;
    }

    /** The cluster's tokens, segment after segment (the order they are stored in). */
    public int[] members(int cluster) {
        int from = segFirst[clusterSeg[cluster]];
        return Arrays.copyOfRange(entryToken, from, from + size(cluster));
    }

    /**
     * Stored entries of the cluster start at {@code firstEntry(c)}; the first {@link #size(int)
     * size(c)} of them hold its tokens once each (head group 0 when sharded).
     */
    public int firstEntry(int cluster) {
        return segFirst[clusterSeg[cluster]];
    }

    public int entryToken(int entry) {
        return entryToken[entry];
    }

    public int entryCrc(int entry) {
        return entryCrc[entry];
    }

    public int entryDevice(int entry) {
        return segDevice[entrySeg[entry]];
    }

    public long entryOffset(int entry) {
        int s = entrySeg[entry];
        return segOffset[s] + (long) (entry - segFirst[s]) * entryBytes;
    }

    public int clusterSegmentStart(int cluster) {
        return clusterSeg[cluster];
    }

    public int clusterSegmentEnd(int cluster) {
        return clusterSeg[cluster + 1];
    }

    /** Copies of a token, as stored-entry ids (of its head group 0 when sharded). */
    public int replicaCount(int token) {
        int k = token * shards;
        return replicaStart[k + 1] - replicaStart[k];
    }

    public int replica(int token, int r) {
        return replicaEntry[replicaStart[token * shards] + r];
    }

    // ---- BucketScheduler.Replicas over keys (token · shards + head group; the token when not sharded) ----

    @Override
    public int count(int token) {
        return replicaStart[token + 1] - replicaStart[token];
    }

    @Override
    public int device(int token, int r) {
        return entryDevice(replicaEntry[replicaStart[token] + r]);
    }

    @Override
    public long offset(int token, int r) {
        return entryOffset(replicaEntry[replicaStart[token] + r]);
    }

    /**
     * {@link #entryAt(int, int, long)}, trying entry {@code hint} first: a scheduled run reads
     * consecutive entries of one segment, so the entry after the run's previous one is usually
     * the answer, found without the replica table's scattered lookups.
     */
    public int entryAt(int key, int device, long offset, int hint) {
        if (hint >= 0 && hint < entryToken.length && entryKey(hint) == key && entryDevice(hint) == device
                && entryOffset(hint) == offset) {
            return hint;
        }
        return entryAt(key, device, offset);
    }

    /** The stored entry a scheduled read of key {@code key} at ({@code device}, {@code offset}) hits. */
    public int entryAt(int key, int device, long offset) {
        for (int i = replicaStart[key]; i < replicaStart[key + 1]; i++) {
            int e = replicaEntry[i];
            if (entryDevice(e) == device && entryOffset(e) == offset) {
                return e;
            }
        }
        throw new IllegalStateException("no copy of key " + key + " at device " + device + " offset " + offset);
    }

    /** The same layout with device numbers rewritten through {@code map}. */
    ClusterLayout remapDevices(int[] map) {
        int[] dev = remapped(segDevice, map);
        return new ClusterLayout(clusteredTokens, entryBytes, tau, coActivationClusters, medoid, clusterSeg, dev,
                segOffset, segLength, segFirst, entryToken, entryCrc, remapped(nextDevice, map), shards, segShard);
    }

    /**
     * This layout without its segments on the devices {@code map} sends to -1 (missing), the rest
     * renumbered through {@code map}: what a sequence is served from while a device is missing, when
     * every entry there has another copy. Returns null when some token would lose its last copy.
     * A cluster whose next device is missing appends to a present one instead.
     */
    ClusterLayout withoutMissingDevices(int[] map, int presentDevices) {
        int clusters = medoid.length;
        if (shards > 1) {
            // Each head group of a unit lives on one device: losing one loses those heads of its tokens.
            for (int d : segDevice) {
                if (map[d] < 0) {
                    return null;
                }
            }
            return remapDevices(map);
        }
        int[] newClusterSeg = new int[clusters + 1];
        int[] dev = new int[segDevice.length];
        long[] off = new long[segDevice.length];
        int[] len = new int[segDevice.length];
        int[] first = new int[segDevice.length + 1];
        int[] tok = new int[entryToken.length];
        int[] crc = new int[entryCrc.length];
        int segs = 0;
        int entries = 0;
        boolean[] kept = new boolean[clusteredTokens];
        for (int c = 0; c < clusters; c++) {
            for (int sg = clusterSeg[c]; sg < clusterSeg[c + 1]; sg++) {
                if (map[segDevice[sg]] < 0) {
                    continue;
                }
                dev[segs] = map[segDevice[sg]];
                off[segs] = segOffset[sg];
                len[segs] = segLength[sg];
                first[segs] = entries;
                for (int e = segFirst[sg]; e < segFirst[sg + 1]; e++) {
                    tok[entries] = entryToken[e];
                    crc[entries] = entryCrc[e];
                    kept[entryToken[e]] = true;
                    entries++;
                }
                segs++;
            }
            newClusterSeg[c + 1] = segs;
        }
        for (boolean k : kept) {
            if (!k) {
                return null;
            }
        }
        first[segs] = entries;
        int[] next = new int[clusters];
        for (int c = 0; c < clusters; c++) {
            next[c] = map[nextDevice[c]] >= 0 ? map[nextDevice[c]] : c % presentDevices;
        }
        return new ClusterLayout(clusteredTokens, entryBytes, tau, coActivationClusters, medoid, newClusterSeg,
                Arrays.copyOf(dev, segs), Arrays.copyOf(off, segs), Arrays.copyOf(len, segs),
                Arrays.copyOf(first, segs + 1), Arrays.copyOf(tok, entries), Arrays.copyOf(crc, entries), next);
    }

    /**
     * Eq. 7's next device of every cluster of a layout written in one piece: with {@code p} the sum
     * of the sizes of clusters {@code 0..c}, cluster {@code c} started on {@code (p − |C|) mod N}
     * and its members went round robin from there, so the next one goes to {@code p mod N}.
     */
    static int[] eq7NextDevices(int[] clusterSizes, int devices) {
        int[] next = new int[clusterSizes.length];
        long p = 0;
        for (int c = 0; c < next.length; c++) {
            p += clusterSizes[c];
            next[c] = (int) (p % devices);
        }
        return next;
    }

    /**
     * The device the next member appended to {@code cluster} goes to: Eq. 7's round robin continued
     * ("place it on the next SSD allocated for that cluster", Swarm §6.2). A full device may still
     * hand that member's extent to another device; the round robin continues regardless.
     */
    public int nextDevice(int cluster) {
        return nextDevice[cluster];
    }

    /**
     * A new layout: this one's segments unchanged, plus {@code added} new segments appended to the
     * clusters they name (existing clusters, or new ones with ids {@code clusterCount()..}), each
     * cluster's new segments after its old ones in the order given. O(total stored entries): it
     * rebuilds the arrays so a cluster's segments stay contiguous. Validates like the constructor.
     *
     * @param clusteredTokens the new prefix, at least this layout's
     * @param newMedoids medoids of the new clusters, in id order
     * @param addCluster per new segment its cluster, non-decreasing
     * @param addDevice per new segment its device
     * @param addOffset per new segment its extent offset
     * @param addLength per new segment its extent length
     * @param addFirst new segment {@code s} holds entries {@code [addFirst[s], addFirst[s+1])} of
     *     {@code addToken} / {@code addCrc}
     * @param nextDevice per cluster (old and new) the next device after the append
     */
    ClusterLayout extend(int clusteredTokens, int[] newMedoids, int[] addCluster, int[] addDevice, long[] addOffset,
            int[] addLength, int[] addFirst, int[] addToken, int[] addCrc, int[] nextDevice) {
        if (shards > 1) {
            throw new IllegalStateException("a head-sharded cluster layout does not grow online (its shards would"
                    + " leave the shard-major order); append is for token-striped layouts");
        }
        if (clusteredTokens < this.clusteredTokens) {
            throw new IllegalArgumentException("clusteredTokens = " + clusteredTokens + " is out of range; allowed: "
                    + this.clusteredTokens + ".." + Integer.MAX_VALUE + " (a layout only grows)");
        }
        int oldClusters = medoid.length;
        int clusters = oldClusters + newMedoids.length;
        int added = addCluster.length;
        int segs = segDevice.length + added;
        int entries = entryToken.length + addToken.length;
        int[] med = Arrays.copyOf(medoid, clusters);
        System.arraycopy(newMedoids, 0, med, oldClusters, newMedoids.length);
        int[] cSeg = new int[clusters + 1];
        SegmentCopy out = new SegmentCopy(segs, entries);
        int a = 0;
        for (int c = 0; c < clusters; c++) {
            cSeg[c] = out.s;
            if (c < oldClusters) {
                for (int g = clusterSeg[c]; g < clusterSeg[c + 1]; g++) {
                    out.add(segDevice[g], segOffset[g], segLength[g], entryToken, entryCrc, segFirst[g], segFirst[g + 1]);
                }
            }
            for (; a < added && addCluster[a] == c; a++) {
                out.add(addDevice[a], addOffset[a], addLength[a], addToken, addCrc, addFirst[a], addFirst[a + 1]);
            }
        }
        cSeg[clusters] = out.s;
        if (a != added || out.s != segs || out.e != entries) {
            throw new IllegalArgumentException("added segments name clusters outside 0.." + (clusters - 1)
                    + " or not in non-decreasing order");
        }
        return new ClusterLayout(clusteredTokens, entryBytes, tau, coActivationClusters, med, cSeg, out.dev, out.off,
                out.len, out.first, out.tok, out.crc, nextDevice);
    }

    /** The segment arrays {@link #extend} fills, old and added segments alike, one segment after another. */
    private static final class SegmentCopy {
        final int[] dev;
        final long[] off;
        final int[] len;
        final int[] first;
        final int[] tok;
        final int[] crc;
        /** Segments and entries written so far. */
        int s;
        int e;

        SegmentCopy(int segs, int entries) {
            dev = new int[segs];
            off = new long[segs];
            len = new int[segs];
            first = new int[segs + 1];
            tok = new int[entries];
            crc = new int[entries];
        }

        /** Appends one segment whose entries are {@code tokens[from..to)} with their {@code crcs}. */
        void add(int device, long offset, int length, int[] tokens, int[] crcs, int from, int to) {
            dev[s] = device;
            off[s] = offset;
            len[s] = length;
            int n = to - from;
            System.arraycopy(tokens, from, tok, e, n);
            System.arraycopy(crcs, from, crc, e, n);
            e += n;
            first[++s] = e;
        }
    }

    /**
     * The segments of this layout that {@code older} does not hold, ascending: what an
     * {@link ClusterLayoutWriter#append append} (or several) wrote since {@code older}. A caller that
     * abandons this layout frees exactly these; the others still belong to {@code older}.
     *
     * @throws IllegalArgumentException if this layout does not extend {@code older}
     */
    public int[] segmentsAddedSince(ClusterLayout older) {
        if (older.medoid.length > medoid.length || older.clusteredTokens > clusteredTokens) {
            throw new IllegalArgumentException("this layout (" + medoid.length + " clusters, " + clusteredTokens
                    + " tokens) does not extend the given one (" + older.medoid.length + " clusters, "
                    + older.clusteredTokens + " tokens)");
        }
        int[] out = new int[segDevice.length];
        int n = 0;
        for (int c = 0; c < medoid.length; c++) {
            int kept = c < older.medoid.length ? older.clusterSeg[c + 1] - older.clusterSeg[c] : 0;
            for (int k = 0; k < clusterSeg[c + 1] - clusterSeg[c]; k++) {
                int g = clusterSeg[c] + k;
                if (k < kept) {
                    int o = older.clusterSeg[c] + k;
                    if (older.segDevice[o] != segDevice[g] || older.segOffset[o] != segOffset[g]) {
                        throw new IllegalArgumentException("segment " + g + " of cluster " + c
                                + " differs from the given layout's: this layout does not extend it");
                    }
                } else {
                    out[n++] = g;
                }
            }
        }
        return Arrays.copyOf(out, n);
    }

    /** DRAM held by this layout's tables, in bytes. */
    public long memoryBytes() {
        return 4L * (medoid.length + nextDevice.length + clusterSeg.length + segDevice.length + segLength.length + segFirst.length
                + segShard.length
                + entryToken.length + entryCrc.length + replicaStart.length + replicaEntry.length + entrySeg.length)
                + 8L * segOffset.length;
    }
}
