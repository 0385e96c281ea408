package io.kvoffload.internal.storage;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * Binary manifest format (big-endian), version 5 (versions 2 to 4 are still read):
 *
 * <pre>
 * "KVOM" u32 version
 * str id, u32 layers, queryHeads, kvHeads, headDim, u8 dtype, u32 blockTokens
 * u32 nDevices, str uuid × nDevices
 * u32 nTokens, i32 token × nTokens
 * per layer: u32 nBlocks, then per block: u16 device (0xFFFF: no extent), i64 offset, u32 length, i32 crc32c
 * per layer: u8 hasClusters, and if 1: u32 clusteredTokens, f64 tau, u32 coActivationClusters,
 *   u32 nClusters, i32 medoid × nClusters,
 *   u32 segments per cluster × nClusters, u16 nextDevice × nClusters (v3+),
 *   then per segment: u16 device, i64 offset, u32 length, u32 entries, then (i32 token, i32 crc32c) × entries
 * (version ≥ 4) per layer: u8 hasGroups, and if 1: u32 groupedTokens, u32 groupSize, u32 stride,
 *   u32 nSegments, then per segment: u16 device, i64 offset, u32 length;
 *   u32 nGroups (= groupedTokens / groupSize), then per group: u32 segment, i32 crc32c;
 *   u32 adapterBytes, the low-rank adapter in its own checksummed form (LowRankAdapter.encode)
 * i64 commitMillis, i64 commitNumber
 * i32 CRC32C of everything above
 * </pre>
 *
 * Version 5 has the bytes of version 4; what changed is the meaning of every block, entry and group
 * checksum: it is seeded with the record's identity (sequence, layer, kind, token position; see
 * {@link EntryChecksum}), so a pointer to the wrong extent fails verification. Versions 2 to 4 hold
 * plain CRC32Cs; they decode with {@link Manifest#identityChecksums()} false, are verified that way,
 * and a sequence from them is written back as version 4, so one manifest never mixes meanings.
 * Version 4 added the group layouts of the KVSwap selector. Version 3 added each cluster's next device (online maintenance appends there, Swarm Eq. 9) and
 * lets a cluster have more segments than devices (one per device per append). Version 2 files, which
 * have neither, still decode: their next devices are Eq. 7's, recomputed from the cluster sizes.
 *
 * <p>Decoding trusts nothing: counts are checked against the bytes that remain and against the shape,
 * so a damaged or hostile file is rejected with a message instead of allocating absurd arrays or
 * naming extents outside a pool ({@link #validate} checks those against the open devices).
 */
public final class ManifestCodec {
    private static final int MAGIC = 0x4B564F4D; // "KVOM"
    private static final int NO_EXTENT = 0xFFFF;
    public static final int VERSION = 5;
    /** The first version whose checksums are identity-seeded ({@link EntryChecksum}). */
    public static final int IDENTITY_CHECKSUMS_VERSION = 5;
    /** The newest version with plain CRC32Cs: what a sequence first committed before version 5 is written as. */
    public static final int UNSALTED_VERSION = IDENTITY_CHECKSUMS_VERSION - 1;
    /** The oldest version {@link #decode} still reads. */
    public static final int MIN_VERSION = 2;

    private ManifestCodec() {}

    /** Encodes in {@link #VERSION}, or in {@link #UNSALTED_VERSION} for a manifest with plain checksums. */
    public static byte[] encode(Manifest m) {
        return encode(m, m.identityChecksums() ? VERSION : UNSALTED_VERSION);
    }

    /**
     * Encodes in {@code version} ({@link #MIN_VERSION}..{@link #VERSION}): from version 5 only a
     * manifest with identity checksums, before it only one without; version 2 cannot hold group layouts.
     */
    static byte[] encode(Manifest m, int version) {
        if (version < MIN_VERSION || version > VERSION) {
            throw new IllegalArgumentException("version = " + version + " is out of range; allowed: " + MIN_VERSION
                    + ".." + VERSION);
        }
        if (m.identityChecksums() != (version >= IDENTITY_CHECKSUMS_VERSION)) {
            throw new IllegalArgumentException("version = " + version + " cannot record "
                    + (m.identityChecksums() ? "identity-seeded" : "plain") + " checksums; allowed: "
                    + (m.identityChecksums() ? IDENTITY_CHECKSUMS_VERSION + ".." + VERSION
                            : MIN_VERSION + ".." + UNSALTED_VERSION));
        }
        try {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream(
                    64 + m.tokenCount() * 4 + m.shape().layers() * m.blocksPerLayer() * 18);
            DataOutputStream out = new DataOutputStream(bytes);
            out.writeInt(MAGIC);
            out.writeInt(version);
            writeString(out, m.id());
            KvShape s = m.shape();
            out.writeInt(s.layers());
            out.writeInt(s.queryHeads());
            out.writeInt(s.kvHeads());
            out.writeInt(s.headDim());
            out.writeByte(s.dtype().ordinal());
            out.writeInt(m.blockTokens());
            out.writeInt(m.deviceUuids().size());
            for (String u : m.deviceUuids()) {
                writeString(out, u);
            }
            out.writeInt(m.tokenCount());
            for (int t : m.tokenIds()) {
                out.writeInt(t);
            }
            for (BlockTable t : m.layers()) {
                out.writeInt(t.size());
                for (int b = 0; b < t.size(); b++) {
                    out.writeShort(t.hasExtent(b) ? t.device(b) : NO_EXTENT);
                    out.writeLong(t.offset(b));
                    out.writeInt(t.length(b));
                    out.writeInt(t.crc(b));
                }
            }
            for (ClusterLayout c : m.clusters()) {
                out.writeByte(c == null ? 0 : 1);
                if (c != null) {
                    writeClusters(out, c, version);
                }
            }
            if (version >= 4) {
                for (GroupLayout g : m.groups()) {
                    out.writeByte(g == null ? 0 : 1);
                    if (g != null) {
                        writeGroups(out, g);
                    }
                }
            } else {
                for (GroupLayout g : m.groups()) {
                    if (g != null) {
                        throw new IllegalArgumentException("manifest version " + version + " cannot hold group layouts");
                    }
                }
            }
            out.writeLong(m.commitMillis());
            out.writeLong(m.commitNumber());
            out.flush();
            CRC32C crc = new CRC32C();
            crc.update(bytes.toByteArray());
            out.writeInt((int) crc.getValue());
            out.flush();
            return bytes.toByteArray();
        } catch (IOException e) {
            throw new IllegalStateException("in-memory write failed", e);
        }
    }

    private static void writeClusters(DataOutputStream out, ClusterLayout c, int version) throws IOException {
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
        for (int s = 0; s < c.segDevice.length; s++) {
            out.writeShort(c.segDevice[s]);
            out.writeLong(c.segOffset[s]);
            out.writeInt(c.segLength[s]);
            out.writeInt(c.segFirst[s + 1] - c.segFirst[s]);
            for (int e = c.segFirst[s]; e < c.segFirst[s + 1]; e++) {
                out.writeInt(c.entryToken[e]);
                out.writeInt(c.entryCrc[e]);
            }
        }
    }

    private static void writeGroups(DataOutputStream out, GroupLayout g) throws IOException {
        out.writeInt(g.groupedTokens);
        out.writeInt(g.groupSize);
        out.writeInt(g.stride);
        out.writeInt(g.segDevice.length);
        for (int s = 0; s < g.segDevice.length; s++) {
            out.writeShort(g.segDevice[s]);
            out.writeLong(g.segOffset[s]);
            out.writeInt(g.segLength[s]);
        }
        out.writeInt(g.groupSeg.length);
        for (int k = 0; k < g.groupSeg.length; k++) {
            out.writeInt(g.groupSeg[k]);
            out.writeInt(g.groupCrc[k]);
        }
        byte[] a = g.adapter.encode();
        out.writeInt(a.length);
        out.write(a);
    }

    /** Reads one layer's group section; every count is checked against the bytes left and the shape first. */
    private static GroupLayout readGroups(ByteBuffer buf, int layer, KvShape shape, int nTok, int nDev) {
        String where = "manifest layer " + layer + " group layout: ";
        int groupedTokens = buf.getInt();
        int groupSize = buf.getInt();
        if (groupSize < 1 || groupSize > 4096) {
            throw new IllegalArgumentException(where + "groupSize = " + groupSize + " is out of range; allowed: 1..4096");
        }
        if (groupedTokens < groupSize || groupedTokens > nTok || groupedTokens % groupSize != 0) {
            throw new IllegalArgumentException(where + "groupedTokens = " + groupedTokens + " is out of range; allowed:"
                    + " a positive multiple of groupSize " + groupSize + " up to the sequence's " + nTok + " tokens");
        }
        int stride = buf.getInt();
        long data = (long) groupSize * shape.entryBytes();
        if (stride < data || stride > (data + (1 << 20))) {
            throw new IllegalArgumentException(where + "stride = " + stride + " is out of range; allowed: " + data + ".."
                    + (data + (1 << 20)) + " (groupSize × entryBytes plus alignment padding)");
        }
        int segs = count(buf, "group segments", 14);
        int[] segDevice = new int[segs];
        long[] segOffset = new long[segs];
        int[] segLength = new int[segs];
        for (int s = 0; s < segs; s++) {
            segDevice[s] = buf.getShort() & 0xFFFF;
            if (segDevice[s] >= nDev) {
                throw new IllegalArgumentException(where + "segment " + s + " names device " + segDevice[s]
                        + "; allowed: 0.." + (nDev - 1));
            }
            segOffset[s] = buf.getLong();
            segLength[s] = buf.getInt();
            if (segLength[s] < stride) {
                throw new IllegalArgumentException(where + "segment " + s + " length " + segLength[s]
                        + " is out of range; allowed: at least one group stride (" + stride + ")");
            }
        }
        int groups = count(buf, "groups", 8);
        if (groups != groupedTokens / groupSize) {
            throw new IllegalArgumentException(where + "nGroups = " + groups + " is out of range; allowed: exactly "
                    + groupedTokens / groupSize + " (groupedTokens / groupSize)");
        }
        int[] groupSeg = new int[groups];
        int[] groupCrc = new int[groups];
        for (int k = 0; k < groups; k++) {
            groupSeg[k] = buf.getInt();
            if (groupSeg[k] < 0 || groupSeg[k] >= segs) {
                throw new IllegalArgumentException(where + "group " + k + " names segment " + groupSeg[k]
                        + "; allowed: 0.." + (segs - 1));
            }
            groupCrc[k] = buf.getInt();
        }
        int adapterBytes = count(buf, "adapter bytes", 1);
        byte[] a = new byte[adapterBytes];
        buf.get(a);
        io.kvoffload.internal.kvswap.LowRankAdapter adapter;
        try {
            adapter = io.kvoffload.internal.kvswap.LowRankAdapter.decode(a);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(where + "adapter: " + e.getMessage(), e);
        }
        if (adapter.kvHeads() != shape.kvHeads() || adapter.headDim() != shape.headDim()) {
            throw new IllegalArgumentException(where + "adapter is for kvHeads " + adapter.kvHeads() + " × headDim "
                    + adapter.headDim() + "; allowed: the shape's " + shape.kvHeads() + " × " + shape.headDim());
        }
        try {
            return new GroupLayout(groupedTokens, groupSize, shape.entryBytes(), stride, segDevice, segOffset,
                    segLength, groupSeg, groupCrc, adapter);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(where + e.getMessage(), e);
        }
    }

    private static ClusterLayout readClusters(ByteBuffer buf, int layer, KvShape shape, int nTok, int nDev,
            int version) {
        int clusteredTokens = buf.getInt();
        if (clusteredTokens < 1 || clusteredTokens > nTok) {
            throw new IllegalArgumentException("manifest layer " + layer + " clusters " + clusteredTokens
                    + " tokens; the sequence has " + nTok);
        }
        double tau = buf.getDouble();
        int coActivation = buf.getInt();
        int n = count(buf, "clusters", 8);
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
        int segs = clusterSeg[n];
        if ((long) segs * 18 > buf.remaining()) {
            throw new IllegalArgumentException("manifest layer " + layer + " segment count " + segs
                    + " exceeds the data");
        }
        int[] segDevice = new int[segs];
        long[] segOffset = new long[segs];
        int[] segLength = new int[segs];
        int[] segFirst = new int[segs + 1];
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
            int entries = count(buf, "segment entries", 8);
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
        return new ClusterLayout(clusteredTokens, shape.entryBytes(), tau, coActivation, medoid, clusterSeg, segDevice,
                segOffset, segLength, segFirst, java.util.Arrays.copyOf(tokens, total), java.util.Arrays.copyOf(crcs, total),
                nextDevice);
    }

    private static void writeString(DataOutputStream out, String s) throws IOException {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        out.writeShort(b.length);
        out.write(b);
    }

    /** Decodes a manifest; throws {@link IllegalArgumentException} naming what is wrong. */
    public static Manifest decode(byte[] data) {
        if (data.length < 12) {
            throw new IllegalArgumentException("manifest is " + data.length + " bytes: too short");
        }
        CRC32C crc = new CRC32C();
        crc.update(data, 0, data.length - 4);
        ByteBuffer buf = ByteBuffer.wrap(data);
        int stored = buf.getInt(data.length - 4);
        if (stored != (int) crc.getValue()) {
            throw new IllegalArgumentException("manifest checksum mismatch: stored " + Integer.toHexString(stored)
                    + ", computed " + Integer.toHexString((int) crc.getValue()));
        }
        buf.limit(data.length - 4);
        try {
            if (buf.getInt() != MAGIC) {
                throw new IllegalArgumentException("not a kvoffload manifest (bad magic)");
            }
            int version = buf.getInt();
            if (version < MIN_VERSION || version > VERSION) {
                throw new IllegalArgumentException("manifest format version " + version + "; this build reads "
                        + MIN_VERSION + ".." + VERSION);
            }
            String id = readString(buf);
            int layers = buf.getInt();
            int qh = buf.getInt();
            int kvh = buf.getInt();
            int hd = buf.getInt();
            int dt = buf.get();
            if (dt < 0 || dt >= DType.values().length) {
                throw new IllegalArgumentException("manifest dtype " + dt + " unknown");
            }
            KvShape shape = new KvShape(layers, qh, kvh, hd, DType.values()[dt]);
            int blockTokens = buf.getInt();
            if (blockTokens < 1 || blockTokens > 65536) {
                throw new IllegalArgumentException("manifest blockTokens " + blockTokens + " outside 1..65536");
            }
            int nDev = count(buf, "devices", 2);
            List<String> uuids = new ArrayList<>(nDev);
            for (int i = 0; i < nDev; i++) {
                uuids.add(readString(buf));
            }
            int nTok = count(buf, "tokens", 4);
            int[] tokens = new int[nTok];
            for (int i = 0; i < nTok; i++) {
                tokens[i] = buf.getInt();
            }
            int expectedBlocks = (nTok + blockTokens - 1) / blockTokens;
            BlockTable[] tables = new BlockTable[layers];
            for (int l = 0; l < layers; l++) {
                int nb = count(buf, "blocks", 18);
                if (nb != expectedBlocks) {
                    throw new IllegalArgumentException("manifest layer " + l + " has " + nb + " blocks; "
                            + nTok + " tokens in blocks of " + blockTokens + " need " + expectedBlocks);
                }
                BlockTable t = new BlockTable(nb);
                for (int b = 0; b < nb; b++) {
                    int dev = buf.getShort() & 0xFFFF;
                    long off = buf.getLong();
                    int len = buf.getInt();
                    int c = buf.getInt();
                    if (dev == NO_EXTENT) {
                        t.ensureBlocks(b + 1);
                        continue;
                    }
                    if (dev >= nDev) {
                        throw new IllegalArgumentException("manifest layer " + l + " block " + b + " names device "
                                + dev + "; the manifest lists " + nDev);
                    }
                    t.set(b, dev, off, len, c, true);
                }
                tables[l] = t;
            }
            ClusterLayout[] clusters = new ClusterLayout[layers];
            for (int l = 0; l < layers; l++) {
                int has = buf.get();
                if (has == 1) {
                    clusters[l] = readClusters(buf, l, shape, nTok, nDev, version);
                } else if (has != 0) {
                    throw new IllegalArgumentException("manifest layer " + l + " cluster flag " + has);
                }
            }
            GroupLayout[] groups = new GroupLayout[layers];
            if (version >= 4) {
                for (int l = 0; l < layers; l++) {
                    int has = buf.get();
                    if (has == 1) {
                        if (clusters[l] != null) {
                            throw new IllegalArgumentException("manifest layer " + l + " has both a cluster and a"
                                    + " group layout; allowed: at most one");
                        }
                        groups[l] = readGroups(buf, l, shape, nTok, nDev);
                    } else if (has != 0) {
                        throw new IllegalArgumentException("manifest layer " + l + " group flag " + has
                                + "; allowed: 0 or 1");
                    }
                }
            }
            long millis = buf.getLong();
            long number = buf.getLong();
            if (buf.hasRemaining()) {
                throw new IllegalArgumentException("manifest has " + buf.remaining() + " trailing bytes");
            }
            return new Manifest(id, shape, blockTokens, List.copyOf(uuids), tokens, tables, clusters, groups, millis,
                    number, version >= IDENTITY_CHECKSUMS_VERSION);
        } catch (BufferUnderflowException e) {
            throw new IllegalArgumentException("manifest is truncated");
        }
    }

    private static int count(ByteBuffer buf, String what, int bytesEach) {
        int n = buf.getInt();
        if (n < 0 || (long) n * bytesEach > buf.remaining()) {
            throw new IllegalArgumentException("manifest " + what + " count " + n + " exceeds the "
                    + buf.remaining() + " bytes that remain");
        }
        return n;
    }

    private static String readString(ByteBuffer buf) {
        int len = buf.getShort() & 0xFFFF;
        if (len > buf.remaining()) {
            throw new IllegalArgumentException("manifest string of " + len + " bytes exceeds the data");
        }
        byte[] b = new byte[len];
        buf.get(b);
        return new String(b, StandardCharsets.UTF_8);
    }

    /**
     * Checks every extent against the devices it names: aligned, inside the pool and exactly the
     * extent size the shape implies. Returns the manifest-local → engine device index map.
     */
    public static int[] validate(Manifest m, List<DevicePool> devices) {
        int[] map = new int[m.deviceUuids().size()];
        for (int i = 0; i < map.length; i++) {
            map[i] = -1;
            for (DevicePool d : devices) {
                if (d.uuid().equals(m.deviceUuids().get(i))) {
                    map[i] = d.index();
                }
            }
            if (map[i] < 0) {
                throw new IllegalArgumentException("sequence " + m.id() + " has data on device "
                        + m.deviceUuids().get(i) + ", which is not among the configured ssdDirectories");
            }
        }
        for (int l = 0; l < m.layers().length; l++) {
            BlockTable t = m.layers()[l];
            int clustered = m.relaidTokens(l);
            for (int b = 0; b < t.size(); b++) {
                if (!t.hasExtent(b)) {
                    if ((long) (b + 1) * m.blockTokens() > clustered) {
                        throw new IllegalArgumentException("sequence " + m.id() + " layer " + l + " block " + b
                                + " has no extent and its tokens are not all in clusters or groups");
                    }
                    continue;
                }
                DevicePool d = devices.get(map[t.device(b)]);
                long expected = Layout.extentBytes(m.shape(), m.blockTokens(), d.alignment());
                if (t.length(b) != expected || t.offset(b) < 0 || t.offset(b) % d.alignment() != 0
                        || t.offset(b) > d.sizeBytes() - t.length(b)) {
                    throw new IllegalArgumentException("sequence " + m.id() + " layer " + l + " block " + b
                            + ": extent [" + t.offset(b) + ", +" + t.length(b) + ") is not a valid " + expected
                            + "-byte extent of device " + d.index() + " (" + d.sizeBytes() + " bytes, alignment "
                            + d.alignment() + ")");
                }
            }
        }
        for (int l = 0; l < m.clusters().length; l++) {
            ClusterLayout c = m.clusters()[l];
            if (c == null) {
                continue;
            }
            for (int s = 0; s < c.segmentCount(); s++) {
                DevicePool d = devices.get(map[c.segmentDevice(s)]);
                long off = c.segmentOffset(s);
                int len = c.segmentLength(s);
                if (len <= 0 || len % d.alignment() != 0 || off < 0 || off % d.alignment() != 0
                        || off > d.sizeBytes() - len) {
                    throw new IllegalArgumentException("sequence " + m.id() + " layer " + l + " cluster segment " + s
                            + ": extent [" + off + ", +" + len + ") is not an aligned extent of device " + d.index()
                            + " (" + d.sizeBytes() + " bytes, alignment " + d.alignment() + ")");
                }
            }
        }
        for (int l = 0; l < m.groups().length; l++) {
            GroupLayout g = m.groups()[l];
            if (g == null) {
                continue;
            }
            for (int s = 0; s < g.segmentCount(); s++) {
                DevicePool d = devices.get(map[g.segmentDevice(s)]);
                long off = g.segmentOffset(s);
                int len = g.segmentLength(s);
                if (len <= 0 || len % d.alignment() != 0 || off < 0 || off % d.alignment() != 0
                        || off > d.sizeBytes() - len || g.stride() % d.alignment() != 0) {
                    throw new IllegalArgumentException("sequence " + m.id() + " layer " + l + " group segment " + s
                            + ": extent [" + off + ", +" + len + ") with group stride " + g.stride()
                            + " is not an aligned extent of device " + d.index() + " (" + d.sizeBytes()
                            + " bytes, alignment " + d.alignment() + ")");
                }
            }
        }
        return map;
    }
}
