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
 * Binary manifest format (big-endian), version 7 (versions 2 to 6 are still read):
 *
 * <pre>
 * "KVOM" u32 version
 * str id, u32 layers, queryHeads, kvHeads, headDim, u8 dtype, u32 blockTokens
 * u32 nDevices, str uuid × nDevices
 * u32 nTokens, i32 token × nTokens
 * per layer: u32 nBlocks, then per block: u16 device (0xFFFF: no extent), i64 offset, u32 length, i32 crc32c
 *   (version 7) then u8 origin: 0 this sequence's own block; 1 shared, written by the sequence whose
 *   64-bit hash follows as i64 (its checksum seed, {@link EntryChecksum}); 2 shared, written with plain
 *   CRC32C (a sequence from before version 5)
 * (version 6) per layer: u8 nSections, then per section: str name, u16 sectionVersion, u32 nBytes, body
 *   — one section per strategy layout the layer has, of a {@link SectionKind} registered in
 *   {@link LayoutSections} (which lists the kinds and their versions); each layout's format evolves on
 *   its own version, and a reader refuses a section it does not know by name and version
 * (versions 2..5) per kind the version carries ({@link SectionKind#flaggedSince}), in registry order:
 *   per layer u8 has, and if 1 a section body of {@link SectionKind#flaggedVersion}
 * i64 commitMillis, i64 commitNumber
 * i32 CRC32C of everything above
 * </pre>
 *
 * Version 7 records which blocks a {@linkplain io.kvoffload.KvEngine#fork fork} shares with the
 * sequence it was forked from, and whose identity seeds their checksums; recovery counts the
 * manifests naming each shared extent. Only a manifest with a shared block is written as version 7,
 * so a store with no forks stays readable by builds that read up to version 6.
 * Version 6 has the bodies of version 5 wrapped in named, versioned, length-prefixed sections.
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
    public static final int VERSION = 7;
    /** The first version that records shared blocks ({@link BlockTable#shared}). */
    public static final int SHARED_BLOCKS_VERSION = 7;
    /** Origin tags of a block (version 7). */
    private static final int OWN = 0;
    private static final int SHARED_SALTED = 1;
    private static final int SHARED_PLAIN = 2;
    /** The first version whose checksums are identity-seeded ({@link EntryChecksum}). */
    public static final int IDENTITY_CHECKSUMS_VERSION = 5;
    /** The newest version with plain CRC32Cs: what a sequence first committed before version 5 is written as. */
    public static final int UNSALTED_VERSION = IDENTITY_CHECKSUMS_VERSION - 1;
    /** The oldest version {@link #decode} still reads. */
    public static final int MIN_VERSION = 2;

    private ManifestCodec() {}

    /**
     * Encodes in {@link #VERSION} when a block is shared, else in version 6, or in {@link
     * #UNSALTED_VERSION} for a manifest with plain checksums.
     */
    public static byte[] encode(Manifest m) {
        return encode(m, !m.identityChecksums() ? UNSALTED_VERSION
                : hasShared(m) ? SHARED_BLOCKS_VERSION : SHARED_BLOCKS_VERSION - 1);
    }

    private static boolean hasShared(Manifest m) {
        for (BlockTable t : m.layers()) {
            if (t.anyShared()) {
                return true;
            }
        }
        return false;
    }

    /**
     * Encodes in {@code version} ({@link #MIN_VERSION}..{@link #VERSION}): from version 5 only a
     * manifest with identity checksums, before it only one without; versions 2 and 3 cannot hold
     * group layouts.
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
        if (version < SHARED_BLOCKS_VERSION && hasShared(m)) {
            throw new IllegalArgumentException("version = " + version + " cannot record shared (forked) blocks;"
                    + " allowed: " + SHARED_BLOCKS_VERSION + ".." + VERSION);
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
                    // A block without an extent records zeros, not what its table slot last held
                    // (decoding ignores them): the encoding is canonical, so a decoded manifest encodes
                    // to the same bytes and its copies compare equal.
                    boolean extent = t.hasExtent(b);
                    out.writeShort(extent ? t.device(b) : NO_EXTENT);
                    out.writeLong(extent ? t.offset(b) : 0);
                    out.writeInt(extent ? t.length(b) : 0);
                    out.writeInt(extent ? t.crc(b) : 0);
                    if (version >= SHARED_BLOCKS_VERSION) {
                        writeOrigin(out, t, b);
                    }
                }
            }
            if (version >= 6) {
                for (int l = 0; l < s.layers(); l++) {
                    writeSections(out, m, l);
                }
            } else {
                writeFlagged(out, m, version);
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

    private static void writeOrigin(DataOutputStream out, BlockTable t, int b) throws IOException {
        if (!t.shared(b)) {
            out.writeByte(OWN);
            return;
        }
        EntryChecksum c = t.checksum(b, null);
        if (c.salted()) {
            out.writeByte(SHARED_SALTED);
            out.writeLong(c.hash());
        } else {
            out.writeByte(SHARED_PLAIN);
        }
    }

    /** Version 7: a block's origin tag (and writer hash); null for the sequence's own block. */
    private static EntryChecksum readOrigin(ByteBuffer buf, int l, int b) {
        int tag = buf.get() & 0xFF;
        return switch (tag) {
            case OWN -> null;
            case SHARED_SALTED -> EntryChecksum.ofHash(buf.getLong());
            case SHARED_PLAIN -> EntryChecksum.UNSALTED;
            default -> throw new IllegalArgumentException("manifest layer " + l + " block " + b + " has origin " + tag
                    + "; allowed: " + OWN + ", " + SHARED_SALTED + " or " + SHARED_PLAIN);
        };
    }

    /** Version 6: each layout of layer {@code l} as a named, versioned, length-prefixed section. */
    private static void writeSections(DataOutputStream out, Manifest m, int l) throws IOException {
        int n = 0;
        for (SectionKind<?> k : LayoutSections.KINDS) {
            n += k.layouts(m)[l] == null ? 0 : 1;
        }
        out.writeByte(n);
        for (SectionKind<?> k : LayoutSections.KINDS) {
            writeSection(out, k, m, l);
        }
    }

    private static <L extends SegmentedLayout> void writeSection(DataOutputStream out, SectionKind<L> kind, Manifest m,
            int l) throws IOException {
        L layout = kind.layouts(m)[l];
        if (layout == null) {
            return;
        }
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        int version = kind.versionFor(layout);
        kind.encode(new DataOutputStream(body), layout, version);
        writeString(out, kind.info().name());
        out.writeShort(version);
        out.writeInt(body.size());
        body.writeTo(out);
    }

    /**
     * Versions 2..5: per kind that the version's flag format carries, a flag and body per layer. A layout of a kind it does not carry is refused by name
     * before anything is written.
     */
    private static void writeFlagged(DataOutputStream out, Manifest m, int version) throws IOException {
        for (SectionKind<?> k : LayoutSections.KINDS) {
            if (!flagged(k, version)) {
                refuseAny(k, m, version);
            }
        }
        for (SectionKind<?> k : LayoutSections.KINDS) {
            if (flagged(k, version)) {
                writeFlags(out, k, m, version);
            }
        }
    }

    /** Whether manifest {@code version}'s flag format (2..5) carries {@code kind}. */
    private static boolean flagged(SectionKind<?> kind, int version) {
        return kind.info().flaggedSince() > 0 && kind.info().flaggedSince() <= version;
    }

    private static <L extends SegmentedLayout> void refuseAny(SectionKind<L> kind, Manifest m, int version) {
        for (L layout : kind.layouts(m)) {
            if (layout != null) {
                String label = kind.label(layout);
                throw new IllegalArgumentException("manifest version " + version + " cannot hold " + kind.info().noun()
                        + " layouts" + (label.isEmpty() ? "" : " (" + label + ")") + "; allowed: version "
                        + (kind.info().flaggedSince() > 0 ? kind.info().flaggedSince() : 6) + " on");
            }
        }
    }

    private static <L extends SegmentedLayout> void writeFlags(DataOutputStream out, SectionKind<L> kind, Manifest m,
            int version) throws IOException {
        for (L layout : kind.layouts(m)) {
            out.writeByte(layout == null ? 0 : 1);
            if (layout != null) {
                kind.encode(out, layout, kind.flaggedVersion(version));
            }
        }
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
                    EntryChecksum origin = version >= SHARED_BLOCKS_VERSION ? readOrigin(buf, l, b) : null;
                    if (dev == NO_EXTENT) {
                        if (origin != null) {
                            throw new IllegalArgumentException("manifest layer " + l + " block " + b
                                    + " has no extent but is marked shared");
                        }
                        t.ensureBlocks(b + 1);
                        continue;
                    }
                    if (dev >= nDev) {
                        throw new IllegalArgumentException("manifest layer " + l + " block " + b + " names device "
                                + dev + "; the manifest lists " + nDev);
                    }
                    if (origin != null) {
                        t.setShared(b, dev, off, len, c, true, origin);
                    } else {
                        t.set(b, dev, off, len, c, true);
                    }
                }
                tables[l] = t;
            }
            SegmentedLayout[][] layouts = new SegmentedLayout[LayoutSections.KINDS.size()][layers];
            if (version >= 6) {
                for (int l = 0; l < layers; l++) {
                    readSections(buf, new SectionKind.Context(l, shape, nTok, nDev), layouts);
                }
            } else {
                readFlagged(buf, version, shape, nTok, nDev, layouts);
            }
            long millis = buf.getLong();
            long number = buf.getLong();
            if (buf.hasRemaining()) {
                throw new IllegalArgumentException("manifest has " + buf.remaining() + " trailing bytes");
            }
            return LayoutSections.manifest(id, shape, blockTokens, List.copyOf(uuids), tokens, tables, layouts, millis,
                    number, version >= IDENTITY_CHECKSUMS_VERSION);
        } catch (BufferUnderflowException e) {
            throw new IllegalArgumentException("manifest is truncated");
        }
    }

    /**
     * Version 6: the layer's sections. A section must be known by name and version and its body
     * must use exactly its declared bytes; a layer has at most one section per {@link SectionKind.Slot}
     * (one layout of its entries and one auxiliary layout beside it).
     */
    private static void readSections(ByteBuffer buf, SectionKind.Context at, SegmentedLayout[][] layouts) {
        int l = at.layer();
        int n = buf.get() & 0xFF;
        if (n > SectionKind.Slot.values().length) {
            throw new IllegalArgumentException("manifest layer " + l + " has " + n + " layout sections; allowed: at most "
                    + SectionKind.Slot.values().length + " (" + LayoutSections.slots() + ")");
        }
        for (int i = 0; i < n; i++) {
            String name = readString(buf);
            int version = buf.getShort() & 0xFFFF;
            int length = count(buf, "section bytes", 1);
            int end = buf.position() + length;
            ByteBuffer body = buf.slice(buf.position(), length);
            SectionKind<?> kind = LayoutSections.find(name, version);
            if (kind == null) {
                throw new IllegalArgumentException("manifest layer " + l + " has a layout section '" + name
                        + "' version " + version + " that this build cannot read; allowed: " + LayoutSections.allowed());
            }
            place(layouts, l, kind, kind.read(body, at, version));
            if (body.hasRemaining()) {
                throw new IllegalArgumentException("manifest layer " + l + " section '" + name + "' declares " + length
                        + " bytes but its layout uses " + body.position());
            }
            buf.position(end);
        }
    }

    /**
     * Versions 2..5: per kind the version's flag format carries, in registry order, a flag per layer
     * (0 or 1) and after a 1 the layout's body.
     */
    private static void readFlagged(ByteBuffer buf, int version, KvShape shape, int nTok, int nDev,
            SegmentedLayout[][] layouts) {
        for (SectionKind<?> kind : LayoutSections.KINDS) {
            if (!flagged(kind, version)) {
                continue;
            }
            for (int l = 0; l < layouts[0].length; l++) {
                int has = buf.get();
                if (has == 1) {
                    SectionKind.Context at = new SectionKind.Context(l, shape, nTok, nDev);
                    place(layouts, l, kind, kind.read(buf, at, kind.flaggedVersion(version)));
                } else if (has != 0) {
                    throw new IllegalArgumentException("manifest layer " + l + " " + kind.info().noun() + " flag " + has
                            + "; allowed: 0 or 1");
                }
            }
        }
    }

    /** Stores layer {@code l}'s {@code layout} of {@code kind}, refusing a second layout in the same slot. */
    private static void place(SegmentedLayout[][] layouts, int l, SectionKind<?> kind, SegmentedLayout layout) {
        for (int k = 0; k < layouts.length; k++) {
            SectionKind<?> other = LayoutSections.KINDS.get(k);
            if (other.info().slot() == kind.info().slot() && layouts[k][l] != null) {
                throw new IllegalArgumentException("manifest layer " + l + " has both a " + other.info().noun() + " and a "
                        + kind.info().noun() + " layout; allowed: at most one");
            }
        }
        layouts[LayoutSections.KINDS.indexOf(kind)][l] = layout;
    }

    /**
     * Reads a layout's head-group count (a u16) when the section version has one ({@code present}),
     * else 1, and checks that it divides the shape's KV heads; {@code where} starts the refusal.
     */
    static int shards(ByteBuffer buf, boolean present, String where, KvShape shape) {
        int shards = present ? buf.getShort() & 0xFFFF : 1;
        if (shards < 1 || shards > shape.kvHeads() || shape.kvHeads() % shards != 0) {
            throw new IllegalArgumentException(where + "shards = " + shards + " is out of range; allowed: a divisor of"
                    + " the " + shape.kvHeads() + " KV heads");
        }
        return shards;
    }

    static int count(ByteBuffer buf, String what, int bytesEach) {
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
        for (SectionKind<?> kind : LayoutSections.KINDS) {
            validateSegments(m, devices, map, kind);
        }
        return map;
    }

    /**
     * Checks that every segment of each layout of {@code kind} is an aligned extent inside its device,
     * and the stride of its units (where it has one) aligned.
     */
    private static <L extends SegmentedLayout> void validateSegments(Manifest m, List<DevicePool> devices, int[] map,
            SectionKind<L> kind) {
        L[] layouts = kind.layouts(m);
        for (int l = 0; l < layouts.length; l++) {
            if (layouts[l] != null) {
                validateSegments(m, devices, map, l, kind.info().noun(), layouts[l], kind.stride(layouts[l]));
            }
        }
    }

    private static void validateSegments(Manifest m, List<DevicePool> devices, int[] map, int l, String what,
            SegmentedLayout layout, int stride) {
        for (int s = 0; s < layout.segmentCount(); s++) {
            DevicePool d = devices.get(map[layout.segmentDevice(s)]);
            long off = layout.segmentOffset(s);
            int len = layout.segmentLength(s);
            if (len <= 0 || len % d.alignment() != 0 || off < 0 || off % d.alignment() != 0
                    || off > d.sizeBytes() - len || stride % d.alignment() != 0) {
                throw new IllegalArgumentException("sequence " + m.id() + " layer " + l + " " + what + " segment " + s
                        + ": extent [" + off + ", +" + len + ")" + (stride > 0 ? " with " + what + " stride " + stride : "")
                        + " is not an aligned extent of device " + d.index() + " (" + d.sizeBytes()
                        + " bytes, alignment " + d.alignment() + ")");
            }
        }
    }
}
