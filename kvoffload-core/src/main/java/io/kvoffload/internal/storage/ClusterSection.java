package io.kvoffload.internal.storage;

import io.kvoffload.KvShape;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * A layer's cluster layout in a manifest (the layout Swarm's clusters and the plug-in strategies'
 * positional pages share: entries with per-entry checksums), section {@value #NAME}:
 *
 * <pre>
 * u32 clusteredTokens, f64 tau, u32 coActivationClusters,
 * u32 nClusters, i32 medoid × nClusters,
 * u32 segments per cluster × nClusters, u16 nextDevice × nClusters (section version 3),
 * u16 shards (version 4),
 * then per segment: u16 device, i64 offset, u32 length, u32 entries, u16 shard (version 4),
 * then (i32 token, i32 crc32c) × entries
 * </pre>
 *
 * Version 4 holds head-sharded layouts ({@link io.kvoffload.Placement#HEAD_SHARDED}): the head
 * groups per token and each segment's group (its entries are shards, checksummed as
 * {@link EntryChecksum.Kind#SHARD}); a token-striped layout is still written as version 3, so
 * stores that never shard stay readable by builds before it. Version 3 added each cluster's next
 * device (online maintenance appends there, Swarm Eq. 9) and lets a cluster have more segments
 * than devices; version 2 bodies (manifest version 2) have neither: their next devices are Eq. 7's,
 * recomputed from the cluster sizes.
 */
final class ClusterSection extends SectionKind<ClusterLayout> {
    static final String NAME = "clusters";
    static final int VERSION = 4;
    /** The newest version without head groups: what a token-striped layout is written as. */
    static final int STRIPED_VERSION = 3;
    static final int MIN_VERSION = 2;

    /** This layout's section kind, for {@link LayoutSections}. */
    static final ClusterSection KIND = new ClusterSection();

    private ClusterSection() {
        super(new Info(NAME, "cluster", Slot.ENTRIES, MIN_VERSION, STRIPED_VERSION, VERSION, 2));
    }

    /** Manifest version 2 holds section version 2 bodies, versions 3 to 5 version 3's. */
    @Override int flaggedVersion(int manifestVersion) { return manifestVersion == 2 ? 2 : STRIPED_VERSION; }
    @Override ClusterLayout[] layouts(Manifest m) { return m.clusters(); }
    @Override int relaidTokens(ClusterLayout c) { return c.clusteredTokens(); }

    @Override
    void write(DataOutputStream out, ClusterLayout c, int version) throws IOException {
        out.writeInt(c.clusteredTokens);
        out.writeDouble(c.tau);
        out.writeInt(c.coActivationClusters);
        int n = c.medoid.length;
        out.writeInt(n);
        for (int x : c.medoid) {
            out.writeInt(x);
        }
        for (int k = 0; k < n; k++) {
            out.writeInt(c.clusterSeg[k + 1] - c.clusterSeg[k]);
        }
        if (version >= 3) {
            for (int k = 0; k < n; k++) {
                out.writeShort(c.nextDevice[k]);
            }
        } // version 2 has no next devices: decoding recomputes Eq. 7's
        if (version >= 4) {
            out.writeShort(c.shards);
        }
        for (int s = 0; s < c.segDevice.length; s++) {
            out.writeShort(c.segDevice[s]);
            out.writeLong(c.segOffset[s]);
            out.writeInt(c.segLength[s]);
            out.writeInt(c.segFirst[s + 1] - c.segFirst[s]);
            if (version >= 4) {
                out.writeShort(c.segShard[s]);
            }
            for (int e = c.segFirst[s]; e < c.segFirst[s + 1]; e++) {
                out.writeInt(c.entryToken[e]);
                out.writeInt(c.entryCrc[e]);
            }
        }
    }

    @Override
    ClusterLayout read(ByteBuffer buf, Context at, int version) {
        int layer = at.layer();
        KvShape shape = at.shape();
        int nTok = at.tokens();
        int nDev = at.devices();
        int clusteredTokens = buf.getInt();
        if (clusteredTokens < 1 || clusteredTokens > nTok) {
            throw new IllegalArgumentException("manifest layer " + layer + " clusters " + clusteredTokens
                    + " tokens; the sequence has " + nTok);
        }
        double tau = buf.getDouble();
        int coActivation = buf.getInt();
        int n = ManifestCodec.count(buf, "clusters", 8);
        int[] medoid = new int[n];
        for (int k = 0; k < n; k++) {
            medoid[k] = buf.getInt();
        }
        int[] clusterSeg = new int[n + 1];
        for (int k = 0; k < n; k++) {
            int segs = buf.getInt();
            // Version 2 wrote a cluster in one piece, one segment per device at most; appends (v3) add
            // one per device each time, bounded only by the bytes (18 or more per segment).
            long max = version == 2 ? nDev : buf.remaining() / 18;
            if (segs < 0 || segs > max || (long) clusterSeg[k] + segs > Integer.MAX_VALUE - 8) {
                throw new IllegalArgumentException("manifest layer " + layer + " cluster " + k + " has " + segs
                        + " segments; allowed 0.." + max);
            }
            clusterSeg[k + 1] = clusterSeg[k] + segs;
        }
        int[] nextDevice = new int[n];
        if (version >= 3) {
            for (int k = 0; k < n; k++) {
                nextDevice[k] = buf.getShort() & 0xFFFF;
                if (nextDevice[k] >= nDev) {
                    throw new IllegalArgumentException("manifest layer " + layer + " cluster " + k
                            + " names next device " + nextDevice[k] + "; the manifest lists " + nDev);
                }
            }
        }
        int shards = 1;
        if (version >= 4) {
            shards = buf.getShort() & 0xFFFF;
            if (shards < 1 || shards > shape.kvHeads() || shape.kvHeads() % shards != 0) {
                throw new IllegalArgumentException("manifest layer " + layer + " has " + shards + " head groups; allowed:"
                        + " a divisor of the " + shape.kvHeads() + " KV heads");
            }
        }
        int segs = clusterSeg[n];
        if ((long) segs * 18 > buf.remaining()) {
            throw new IllegalArgumentException("manifest layer " + layer + " segment count " + segs
                    + " exceeds the data");
        }
        int[] segDevice = new int[segs];
        long[] segOffset = new long[segs];
        int[] segLength = new int[segs];
        int[] segFirst = new int[segs + 1];
        int[] segShard = new int[segs];
        int[] tokens = new int[Math.max(16, segs)];
        int[] crcs = new int[tokens.length];
        int total = 0;
        for (int s = 0; s < segs; s++) {
            segDevice[s] = buf.getShort() & 0xFFFF;
            if (segDevice[s] >= nDev) {
                throw new IllegalArgumentException("manifest layer " + layer + " segment " + s + " names device "
                        + segDevice[s] + "; the manifest lists " + nDev);
            }
            segOffset[s] = buf.getLong();
            segLength[s] = buf.getInt();
            int entries = ManifestCodec.count(buf, "segment entries", 8);
            if (version >= 4) {
                segShard[s] = buf.getShort() & 0xFFFF;
            }
            if (total + entries > tokens.length) {
                tokens = java.util.Arrays.copyOf(tokens, Math.max(total + entries, tokens.length * 2));
                crcs = java.util.Arrays.copyOf(crcs, tokens.length);
            }
            for (int e = 0; e < entries; e++) {
                tokens[total] = buf.getInt();
                crcs[total++] = buf.getInt();
            }
            segFirst[s + 1] = total;
        }
        if (version == 2) {
            int[] sizes = new int[n];
            for (int k = 0; k < n; k++) {
                sizes[k] = segFirst[clusterSeg[k + 1]] - segFirst[clusterSeg[k]];
            }
            nextDevice = ClusterLayout.eq7NextDevices(sizes, Math.max(1, nDev));
        }
        return new ClusterLayout(clusteredTokens, shape.entryBytes() / shards, tau, coActivation, medoid, clusterSeg,
                segDevice, segOffset, segLength, segFirst, java.util.Arrays.copyOf(tokens, total),
                java.util.Arrays.copyOf(crcs, total), nextDevice, shards, segShard);
    }
}
