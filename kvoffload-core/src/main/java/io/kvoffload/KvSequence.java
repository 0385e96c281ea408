package io.kvoffload;

import io.kvoffload.internal.sequence.BlockWriter;
import io.kvoffload.internal.sequence.CommitProtocol;
import io.kvoffload.internal.sequence.DTypeArrays;
import io.kvoffload.internal.sequence.FloatKv;
import io.kvoffload.internal.sequence.ExtentLedger;
import io.kvoffload.internal.sequence.HandleGuard;
import io.kvoffload.internal.sequence.SequenceAccess;
import io.kvoffload.internal.sequence.SequenceHooks;
import io.kvoffload.internal.sequence.SequenceFork;
import io.kvoffload.internal.sequence.SequenceReader;
import io.kvoffload.internal.sequence.TokenIds;
import io.kvoffload.internal.storage.DevicePool;
import io.kvoffload.internal.storage.EntryChecksum;
import io.kvoffload.internal.storage.Layout;
import io.kvoffload.internal.storage.Manifest;
import io.kvoffload.internal.storage.Store;
import io.kvoffload.internal.util.Checks;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * One context's KV cache: token ids plus, for every layer, one K and V entry per token.
 *
 * <p>Writing: {@link #appendTokens} declares new token positions (prefill chunk or one decode
 * token), then {@link #appendKv} supplies each layer's K and V for them; full blocks stream to the
 * SSDs as they fill. {@link #commit} makes everything appended so far durable and visible to
 * {@link KvEngine#openSequence} and prefix lookup, also after a restart. Reading:
 * {@link #read} gathers any set of token positions of a layer into caller buffers, from DRAM or
 * from the SSDs (verifying each extent's CRC32C).
 *
 * <p>K and V tensors are token-major: for each token {@code kvHeads × headDim} elements, head after
 * head, in the shape's dtype. A handle is used by one thread at a time; different sequences may be
 * used from different threads concurrently. Close every handle: an open sequence is never evicted.
 */
public final class KvSequence implements AutoCloseable {
    static {
        SequenceAccess.install(s -> s.hooks);
    }

    private final KvEngine engine;
    private final Store store;
    private final String id;
    private final KvShape shape;
    private final int blockTokens;
    /** The largest direct-I/O alignment among the devices: extents and reads are aligned to it. */
    private final int alignment;
    private final boolean writable;
    /** How this sequence's records are checksummed: with its identity, unless first committed before manifest v5. */
    private final EntryChecksum checksum;

    private final TokenIds tokens;
    /** Per layer: tokens held, block table, the strategies' layouts, and what the last commit named. */
    private final ExtentLedger ledger;
    private final BlockWriter writer;
    private final SequenceReader reader;
    private final CommitProtocol commits;
    /** Strategies' per-sequence state ({@link SequenceHooks#attachment}), closed with the handle. */
    private final Map<Class<?>, Object> attachments = new LinkedHashMap<>();
    private final SequenceHooks hooks = new Hooks();
    private final DTypeArrays arrays;
    /** Whether anything changed since the last commit. */
    private boolean dirty;
    /** One thread at a time; closing. */
    private final HandleGuard guard;
    private final SequenceDecoders decoders = new SequenceDecoders();

    /** A new, empty, writable sequence. */
    KvSequence(KvEngine engine, Store store, String id, KvShape shape) {
        this(engine, store, id, shape, store.config().blockTokens(), true, EntryChecksum.forSequence(id), null,
                new TokenIds(), new ExtentLedger(store, shape.layers(), store.config().blockTokens()));
    }

    /** A handle on a committed sequence. */
    KvSequence(KvEngine engine, Store store, Manifest m, boolean writable) {
        this(engine, store, m.id(), m.shape(), m.blockTokens(), writable, m.entryChecksum(), m,
                new TokenIds(m.tokenIds()), new ExtentLedger(store, m, writable));
    }

    /**
     * A fork ({@link KvEngine#fork}): a new, writable, uncommitted sequence {@code id} holding the
     * first {@code prefix} tokens of committed {@code source}, whose blocks {@code ledger} shares.
     */
    KvSequence(KvEngine engine, Store store, String id, Manifest source, int prefix, ExtentLedger ledger) {
        this(engine, store, id, source.shape(), source.blockTokens(), true, EntryChecksum.forSequence(id), null,
                new TokenIds(Arrays.copyOf(source.tokenIds(), prefix)), ledger);
        this.dirty = true; // committable as it is: the prefix alone is a sequence
    }

    private KvSequence(KvEngine engine, Store store, String id, KvShape shape, int blockTokens, boolean writable,
            EntryChecksum checksum, Manifest last, TokenIds tokens, ExtentLedger ledger) {
        this.tokens = tokens;
        this.ledger = ledger;
        this.engine = engine;
        this.guard = new HandleGuard(this, "sequence " + id, engine::isClosed, engine::checkOpen);
        this.checksum = checksum;
        this.store = store;
        this.id = id;
        this.shape = shape;
        this.blockTokens = blockTokens;
        this.alignment = store.devices().stream().mapToInt(DevicePool::alignment).max().orElse(4096);
        long extentBytes = Layout.extentBytes(shape, blockTokens, alignment);
        this.writable = writable;
        this.reader = new SequenceReader(store, ledger, id, shape, checksum, blockTokens, extentBytes, alignment);
        this.writer = new BlockWriter(store, ledger, id, shape, checksum, blockTokens, extentBytes, reader::loadBlock);
        this.commits = new CommitProtocol(store, ledger, writer, id, shape, blockTokens, checksum, last);
        this.arrays = new DTypeArrays(shape.dtype());
    }

    /** Largest block extent the engine accepts: a quarter of the DRAM budget, at most 1 GiB. */
    static long maxExtentBytes(Store store) {
        return Math.min(1L << 30, store.config().dramBudgetBytes() / 4);
    }

    public String id() {
        return id;
    }

    public KvShape shape() {
        return shape;
    }

    /** Tokens per block (the unit of placement, I/O and checksums) of this sequence. */
    public int blockTokens() {
        return blockTokens;
    }

    /** Token positions declared with {@link #appendTokens}. */
    public int tokenCount() {
        return tokens.count();
    }

    /** Tokens whose KV has been appended for {@code layer}. */
    public int tokenCount(int layer) {
        Checks.index("layer", layer, shape.layers());
        return ledger.layer(layer).tokens();
    }

    /** A copy of the token ids. */
    public int[] tokenIds() {
        return tokens.toArray();
    }

    public boolean isWritable() {
        return writable;
    }

    /** Whether the last {@link #commit} covers everything appended. */
    public boolean isCommitted() {
        return commits.committed() && !dirty;
    }

    /**
     * Declares new token positions with their token ids (a prefill chunk or one decode token).
     * Their KV follows per layer through {@link #appendKv}.
     */
    public void appendTokens(int... ids) {
        guard.run(() -> {
            checkWritable();
            tokens.append(ids);
            if (ids.length > 0) {
                dirty = true;
            }
        });
    }

    /**
     * Appends K and V of the next tokens of {@code layer}. Both segments hold the same number of
     * tokens, {@code kvHeads × headDim} elements each, in the shape's dtype.
     */
    public void appendKv(int layer, MemorySegment keys, MemorySegment values) {
        guard.run(() -> {
            checkWritable();
            Checks.index("layer", layer, shape.layers());
            int held = ledger.layer(layer).tokens();
            try {
                writer.append(layer, keys, values, tokens.count());
            } finally {
                dirty |= ledger.layer(layer).tokens() != held;
            }
        });
    }

    /**
     * {@link #appendKv(int, MemorySegment, MemorySegment)} from floats, for a sequence of any dtype:
     * F16 and BF16 sequences get them converted (round to nearest even), in chunks of whole tokens
     * each appended as converted, for an engine that computes in float32.
     *
     * @throws IllegalArgumentException if the lengths differ or are not whole tokens ({@code kvHeads × headDim} floats each)
     */
    public void appendKv(int layer, float[] keys, float[] values) {
        FloatKv.append(shape, keys, values, (k, v) -> appendKv(layer, k, v));
    }

    /** {@link #appendKv(int, MemorySegment, MemorySegment)} for F16 and BF16 sequences (raw bit patterns). */
    public void appendKv(int layer, short[] keys, short[] values) {
        appendKv(layer, arrays.f16("keys", keys), DTypeArrays.of("values", values));
    }

    /**
     * Makes everything appended so far durable: partial last blocks are written, the devices are
     * synced, and a new manifest atomically replaces the previous one. After a crash at any point
     * the sequence is either in its previous committed state or in this one.
     *
     * @throws IllegalStateException if a layer lacks KV for some token, or nothing changed since the
     *     last commit
     * @throws KvIoException if a block write, a device sync or the manifest write fails; the previous
     *     commit is intact (docs/architecture.md, "Errors")
     */
    public void commit() {
        guard.run(() -> {
            checkWritable();
            decoders.checkNoFetchInFlight("commit", id);
            commits.commit(tokens, dirty);
            dirty = false;
        });
        engine.committed(this);
    }

    /**
     * Gathers the K and V of {@code positions} (any order, repeats allowed) of {@code layer} into
     * {@code keysOut} and {@code valuesOut}, token-major in the order given. Data comes from DRAM
     * when the block is still there, else from the SSDs, each extent checked against its CRC32C.
     *
     * @throws KvChecksumException if an extent read back does not match its checksum
     */
    public void read(int layer, int[] positions, MemorySegment keysOut, MemorySegment valuesOut) {
        guard.run(() -> {
            guard.checkOpen();
            Checks.index("layer", layer, shape.layers());
            reader.read(layer, positions, keysOut, valuesOut, writer.tail(layer));
        });
    }

    /** Reads tokens {@code [from, from + count)} of {@code layer}. */
    public void read(int layer, int from, int count, MemorySegment keysOut, MemorySegment valuesOut) {
        guard.run(() -> {
            guard.checkOpen();
            Checks.index("layer", layer, shape.layers());
            read(layer, reader.range(layer, from, count), keysOut, valuesOut);
        });
    }

    /** {@link #read(int, int[], MemorySegment, MemorySegment)} into arrays, for F32 sequences. */
    public void read(int layer, int[] positions, float[] keysOut, float[] valuesOut) {
        guard.run(() -> read(layer, positions, arrays.f32("keysOut", keysOut), DTypeArrays.of("valuesOut", valuesOut)));
    }

    /** {@link #read(int, int[], MemorySegment, MemorySegment)} into arrays, for F16/BF16 sequences. */
    public void read(int layer, int[] positions, short[] keysOut, short[] valuesOut) {
        guard.run(() -> read(layer, positions, arrays.f16("keysOut", keysOut), DTypeArrays.of("valuesOut", valuesOut)));
    }

    /**
     * A decoder for this sequence (the online phase): per step and layer its strategy selects and the
     * fetch pipeline fetches and gathers the KV the query needs. Layers the strategy laid out
     * ({@link io.kvoffload.strategy.SelectionStrategy#layOut}) are fetched selectively; a layer with
     * no layout is attended in full from DRAM. Closing the sequence closes its decoders.
     */
    public KvDecoder decoder(DecodeOptions options) {
        return guard.call(() -> {
            guard.checkOpen();
            Checks.notNull("options", options);
            KvDecoder d = new KvDecoder(this, store, options, alignment);
            decoders.add(d);
            return d;
        });
    }

    /**
     * A fork's second step, off the store's lock: copies the prefix tokens its source keeps only in
     * a layout into blocks of its own ({@link SequenceFork#copyLaidOut}); returns the bytes copied.
     */
    long copyLaidOut(Manifest source) {
        return guard.call(() -> SequenceFork.copyLaidOut(store, source, ledger, writer, alignment));
    }

    void decoderClosed(KvDecoder d) {
        decoders.remove(d);
    }

    boolean engineClosed() {
        return engine.isClosed();
    }

    private void checkWritable() {
        guard.checkOpen();
        if (!writable) {
            throw new IllegalStateException("sequence " + id + " was opened read-only; use"
                    + " KvEngine.openSequenceForAppend to extend it");
        }
        writer.checkNotBroken();
    }

    /**
     * Releases the handle. Anything appended since the last commit is discarded (its extents are
     * freed); the last commit stays.
     */
    @Override
    public void close() {
        guard.close(() -> {
            decoders.closeAll();
            guard.markClosed();
            try {
                if (writable) {
                    writer.releaseTails();
                    ledger.freeUncommitted();
                }
            } finally {
                closeAttachments();
                engine.released(this, commits.committed());
            }
        });
    }

    private void closeAttachments() {
        for (Object a : attachments.values()) {
            if (a instanceof AutoCloseable c) {
                try {
                    c.close();
                } catch (Exception e) {
                    throw new IllegalStateException("closing " + a + " of sequence " + id + " failed", e);
                }
            }
        }
        attachments.clear();
    }

    /** The hooks strategies' layout code uses ({@link SequenceAccess}); not public API. */
    private final class Hooks implements SequenceHooks {
        @Override
        public KvSequence sequence() {
            return KvSequence.this;
        }

        @Override
        public Store store() {
            return store;
        }

        @Override
        public int alignment() {
            return alignment;
        }

        @Override
        public EntryChecksum checksum() {
            return checksum;
        }

        @Override
        public <T> T exclusive(Supplier<T> body) {
            return guard.call(body);
        }

        @Override
        public void checkWritable() {
            KvSequence.this.checkWritable();
        }

        @Override
        public void checkOpen() {
            guard.checkOpen();
        }

        @Override
        public void checkNoFetchInFlight(String what) {
            decoders.checkNoFetchInFlight(what, id);
        }

        @Override
        public void flushWrites() {
            writer.flush();
        }

        @Override
        public ExtentLedger ledger() {
            return ledger;
        }

        @Override
        public void changed() {
            dirty = true;
        }

        @Override
        public <T> T attachment(Class<T> type, Function<SequenceHooks, T> create) {
            return type.cast(attachments.computeIfAbsent(type, t -> create.apply(this)));
        }
    }

    @Override
    public String toString() {
        return "KvSequence{" + id + ", " + tokens.count() + " tokens, " + shape + (writable ? ", writable" : "") + "}";
    }
}
