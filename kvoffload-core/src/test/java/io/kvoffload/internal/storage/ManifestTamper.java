package io.kvoffload.internal.storage;

import io.kvoffload.KvConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.function.BiPredicate;
import java.util.function.Function;

/**
 * Rewrites committed manifests the way a buggy writer (or a probe) could: pointers moved between
 * positions or to another sequence's extents, each with the checksum recorded for the bytes it now
 * names, and the manifest's own CRC recomputed, so only the entry checksums can notice. Edits work
 * on a decoded manifest's raw tables in place; {@link #write} re-encodes (which rebuilds everything
 * derived from them on the next decode).
 */
public final class ManifestTamper {
    private ManifestTamper() {}

    /** Every current copy of {@code id}'s manifest (they live on several devices). */
    public static java.util.List<Path> files(KvConfig cfg, String id) {
        java.util.List<Path> out = new java.util.ArrayList<>();
        for (Path d : cfg.ssdDirectories()) {
            Path f = d.resolve(DevicePool.MANIFEST_DIR).resolve(id + ManifestStore.SUFFIX);
            if (Files.exists(f)) {
                out.add(f);
            }
        }
        if (out.isEmpty()) {
            throw new IllegalStateException("no manifest of " + id + " in " + cfg.ssdDirectories());
        }
        return out;
    }

    /**
     * {@code file} with the table slot of its first block without an extent holding non-zero bytes (an
     * offset), its CRC recomputed: what the encoder wrote before it was canonical. Decoding ignores them.
     */
    public static byte[] withStaleEmptySlot(byte[] file) {
        Manifest m = ManifestCodec.decode(file);
        int pos = 4 + 4 + 2 + m.id().getBytes(java.nio.charset.StandardCharsets.UTF_8).length + 4 * 4 + 1 + 4 + 4;
        for (String u : m.deviceUuids()) {
            pos += 2 + u.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
        }
        pos += 4 + 4 * m.tokenCount();
        // device, offset, length, crc, and from version 7 an origin byte (an own block's)
        int slot = 2 + 8 + 4 + 4 + (java.nio.ByteBuffer.wrap(file).getInt(4) >= ManifestCodec.SHARED_BLOCKS_VERSION ? 1 : 0);
        for (var t : m.layers()) {
            pos += 4;
            for (int b = 0; b < t.size(); b++, pos += slot) {
                if (!t.hasExtent(b)) {
                    byte[] out = file.clone();
                    java.nio.ByteBuffer buf = java.nio.ByteBuffer.wrap(out);
                    if ((buf.getShort(pos) & 0xFFFF) != 0xFFFF) {
                        throw new IllegalStateException("no empty-slot marker at " + pos);
                    }
                    buf.putLong(pos + 2, 123_456L);
                    java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
                    crc.update(out, 0, out.length - 4);
                    buf.putInt(out.length - 4, (int) crc.getValue());
                    return out;
                }
            }
        }
        throw new IllegalStateException("the manifest has no block without an extent");
    }

    /** A manifest file's bytes decoded and encoded again. */
    public static byte[] reencode(byte[] file) {
        return ManifestCodec.encode(ManifestCodec.decode(file));
    }

    public static Path file(KvConfig cfg, String id) {
        return files(cfg, id).get(0);
    }

