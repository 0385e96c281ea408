package io.kvoffload.internal.sequence;

import io.kvoffload.KvSequence;
import io.kvoffload.internal.storage.EntryChecksum;
import io.kvoffload.internal.storage.Store;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * What a strategy's layout code (its offline phase, and its online phase when it grows the layout)
 * may do to a sequence beyond the public API: run as the handle's owner, write extents, install
 * layouts in the ledger, keep per-sequence state. The sequence hands these out through
 * {@link SequenceAccess}, never in its public API, so {@link KvSequence} knows no strategy and a
 * strategy's code lives in its own package.
 */
public interface SequenceHooks {
    /** The public handle (reads, shape, token counts). */
    KvSequence sequence();

    Store store();

    /** The largest direct-I/O alignment among the devices. */
    int alignment();

    /** How the sequence's records are checksummed. */
    EntryChecksum checksum();

    /** Runs {@code body} as the handle's one owner thread (see {@link HandleGuard}). */
    <T> T exclusive(Supplier<T> body);

    /** Throws unless the handle is open and writable and no write failed. */
    void checkWritable();

    /** Throws unless the handle is open. */
    void checkOpen();

    /** Throws if a decoder of this sequence has a fetch in flight ({@code what} names the operation). */
    void checkNoFetchInFlight(String what);

    /** Writes the blocks queued so far (before a layout reads or retires them). */
    void flushWrites();

    /** Per layer: tokens, blocks, cluster and group layouts and what the last commit named. */
    ExtentLedger ledger();

    /** Something changed that the next commit must persist. */
    void changed();

    /**
     * The sequence's state of type {@code type} (a strategy's per-sequence caches), created by
     * {@code create} on first use; closed with the handle when it is {@link AutoCloseable}.
     */
    <T> T attachment(Class<T> type, Function<SequenceHooks, T> create);
}
