package io.kvoffload.internal.storage;

import io.kvoffload.KvChecksumException;
import io.kvoffload.internal.obs.Flight;
import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * Checks what a read brought back against its recorded checksum (block extents, cluster entries,
 * groups alike) and keeps the store's checksum statistics, for every read path: the sequence's reads
 * and the decode pipeline's. The path decides what a mismatch leads to (a second read, another
 * replica, or {@link #failure}).
 */
public final class EntryVerifier {
    private final Store store;
    private final EntryChecksum checksum;
    private final String sequenceId;
    private final CRC32C crc = new CRC32C();

    public EntryVerifier(Store store, EntryChecksum checksum, String sequenceId) {
        this.store = store;
        this.checksum = checksum;
        this.sequenceId = sequenceId;
    }

    /** Whether the engine verifies reads at all ({@code KvConfig.checksums}). */
    public boolean enabled() {
        return store.config().checksums();
    }

    /** The checksum of a record of {@code kind} at {@code position} of {@code layer} holding {@code data}. */
    public int compute(EntryChecksum.Kind kind, int layer, int position, ByteBuffer data) {
        return checksum.compute(crc, kind, layer, position, data);
    }

    /**
     * {@link #compute} with another sequence's identity: a block a fork shares was checksummed by
     * the sequence that wrote it ({@link BlockTable#checksum}).
     */
    public int compute(EntryChecksum writer, EntryChecksum.Kind kind, int layer, int position, ByteBuffer data) {
        return writer.compute(crc, kind, layer, position, data);
    }

    /** A record verified. */
    public void verified() {
        store.stats().checksumsVerified.increment();
    }

    /**
     * {@code token}'s record of {@code layer} on {@code device} did not verify; {@code fatal}: no
     * other copy or second read is left to try (the caller throws).
     */
    public void mismatch(int device, int layer, int token, boolean fatal) {
        store.stats().checksumFailures.increment();
        Flight.checksumFailure(sequenceId, device, layer, token, token + 1, fatal);
    }

    /** The checksum identity of this sequence's records. */
    public EntryChecksum checksum() {
        return checksum;
    }

    /** A record that failed for good: counted, and the exception naming where it lies. */
    public KvChecksumException failure(int device, int layer, int fromToken, int toToken, int expected, int actual) {
        store.stats().checksumFailures.increment();
        Flight.checksumFailure(sequenceId, device, layer, fromToken, toToken, true);
        return new KvChecksumException(device, store.devices().get(device).directory().toString(), sequenceId, layer,
                fromToken, toToken, expected, actual);
    }
}
