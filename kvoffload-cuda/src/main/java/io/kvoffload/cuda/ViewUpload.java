package io.kvoffload.cuda;

import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.internal.decode.ViewAccess;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * What loading a {@link KvView} into a {@link LayerStreamBuffer} slot copies, planned in pure Java
 * (so it is tested without a GPU): only the view's valid rows, from the segments the view exposes,
 * to the offsets of the slot's {@link ViewLayout}. Three copies, four for a view with partial rows:
 *
 * <ol>
 *   <li>K and V: {@code 2 × kvHeads} rows of {@code tokenCount × rowBytes}, the first
 *       {@code tokenCount} rows of {@link KvView#keys}(0..H-1) then {@link KvView#values}(0..H-1),
 *       to consecutive heads of the slot. The view spaces its head segments evenly (one head stride
 *       for keys and values alike), so the bindings move all of them with one strided copy
 *       (cudaMemcpy2DAsync) instead of one copy per head;
 *   <li>the first {@code tokenCount} int32 positions;
 *   <li>the first {@code ceil(tokenCount / blockTokens)} int32 block-table entries;
 *   <li>only when {@link KvView#partialRows()} (a per-head strategy under {@code HEAD_SHARDED}): the
 *       first {@code tokenCount} int64 head masks ({@link KvView#headMask(int)}), which the view keeps
 *       in its DRAM slot beside the positions ({@link ViewAccess#headMasks}), so one copy moves them.
 *       A kernel must leave out the (row, head) pairs whose bit is clear: their K/V bytes are
 *       undefined. A view whose rows are all whole copies no masks.
 * </ol>
 *
 * The unused capacity of the view's segments (rows past {@code tokenCount}) is never copied.
 *
 * @param layout the device layout the copies fill
 * @param layer the view's layer
 * @param partialRows whether the view has partial rows, so the head masks are among the copies
 * @param copies the copies, in order
 */
record ViewUpload(ViewLayout layout, int layer, boolean partialRows, List<RowCopy> copies) {
    /**
     * Equally long host rows copied to {@code dstOffset + i × dstPitch} of the slot.
     *
     * @param what what the rows hold, for messages
     * @param rows host segments; the first {@code rowBytes} of each are copied
     */
    record RowCopy(String what, MemorySegment[] rows, long rowBytes, long dstOffset, long dstPitch) {
        /** Bytes the copy moves. */
        long bytes() {
            return rows.length * rowBytes;
        }
    }

    /**
     * Plans the upload of {@code view} into a slot of a buffer for {@code shape}, {@code blockTokens}
     * and up to {@code maxTokens} tokens, after checking that the view fits it.
     *
     * @throws IllegalStateException if the view is not ready (still fetching, or closed)
     * @throws IllegalArgumentException if its shape, block size or token count does not fit the
     *     buffer
     */
    static ViewUpload plan(KvView view, KvShape shape, int blockTokens, int maxTokens) {
        if (view == null) {
            throw new IllegalArgumentException("view is null; pass a KvView from KvDecoder.prefetch");
        }
        if (!view.isReady()) {
            throw new IllegalStateException("the KvView is not ready (still fetching, or closed); await() it, and keep"
                    + " it open until the copy is done (GpuLayerView.awaitCopied)");
        }
        if (!view.shape().equals(shape) || view.blockTokens() != blockTokens) {
            throw new IllegalArgumentException("the KvView has shape " + view.shape() + " and blockTokens "
                    + view.blockTokens() + "; this buffer holds " + shape + " with blockTokens " + blockTokens);
        }
        int n = view.tokenCount();
        if (n > maxTokens) {
            throw new IllegalArgumentException("the KvView of layer " + view.layer() + " holds " + n
                    + " tokens; allowed: 0.." + maxTokens + " (the buffer's maxTokens)");
        }
        int heads = shape.kvHeads();
        ViewLayout l = new ViewLayout(heads, shape.headDim(), shape.dtype().bytes(), blockTokens, n);
        long width = l.headStride(); // a head's valid rows: tokenCount × rowBytes
        MemorySegment[] kv = new MemorySegment[2 * heads];
        for (int h = 0; h < heads; h++) {
            kv[h] = view.keys(h).asSlice(0, width);
            kv[heads + h] = view.values(h).asSlice(0, width);
        }
        long posBytes = 4L * n;
        long tableBytes = 4L * l.blockCount();
        RowCopy kvCopy = new RowCopy("K and V", kv, width, l.keysOffset(0), l.headStride());
        RowCopy posCopy = new RowCopy("positions", new MemorySegment[] {view.positions().asSlice(0, posBytes)},
                posBytes, l.positionsOffset(), posBytes);
        RowCopy tableCopy = new RowCopy("block table", new MemorySegment[] {view.blockTable().asSlice(0, tableBytes)},
                tableBytes, l.blockTableOffset(), tableBytes);
        boolean partial = view.partialRows();
        if (!partial) {
            return new ViewUpload(l, view.layer(), false, List.of(kvCopy, posCopy, tableCopy));
        }
        long maskBytes = l.headMasksBytes();
        RowCopy maskCopy = new RowCopy("head masks", new MemorySegment[] {ViewAccess.headMasks(view).asSlice(0,
                maskBytes)}, maskBytes, l.headMasksOffset(), maskBytes);
        return new ViewUpload(l, view.layer(), true, List.of(kvCopy, posCopy, tableCopy, maskCopy));
    }

    /** Bytes the upload moves (valid rows only). */
    long bytes() {
        long b = 0;
        for (RowCopy c : copies) {
            b += c.bytes();
        }
        return b;
    }
}
