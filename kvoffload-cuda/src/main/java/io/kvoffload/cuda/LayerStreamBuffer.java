package io.kvoffload.cuda;

import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.cuda.bindings.Cuda;
import io.kvoffload.cuda.bindings.CudaEvent;
import io.kvoffload.cuda.bindings.CudaStream;
import io.kvoffload.cuda.bindings.DeviceMemory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * SwiftCache's layer stream cache [SwiftCache §3.2–3.3] for sparse KV: device buffers that hold
 * only the layers in flight, {@code depth} slots used round-robin (2 = double-buffered: layer
 * {@code l + 1} is copied while layer {@code l}'s attention runs). A load copies the valid rows of a
 * {@link KvView} (gathered by {@link io.kvoffload.KvDecoder} into a DRAM slot the CUDA tier has
 * page-locked) with three asynchronous copies ({@link ViewUpload}: one strided copy for every head's
 * K and V, one for the positions, one for the block table; a fourth for the per-row head masks when
 * the view has {@link KvView#partialRows() partial rows}) on the buffer's own copy stream, and
 * records an event the kernel stream waits for; a slot is refilled only after the kernels that read
 * its previous layer, because the copy stream first waits for the slot's release event. Neither
 * wait blocks the host.
 */
public final class LayerStreamBuffer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(LayerStreamBuffer.class);

    private final CudaDeviceTier tier;
    private final KvShape shape;
    private final int blockTokens;
    private final int maxTokens;
    private final CudaStream copyStream;
    private final DeviceMemory[] slots;
    private final CudaEvent[] ready;
    private final CudaEvent[] released;
    private final boolean[] everReleased;
    private final GpuLayerView[] current;
    private long generation;
    private int next;
    private boolean closed;

    LayerStreamBuffer(CudaDeviceTier tier, KvShape shape, int blockTokens, int maxTokens, int depth) {
        if (depth < 1 || depth > 8) {
            throw new IllegalArgumentException("depth = " + depth + "; allowed: 1..8 (2 = double-buffered)");
        }
        if (maxTokens < 1) {
            throw new IllegalArgumentException("maxTokens = " + maxTokens + "; allowed: 1 or more");
        }
        this.tier = tier;
        this.shape = shape;
        this.blockTokens = blockTokens;
        this.maxTokens = maxTokens;
        long cap = ViewLayout.capacityBytes(shape.kvHeads(), shape.headDim(), shape.dtype().bytes(), blockTokens,
                maxTokens);
        this.slots = new DeviceMemory[depth];
        this.ready = new CudaEvent[depth];
        this.released = new CudaEvent[depth];
        this.everReleased = new boolean[depth];
        this.current = new GpuLayerView[depth];
        CudaStream s = null;
        try {
            s = CudaStream.createNonBlocking();
            for (int i = 0; i < depth; i++) {
                slots[i] = DeviceMemory.allocate(cap);
                ready[i] = CudaEvent.create();
                released[i] = CudaEvent.create();
            }
        } catch (RuntimeException e) {
            this.copyStream = s;
            close();
            throw e;
        }
        this.copyStream = s;
    }

    public int depth() {
        return slots.length;
    }

    public int maxTokens() {
        return maxTokens;
    }

    /** The stream the copies run on. */
    public CudaStream copyStream() {
        return copyStream;
    }

    /**
     * Starts copying {@code view}'s valid rows into the next slot and returns the device view it
     * will hold. Returns at once; the device view is usable by kernels that
     * {@link GpuLayerView#waitOn} it. The copy reads the KvView's DRAM slot while it runs: keep the
     * KvView open until {@link GpuLayerView#awaitCopied()} returns (or {@link GpuLayerView#ready()}
     * is done), since closing it lets the decoder refill that slot.
     *
     * @throws IllegalStateException if the view is not ready, the buffer is closed, or the slot's
     *     previous device view was never released
     * @throws IllegalArgumentException if the view's shape, block size or token count does not fit
     */
    public synchronized GpuLayerView load(KvView view) {
        if (closed) {
            throw new IllegalStateException("layer stream buffer is closed");
        }
        // Planned (and every range of the view checked) before any slot state changes.
        ViewUpload plan = ViewUpload.plan(view, shape, blockTokens, maxTokens);
        tier.makeCurrent();
        int i = next;
        if (current[i] != null) {
            if (!everReleased[i]) {
                // Without the release event the copy could overwrite bytes a kernel still reads.
                throw new IllegalStateException(current[i] + " was never released; call release(kernelStream)"
                        + " after queueing the kernels that read it, before loading layer " + plan.layer()
                        + " into its slot");
            }
            copyStream.waitFor(released[i]);
        }
        next = (next + 1) % slots.length;
        everReleased[i] = false;
        int calls = 0;
        try {
            for (ViewUpload.RowCopy c : plan.copies()) {
                calls += Cuda.copyRowsToDeviceAsync(slots[i], c.dstOffset(), c.dstPitch(), c.rows(), c.rowBytes(),
                        copyStream);
            }
            ready[i].record(copyStream);
        } catch (RuntimeException e) {
            // The slot holds part of a layer: no view may point at it.
            current[i] = null;
            throw e;
        }
        GpuLayerView v = new GpuLayerView(this, i, slots[i], ready[i], released[i], plan.layer(), plan.layout(),
                plan.partialRows(), ++generation, calls, plan.bytes());
        current[i] = v;
        if (LOG.isTraceEnabled()) {
            LOG.trace("layer {}: {} tokens, {} bytes in {} copies into slot {}", plan.layer(), plan.layout().tokens(),
                    plan.bytes(), calls, i);
        }
        return v;
    }

    synchronized void checkCurrent(GpuLayerView v) {
        if (closed) {
            throw new IllegalStateException("layer stream buffer is closed");
        }
        if (current[v.slot()] != v) {
            throw new IllegalStateException(v + " was overwritten by a later load into its slot");
        }
    }

    /** Marks that a release event was recorded for slot {@code i} (called through the view). */
    synchronized void markReleased(int slot) {
        everReleased[slot] = true;
    }

    /** Blocks until every copy queued so far is done. */
    public void synchronize() {
        if (copyStream != null && !copyStream.isClosed()) {
            tier.makeCurrent();
            copyStream.synchronize();
        }
    }

    /** Drains the copy stream, then frees the slots, events and stream. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        tier.forget(this);
        if (copyStream != null) {
            copyStream.synchronize();
        }
        for (int i = 0; i < slots.length; i++) {
            if (slots[i] != null) {
                slots[i].close();
            }
            if (ready[i] != null) {
                ready[i].close();
            }
            if (released[i] != null) {
                released[i].close();
            }
        }
        if (copyStream != null) {
            copyStream.close();
        }
    }
}