    public static Manifest read(KvConfig cfg, String id) {
        try {
            return ManifestCodec.decode(Files.readAllBytes(file(cfg, id)));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Writes {@code m} over every copy, with a valid manifest CRC, and removes the previous
     * generations, so the tampered manifest is the only one an engine can load.
     */
    public static void write(KvConfig cfg, Manifest m) {
        try {
            byte[] bytes = ManifestCodec.encode(m);
            for (Path f : files(cfg, m.id())) {
                Files.write(f, bytes);
                Files.deleteIfExists(f.resolveSibling(m.id() + ManifestStore.PREV_SUFFIX));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Blocks {@code a} and {@code b} of {@code layer} trade extents, each taking the other's checksum along. */
    public static void swapBlocks(Manifest m, int layer, int a, int b) {
        BlockTable t = m.layers()[layer];
        int dev = t.device(a);
        long off = t.offset(a);
        int len = t.length(a);
        int crc = t.crc(a);
        t.set(a, t.device(b), t.offset(b), t.length(b), t.crc(b), true);
        t.set(b, dev, off, len, crc, true);
    }

    /** Block {@code b} of {@code layer} names {@code from}'s block {@code fromBlock} (extent and checksum). */
    public static void copyBlock(Manifest m, int layer, int b, Manifest from, int fromBlock) {
        sameDevices(m, from);
        BlockTable f = from.layers()[layer];
        m.layers()[layer].set(b, f.device(fromBlock), f.offset(fromBlock), f.length(fromBlock), f.crc(fromBlock),
                true);
    }

    /**
     * Two stored entries of one segment of {@code layer}'s cluster layout, each the only copy of its
     * token and neither a medoid, trade tokens: each token's pointer now names the other's bytes,
     * whose checksum the slot keeps. Returns the two tokens.
     */
    public static int[] swapEntryTokens(Manifest m, int layer) {
        ClusterLayout c = m.clusters()[layer];
        int[] copies = new int[c.clusteredTokens];
        for (int t : c.entryToken) {
            copies[t]++;
        }
        boolean[] medoid = new boolean[c.clusteredTokens];
        for (int t : c.medoid) {
            medoid[t] = true;
        }
        for (int s = 0; s < c.segDevice.length; s++) {
            int found = -1;
            for (int e = c.segFirst[s]; e < c.segFirst[s + 1]; e++) {
                int t = c.entryToken[e];
                if (copies[t] != 1 || medoid[t]) {
                    continue;
                }
                if (found < 0) {
                    found = e;
                } else {
                    int other = c.entryToken[found];
                    c.entryToken[found] = t;
                    c.entryToken[e] = other;
                    return new int[] {other, t};
                }
            }
        }
        throw new IllegalStateException("no segment holds two single-copy non-medoid entries");
    }

    /**
     * {@code layer}'s cluster segments name {@code from}'s (extents and entry checksums); both
     * layouts must come from the same plan (same segments, same tokens in the same order).
     */
    public static void copyClusterSegments(Manifest m, int layer, Manifest from) {
        copySegments(m, from, m.clusters()[layer], from.clusters()[layer],
                (c, f) -> Arrays.equals(c.entryToken, f.entryToken) && Arrays.equals(c.segFirst, f.segFirst),
                c -> c.entryCrc, "the layouts are not of the same plan");
    }

    /**
     * {@code layer}'s group segments 0 and 1 trade extents, and their groups' checksums follow the
     * bytes: group {@code g} of segment 0 now reads the bytes of the group at the same rank of
     * segment 1, with that group's checksum. Needs two segments of equally many groups.
     */
    public static void swapGroupSegments(Manifest m, int layer) {
        GroupLayout g = m.groups()[layer];
        int[] s0 = groupsOf(g, 0);
        int[] s1 = groupsOf(g, 1);
        if (s0.length != s1.length || g.segLength[0] != g.segLength[1]) {
            throw new IllegalArgumentException("segments 0 and 1 differ: " + s0.length + " and " + s1.length
                    + " groups");
        }
        swap(g.segDevice, 0, 1);
        long off = g.segOffset[0];
        g.segOffset[0] = g.segOffset[1];
        g.segOffset[1] = off;
        for (int i = 0; i < s0.length; i++) {
            int crc = g.groupCrc[s0[i]];
            g.groupCrc[s0[i]] = g.groupCrc[s1[i]];
            g.groupCrc[s1[i]] = crc;
        }
    }

    /** {@code layer}'s group layout names {@code from}'s segments and group checksums (same group structure). */
    public static void copyGroupSegments(Manifest m, int layer, Manifest from) {
        copySegments(m, from, m.groups()[layer], from.groups()[layer],
                (g, f) -> Arrays.equals(g.groupSeg, f.groupSeg) && Arrays.equals(g.segLength, f.segLength),
                g -> g.groupCrc, "the group layouts differ in structure");
    }

    /**
     * {@code to} (a layout of {@code m}) names the extents and record checksums of {@code src} (the
     * same layer's layout of {@code from}), refused with {@code refusal} unless {@code sameStructure}
     * says the two hold the same records in the same segments.
     */
    private static <L extends SegmentedLayout> void copySegments(Manifest m, Manifest from, L to, L src,
            BiPredicate<L, L> sameStructure, Function<L, int[]> checksums, String refusal) {
        sameDevices(m, from);
        if (!sameStructure.test(to, src)) {
            throw new IllegalArgumentException(refusal);
        }
        System.arraycopy(src.segDevice, 0, to.segDevice, 0, to.segDevice.length);
        System.arraycopy(src.segOffset, 0, to.segOffset, 0, to.segOffset.length);
        System.arraycopy(src.segLength, 0, to.segLength, 0, to.segLength.length);
        int[] crc = checksums.apply(to);
        System.arraycopy(checksums.apply(src), 0, crc, 0, crc.length);
    }

    /** Swaps the checksums groups {@code a} and {@code b} of a live layout record (pair with swapping their bytes). */
    public static void swapGroupChecksums(GroupLayout g, int a, int b) {
        swap(g.groupCrc, a, b);
    }

    /**
     * {@code m} as a sequence committed before format version 5 would hold it: every block, entry
     * and group checksum recomputed as the plain CRC32C of the bytes in the pool files (manifest
     * device {@code i} is {@code cfg.ssdDirectories().get(i)}), and {@link Manifest#identityChecksums()} false.
     */
    public static Manifest unsalted(KvConfig cfg, Manifest m) {
        for (BlockTable t : m.layers()) {
            for (int b = 0; b < t.size(); b++) {
                if (t.hasExtent(b)) {
                    t.set(b, t.device(b), t.offset(b), t.length(b), plain(cfg, t.device(b), t.offset(b), t.length(b)),
                            true);
                }
            }
        }
        for (ClusterLayout c : m.clusters()) {
            for (int e = 0; c != null && e < c.entryToken.length; e++) {
                c.entryCrc[e] = plain(cfg, c.entryDevice(e), c.entryOffset(e), c.entryBytes);
            }
        }
        for (GroupLayout g : m.groups()) {
            for (int k = 0; g != null && k < g.groupCount(); k++) {
                g.groupCrc[k] = plain(cfg, g.groupDevice(k), g.groupOffset(k), g.groupBytes());
            }
        }
        return new Manifest(m.id(), m.shape(), m.blockTokens(), m.deviceUuids(), m.tokenIds(), m.layers(),
                m.clusters(), m.groups(), m.commitMillis(), m.commitNumber(), false);
    }

    private static int plain(KvConfig cfg, int device, long offset, int length) {
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(
                cfg.ssdDirectories().get(device).resolve(DevicePool.POOL_FILE))) {
            java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(length);
            while (b.hasRemaining() && ch.read(b, offset + b.position()) >= 0) {
                // read until full
            }
            java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
            crc.update(b.flip());
            return (int) crc.getValue();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The format version written in a manifest file. */
    public static int version(KvConfig cfg, String id) {
        try {
            return java.nio.ByteBuffer.wrap(Files.readAllBytes(file(cfg, id))).getInt(4);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static int[] groupsOf(GroupLayout g, int segment) {
        return java.util.stream.IntStream.range(0, g.groupSeg.length).filter(k -> g.groupSeg[k] == segment)
                .toArray();
    }

    private static void swap(int[] a, int i, int j) {
        int x = a[i];
        a[i] = a[j];
        a[j] = x;
    }

    private static void sameDevices(Manifest m, Manifest from) {
        if (!m.deviceUuids().equals(from.deviceUuids())) {
            throw new IllegalArgumentException("the manifests list different devices: " + m.deviceUuids() + " and "
                    + from.deviceUuids());
        }
    }
}
