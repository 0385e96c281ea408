package io.kvoffload.internal.sequence;

import io.kvoffload.KvChecksumException;
import io.kvoffload.internal.storage.EntryChecksum;
import io.kvoffload.internal.storage.Store;
import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * Checks what a read brought back against its recorded CRC32C (block extents, cluster entries,
 * groups alike) and keeps the store's checksum statistics; the read path decides what a mismatch
 * leads to (a second read, another replica, or {@link #failure}).
 */
final class EntryVerifier {
    private final Store store;
    private final EntryChecksum checksum;
    private final String sequenceId;
    private final CRC32C crc = new CRC32C();

    EntryVerifier(Store store, EntryChecksum checksum, String sequenceId) {
        this.store = store;
        this.checksum = checksum;
        this.sequenceId = sequenceId;
    }

    /** Whether the engine verifies reads at all ({@code KvConfig.checksums}). */
    boolean enabled() {
        return store.config().checksums();
    }

    /** The checksum of a record of {@code kind} at {@code position} of {@code layer} holding {@code data}. */
    int compute(EntryChecksum.Kind kind, int layer, int position, ByteBuffer data) {
        return checksum.compute(crc, kind, layer, position, data);
    }

    /** A record verified. */
    void verified() {
        store.stats().checksumsVerified.increment();
    }

    /** A record that failed for good: counted, and the exception naming where it lies. */
    KvChecksumException failure(int device, int layer, int fromToken, int toToken, int expected, int actual) {
        store.stats().checksumFailures.increment();
        return new KvChecksumException(device, store.devices().get(device).directory().toString(), sequenceId, layer,
                fromToken, toToken, expected, actual);
    }
}
