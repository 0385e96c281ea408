package io.kvoffload;

import io.kvoffload.internal.dram.DramPool;
import io.kvoffload.internal.decode.ViewAccess;
import io.kvoffload.internal.decode.ViewBuffer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The gathered KV of one layer for one decoding step, in DRAM, as an attention kernel wants it:
 * {@link #tokenCount()} tokens (sinks, the selected clusters' tokens, the local window), and for
 * each KV head the keys and the values of those tokens contiguous ({@code tokenCount × headDim}
 * elements in the sequence's dtype, token after token), plus every token's position in the
 * sequence and a block table for paged kernels.
 *
 * <p>A view comes from {@link KvDecoder#prefetch}; {@link #await()} waits for its reads. It stays
 * valid until {@link #close()}, which hands its memory back to the decoder for a later fetch.
 * Positions are distinct but not sorted.
 *
 * <p>The segments returned by {@link #keys(int)} and friends span the view's capacity; only the
 * first {@link #tokenCount()} rows hold data this step. They belong to a scope of their own that
 * {@link #close()} ends: reading one afterwards throws {@link IllegalStateException}, where it
 * would otherwise show whatever the memory holds next (a later step, or another sequence once the
 * decoder is closed). That scope is a shared {@link Arena} created at the first such call of a
 * step, so a step that asks for segments costs one arena, one small segment object per segment
 * asked for, and the arena's close; prefetch, await and close alone allocate nothing, and
 * {@link SparseAttention} reads the view without creating segments.
 *
 * <p><b>Threads.</b> {@link #await()} and {@link #close()} go through the decoder and follow its
 * rule: one thread at a time (not necessarily the same one). The accessors take no lock: once
 * {@code await()} has returned, several threads may read the view at once if each got it through
 * a happens-before edge from the awaiting thread and all of them finish before {@code close()}.
 * Take the segments ({@link #keys}, {@link #values}, {@link #positions}, {@link #blockTable}) on
 * one thread and hand them on: the first such call of a step creates their scope unsynchronised.
 * The view is valid until its {@code close()}, a failed {@code await()}, or the decoder's or
 * engine's close; then a kept segment throws {@link IllegalStateException}, but an accessor racing
 * the close may read reused memory. The decoder reuses this object for a later
 * {@link KvDecoder#prefetch}: drop references to it at {@code close()}.
 *
 * <p>Every accessor but {@link #shape()} and {@link #blockTokens()} throws
 * {@link IllegalStateException} before {@code await()} has returned or after {@code close()}.
 */
public final class KvView implements AutoCloseable {
    enum State { FREE, FETCHING, READY }

    static {
        // The attention kernels in io.kvoffload.attention read the rows the way SparseAttention does.
        ViewAccess.install(new ViewAccess.Accessor() {
            @Override
            public MemorySegment keys(KvView view, int kvHead) {
                return view.rawKeys(kvHead);
            }

            @Override
            public MemorySegment values(KvView view, int kvHead) {
                return view.rawValues(kvHead);
            }

            @Override
            public boolean partialRows(KvView view) {
                return view.partialRows();
            }

            @Override
            public long headMask(KvView view, int row) {
                return view.rows.headMask(row); // the kernels check the row against tokenCount once per view
            }

            @Override
            public MemorySegment headMasks(KvView view) {
                view.checkReady();
                return view.rows.headMasks();
            }
        });
    }

    private final KvDecoder decoder;
    final int slot;
    private final KvShape shape;
    /** The rows the fetch pipeline writes. */
    final ViewBuffer rows;
    State state = State.FREE;
    /** The scope of the segments handed out this step (null until the first is asked for); closed by {@link #invalidate}. */
    private Arena handedOut;
    private final MemorySegment[] outKeys;
    private final MemorySegment[] outValues;
    private MemorySegment outPositions;
    private MemorySegment outBlockTable;

    KvView(KvDecoder decoder, int slot, KvShape shape, int blockTokens) {
        this.decoder = decoder;
        this.slot = slot;
        this.shape = shape;
        this.rows = new ViewBuffer(shape, blockTokens);
        this.outKeys = new MemorySegment[shape.kvHeads()];
        this.outValues = new MemorySegment[shape.kvHeads()];
    }

    /** {@code raw} as a segment of this step's scope, which {@link #invalidate} ends. */
    private MemorySegment handOut(MemorySegment raw) {
        if (handedOut == null) {
            handedOut = Arena.ofShared();
        }
        // Same memory, but its lifetime is the step's, not the DRAM slab's.
        return raw.reinterpret(handedOut, null);
    }

    /**
     * Ends the scope of every segment handed out this step (called when the view is closed or its
     * fetch fails, before its memory can be reused). Closing a shared arena makes every thread
     * still reading one of its segments fail cleanly.
     */
    void invalidate() {
        Arena a = handedOut;
        if (a == null) {
            return;
        }
        handedOut = null;
        java.util.Arrays.fill(outKeys, null);
        java.util.Arrays.fill(outValues, null);
        outPositions = null;
        outBlockTable = null;
        a.close();
    }

    void free(DramPool dram) {
        invalidate();
        rows.free(dram);
    }

    private void checkReady() {
        if (state != State.READY) {
            throw new IllegalStateException(state == State.FETCHING
                    ? "view of layer " + rows.layer() + " is still fetching; call await() first"
                    : decoder.isClosing() ? "view of layer " + rows.layer() + " is closed: its " + decoder.closedMessage()
                    : "view was closed; take a new one from KvDecoder.prefetch");
        }
    }

    /**
     * Waits for this view's reads and finishes it (checksums, gathering, cache update).
     *
     * @return this view
     * @throws KvChecksumException if an entry read back does not match its CRC32C (the view is closed)
     * @throws KvIoException if a read failed (the view is closed)
     */
    public KvView await() {
        if (state == State.FETCHING) {
            decoder.complete(this);
        }
        checkReady();
        return this;
    }

    /** Whether {@link #await()} has completed. */
    public boolean isReady() {
        return state == State.READY;
    }

    /** The layer this view holds. */
    public int layer() {
        checkReady();
        return rows.layer();
    }

    /** Tokens in the view. */
    public int tokenCount() {
        checkReady();
        return rows.rows();
    }

    /** Sequence position of row {@code row}. */
    public int position(int row) {
        checkReady();
        return rows.position(java.util.Objects.checkIndex(row, rows.rows()));
    }

    /**
     * Whether some row holds only some KV heads. A per-head strategy (one whose {@code FetchPlan}
     * names the KV heads a position is for, {@link io.kvoffload.strategy.FetchPlan#add(int, long)})
     * gets its rows read for those heads only when the layout stores heads apart
     * ({@link Placement#HEAD_SHARDED}); then a row holds the head groups that were read, and
     * {@link #headMask(int)} says which. False when every row holds every KV head: always for
     * shared-set strategies and under {@link Placement#TOKEN_STRIPED}.
     */
    public boolean partialRows() {
        checkReady();
        return rows.partialRows();
    }

    /**
     * The KV heads row {@code row} holds: bit {@code h} is set when the row's K and V of KV head
     * {@code h} are the token's (bits at or above {@code kvHeads} carry no meaning; -1 when the row
     * is whole). The K and V of a head whose bit is clear are undefined bytes: an attention kernel
     * leaves that (row, head) pair out, as {@link SparseAttention} and
     * {@link io.kvoffload.attention.DecodeAttention} do.
     */
    public long headMask(int row) {
        checkReady();
        return rows.headMask(java.util.Objects.checkIndex(row, rows.rows()));
    }

    /**
     * Positions of all rows as int32 (capacity-long; the first {@link #tokenCount()} are valid).
     * Readable until {@link #close()}.
     */
    public MemorySegment positions() {
        checkReady();
        if (outPositions == null) {
            outPositions = handOut(rows.positions());
        }
        return outPositions;
    }

    /**
     * Keys of {@code kvHead}: row after row, {@code headDim} elements each, in the sequence's
     * dtype. Readable until {@link #close()}.
     */
    public MemorySegment keys(int kvHead) {
        checkReady();
        int h = java.util.Objects.checkIndex(kvHead, outKeys.length);
        if (outKeys[h] == null) {
            outKeys[h] = handOut(rows.keys(h));
        }
        return outKeys[h];
    }

    /** Values of {@code kvHead}, laid out like {@link #keys(int)}. Readable until {@link #close()}. */
    public MemorySegment values(int kvHead) {
        checkReady();
        int h = java.util.Objects.checkIndex(kvHead, outValues.length);
        if (outValues[h] == null) {
            outValues[h] = handOut(rows.values(h));
        }
        return outValues[h];
    }

    /** The view's own slice of keys (lives as long as the decoder): for library code that never keeps it. */
    MemorySegment rawKeys(int kvHead) {
        checkReady();
        return rows.keys(java.util.Objects.checkIndex(kvHead, outKeys.length));
    }

    /** See {@link #rawKeys}. */
    MemorySegment rawValues(int kvHead) {
        checkReady();
        return rows.values(java.util.Objects.checkIndex(kvHead, outValues.length));
    }

    /**
     * Block table for paged kernels: int32 physical block of each logical block of
     * {@link #blockTokens()} rows, in the per-head key and value segments. Readable until
     * {@link #close()}.
     */
    public MemorySegment blockTable() {
        checkReady();
        if (outBlockTable == null) {
            outBlockTable = handOut(rows.blockTable());
        }
        return outBlockTable;
    }

    /** Logical blocks in use: {@code ceil(tokenCount / blockTokens)}. */
    public int blockCount() {
        checkReady();
        return (rows.rows() + rows.blockTokens() - 1) / rows.blockTokens();
    }

    /** Rows per block of {@link #blockTable()}. */
    public int blockTokens() {
        return rows.blockTokens();
    }

    /** The sequence's shape (valid at any time, also after close). */
    public KvShape shape() {
        return shape;
    }

    /** Hands the view back to its decoder (waiting for its reads first if needed). Idempotent. */
    @Override
    public void close() {
        decoder.release(this);
    }
}
