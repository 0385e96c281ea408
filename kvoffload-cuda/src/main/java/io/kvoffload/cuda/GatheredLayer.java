package io.kvoffload.cuda;

import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.spi.HostSlots;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A gathered layer view in host memory: the selected tokens' K and V laid out per KV head, their
 * int32 positions and a block table ({@link ViewLayout}), in a DRAM-tier slot that the CUDA tier has
 * page-locked, so a {@link LayerStreamBuffer} moves it to the GPU with one asynchronous DMA copy.
 *
 * <p>{@link #fill} reads from a {@link KvSequence} (token-major) into a staging area and lays the
 * rows out per head. Reuse: the buffer may be refilled once the copy that reads it is done
 * ({@link GpuLayerView#awaitCopied()}). Not thread-safe.
 */
public final class GatheredLayer implements AutoCloseable {
    private final KvShape shape;
    private final int blockTokens;
    private final int maxTokens;
    private final HostSlots.Lease lease;
    private final MemorySegment buffer;
    private final Arena stagingArena = Arena.ofShared();
    private final MemorySegment stagingK;
    private final MemorySegment stagingV;
    private int layer = -1;
    private ViewLayout layout;
    private boolean closed;

    /** A view of up to {@code maxTokens} tokens in a slot taken from {@code dram}. */
    public GatheredLayer(KvShape shape, int blockTokens, int maxTokens, HostSlots dram) {
        if (shape == null || dram == null) {
            throw new IllegalArgumentException("shape and dram must not be null");
        }
        if (maxTokens < 1) {
            throw new IllegalArgumentException("maxTokens = " + maxTokens + "; allowed: 1 or more");
        }
        this.shape = shape;
        this.blockTokens = blockTokens;
        this.maxTokens = maxTokens;
        long cap = ViewLayout.capacityBytes(shape.kvHeads(), shape.headDim(), shape.dtype().bytes(), blockTokens,
                maxTokens);
        this.lease = dram.acquire(cap);
        this.buffer = lease.segment().asSlice(0, cap);
        long half = (long) maxTokens * shape.halfEntryBytes();
        this.stagingK = stagingArena.allocate(half, 64);
        this.stagingV = stagingArena.allocate(half, 64);
        this.layout = new ViewLayout(shape.kvHeads(), shape.headDim(), shape.dtype().bytes(), blockTokens, 0);
    }

    public KvShape shape() {
        return shape;
    }

    public int maxTokens() {
        return maxTokens;
    }

    /** The layer the view holds, or -1 before the first fill. */
    public int layer() {
        return layer;
    }

    public ViewLayout layout() {
        return layout;
    }

    /** The page-locked host buffer (its first {@code layout().totalBytes()} bytes are the view). */
    public MemorySegment buffer() {
        return buffer;
    }

    /** Reads {@code positions} of {@code layer} from the sequence (DRAM or SSD) into this view. */
    public void fill(KvSequence sequence, int layer, int[] positions) {
        if (sequence == null || positions == null) {
            throw new IllegalArgumentException("sequence and positions must not be null");
        }
        if (!sequence.shape().equals(shape)) {
            throw new IllegalArgumentException("sequence shape " + sequence.shape() + " differs from the view's " + shape);
        }
        checkCount(positions.length);
        long bytes = (long) positions.length * shape.halfEntryBytes();
        sequence.read(layer, positions, stagingK.asSlice(0, bytes), stagingV.asSlice(0, bytes));
        set(layer, positions, stagingK, stagingV);
    }

    /**
     * Lays out K and V given token-major ({@code [token][kvHead][headDim]}, as {@link KvSequence#read}
     * writes them) for {@code positions}.
     */
    public void set(int layer, int[] positions, MemorySegment keysTokenMajor, MemorySegment valuesTokenMajor) {
        checkCount(positions.length);
        int n = positions.length;
        long need = (long) n * shape.halfEntryBytes();
        if (keysTokenMajor.byteSize() < need || valuesTokenMajor.byteSize() < need) {
            throw new IllegalArgumentException("keys/values hold " + keysTokenMajor.byteSize() + "/"
                    + valuesTokenMajor.byteSize() + " bytes; " + n + " tokens need " + need + " each");
        }
        ViewLayout l = new ViewLayout(shape.kvHeads(), shape.headDim(), shape.dtype().bytes(), blockTokens, n);
        long row = l.rowBytes();
        long tokenStride = shape.halfEntryBytes();
        for (int h = 0; h < shape.kvHeads(); h++) {
            long kOut = l.keysOffset(h);
            long vOut = l.valuesOffset(h);
            for (int t = 0; t < n; t++) {
                long in = t * tokenStride + h * row;
                MemorySegment.copy(keysTokenMajor, in, buffer, kOut + t * row, row);
                MemorySegment.copy(valuesTokenMajor, in, buffer, vOut + t * row, row);
            }
        }
        long pos = l.positionsOffset();
        for (int t = 0; t < n; t++) {
            buffer.set(ValueLayout.JAVA_INT_UNALIGNED, pos + 4L * t, positions[t]);
        }
        long table = l.blockTableOffset();
        for (int b = 0; b < l.blockCount(); b++) {
            buffer.set(ValueLayout.JAVA_INT_UNALIGNED, table + 4L * b, positions[b * blockTokens] / blockTokens);
        }
        this.layer = layer;
        this.layout = l;
    }

    private void checkCount(int n) {
        if (n < 1 || n > maxTokens) {
            throw new IllegalArgumentException("positions has " + n + " entries; allowed: 1.." + maxTokens
                    + " (the view's maxTokens)");
        }
    }

    /** Returns the slot to the DRAM tier. The caller has waited for copies that read it. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        lease.close();
        stagingArena.close();
    }
}
