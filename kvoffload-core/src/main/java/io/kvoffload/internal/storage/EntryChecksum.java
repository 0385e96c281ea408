package io.kvoffload.internal.storage;

import io.kvoffload.internal.util.Checks;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.zip.CRC32C;

/**
 * The checksum of stored KV: a CRC32C over the stored bytes <em>seeded with their identity</em>,
 * the sequence, the layer, what kind of record it is and its token position, so bytes that are
 * intact but belong elsewhere (a manifest pointing a block, a cluster entry or a group at another
 * one's extent, or at another sequence's, a read landing at the wrong offset) fail verification
 * instead of passing as the wanted tokens' KV. Every writer and verifier of block extents, cluster
 * entries and KVSwap groups computes through here, so write and read seed alike.
 *
 * <p>The seed is 16 bytes fed before the data: the sequence's 64-bit hash (the first 8 bytes of
 * SHA-256 of its UTF-8 id, computed once per sequence, so it is the same after a restart), then
 * {@code kind << 24 | layer}, then the position, all big-endian. The position is a block's first
 * token, a cluster entry's token, or a group's first token. The identity is the sequence that
 * <em>wrote</em> the record: a {@linkplain io.kvoffload.KvEngine#fork fork} shares its source's
 * block extents without rewriting them, so its manifest records, per shared block, the writer's
 * identity ({@link BlockTable#checksum}), and everything the fork writes itself is seeded with its
 * own id. No code path renames extents from one sequence to another.
 *
 * <p>{@link #UNSALTED} is the plain CRC32C of the data, what manifests before format version 5
 * recorded; a sequence committed in an old version keeps it for everything it writes later, so its
 * manifest stays in one meaning.
 *
 * <p>Immutable and thread-safe; the {@link CRC32C} each call uses belongs to the caller, and a call
 * allocates nothing (the seed goes in byte by byte), so the decode path can verify with it.
 */
public final class EntryChecksum {
    /** What a checksummed record is; part of the seed so records of different kinds never match. */
    public enum Kind {
        /** A block extent (its first token, all of its bytes including padding). */
        BLOCK(1),
        /** One cluster entry (one token's K and V). */
        ENTRY(2),
        /** One KVSwap group (its first token, {@code [K of G | V of G]} without padding). */
        GROUP(3),
        /** One unit of a strategy's auxiliary layout ({@link UnitLayout}: its unit index, its data bytes without padding). */
        UNIT(4),
        /**
         * One head group's shard of a cluster entry ({@link HeadShards}; its key
         * {@code token × shards + group} as the position).
         */
        SHARD(5),
        /**
         * One head group's shard of a KVSwap group ({@link HeadShards}; its key
         * {@code group × shards + head group} as the position, its data bytes without padding).
         */
        GROUP_SHARD(6);

        final int tag;

        Kind(int tag) {
            this.tag = tag;
        }
    }

    /** The plain CRC32C of the data, without identity: manifests before format version 5. */
    public static final EntryChecksum UNSALTED = new EntryChecksum(0, false);

    private final long sequenceHash;
    private final boolean salted;

    private EntryChecksum(long sequenceHash, boolean salted) {
        this.sequenceHash = sequenceHash;
        this.salted = salted;
    }

    /** The identity-seeded checksum of the sequence named {@code sequenceId}. */
    public static EntryChecksum forSequence(String sequenceId) {
        Checks.notNull("sequenceId", sequenceId);
        return new EntryChecksum(sequenceHash(sequenceId), true);
    }

    /** The 64-bit hash of a sequence id that seeds its checksums: SHA-256's first 8 bytes, big-endian. */
    static long sequenceHash(String sequenceId) {
        try {
            byte[] h = MessageDigest.getInstance("SHA-256").digest(sequenceId.getBytes(StandardCharsets.UTF_8));
            return ByteBuffer.wrap(h).getLong();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every Java platform", e);
        }
    }

    /** The identity whose 64-bit sequence hash is {@code hash} (as a manifest records a shared block's writer). */
    static EntryChecksum ofHash(long hash) {
        return new EntryChecksum(hash, true);
    }

    /** The 64-bit hash of the identity (0 for {@link #UNSALTED}). */
    long hash() {
        return sequenceHash;
    }

    /** Whether the identity is part of the checksum (false only for {@link #UNSALTED}). */
    public boolean salted() {
        return salted;
    }

    /**
     * The checksum of {@code data}'s remaining bytes as record {@code kind} of {@code layer} at
     * {@code position}; consumes {@code data} (its position moves to its limit).
     */
    public int compute(CRC32C crc, Kind kind, int layer, int position, ByteBuffer data) {
        crc.reset();
        if (salted) {
            long h = sequenceHash;
            for (int shift = 56; shift >= 0; shift -= 8) {
                crc.update((int) (h >>> shift));
            }
            putInt(crc, kind.tag << 24 | layer);
            putInt(crc, position);
        }
        crc.update(data);
        return (int) crc.getValue();
    }

    private static void putInt(CRC32C crc, int v) {
        crc.update(v >>> 24);
        crc.update(v >>> 16);
        crc.update(v >>> 8);
        crc.update(v);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof EntryChecksum c && c.salted == salted && c.sequenceHash == sequenceHash;
    }

    @Override
    public int hashCode() {
        return Long.hashCode(sequenceHash) * 31 + (salted ? 1 : 0);
    }

    @Override
    public String toString() {
        return salted ? "EntryChecksum[sequence hash " + Long.toHexString(sequenceHash) + "]"
                : "EntryChecksum[unsalted]";
    }
}
