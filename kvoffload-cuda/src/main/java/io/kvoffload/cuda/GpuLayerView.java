package io.kvoffload.cuda;

import io.kvoffload.cuda.bindings.CudaEvent;
import io.kvoffload.cuda.bindings.CudaStream;
import io.kvoffload.cuda.bindings.DeviceMemory;
import jcuda.driver.CUdeviceptr;
import jcuda.runtime.cudaStream_t;

/**
 * A gathered layer on the GPU, in a {@link LayerStreamBuffer} slot, loaded from a
 * {@link io.kvoffload.KvView}: per-head K and V, token positions and the block table at the offsets
 * of its {@link ViewLayout}. Pointers come as JCuda {@link CUdeviceptr}s and as raw addresses (for
 * kernels launched through other bindings). Every row holds every KV head: a
 * {@link io.kvoffload.KvView} with {@link io.kvoffload.KvView#partialRows() partial rows} is refused by
 * {@link LayerStreamBuffer#load}, since no head masks are uploaded.
 *
 * <p>The copies that fill it run on the buffer's copy stream; before reading it, the engine's
 * kernel stream waits for {@link #ready} with {@link #waitOn(cudaStream_t)} (on the GPU, not the
 * host), and after its kernels are queued it calls {@link #release(cudaStream_t)} so the slot is
 * refilled only once they are done.
 */
public final class GpuLayerView {
    private final LayerStreamBuffer owner;
    private final int slot;
    private final DeviceMemory memory;
    private final CudaEvent ready;
    private final CudaEvent released;
    private final int layer;
    private final ViewLayout layout;
    private final long generation;
    private final int copyCalls;
    private final long copiedBytes;

    GpuLayerView(LayerStreamBuffer owner, int slot, DeviceMemory memory, CudaEvent ready, CudaEvent released, int layer,
            ViewLayout layout, long generation, int copyCalls, long copiedBytes) {
        this.owner = owner;
        this.slot = slot;
        this.memory = memory;
        this.ready = ready;
        this.released = released;
        this.layer = layer;
        this.layout = layout;
        this.generation = generation;
        this.copyCalls = copyCalls;
        this.copiedBytes = copiedBytes;
    }

    public int layer() {
        return layer;
    }

    public int tokens() {
        return layout.tokens();
    }

    public ViewLayout layout() {
        return layout;
    }

    /** Which of the buffer's slots holds the view. */
    public int slot() {
        return slot;
    }

    public CUdeviceptr keys(int head) {
        return memory.pointer(layout.keysOffset(head));
    }

    public long keysAddress(int head) {
        return memory.address(layout.keysOffset(head));
    }

    public CUdeviceptr values(int head) {
        return memory.pointer(layout.valuesOffset(head));
    }

    public long valuesAddress(int head) {
        return memory.address(layout.valuesOffset(head));
    }

    /** int32 token positions on the device. */
    public CUdeviceptr positions() {
        return memory.pointer(layout.positionsOffset());
    }

    public long positionsAddress() {
        return memory.address(layout.positionsOffset());
    }

    /**
     * int32 block table on the device: the physical block (in every head's K and V) of each logical
     * block of {@code blockTokens} rows, as the KvView gave it ({@link ViewLayout}).
     */
    public CUdeviceptr blockTable() {
        return memory.pointer(layout.blockTableOffset());
    }

    public long blockTableAddress() {
        return memory.address(layout.blockTableOffset());
    }

    public int blockCount() {
        return layout.blockCount();
    }

    /** Recorded on the copy stream after the copy: the point kernels wait for. */
    public CudaEvent ready() {
        return ready;
    }

    /** Makes later work on the engine's {@code kernelStream} wait for the copy, without blocking the host. */
    public void waitOn(cudaStream_t kernelStream) {
        owner.checkCurrent(this);
        CudaStream.waitFor(kernelStream, ready);
    }

    /**
     * Marks the view consumed by the work queued so far on {@code kernelStream}: the next load into
     * this slot waits (on the GPU) until that work is done.
     */
    public void release(cudaStream_t kernelStream) {
        owner.checkCurrent(this);
        released.record(kernelStream);
        owner.markReleased(slot);
    }

    /** Blocks the host until the copies are done, so the KvView they read may be closed (and refilled). */
    public void awaitCopied() {
        ready.synchronize();
    }

    long generation() {
        return generation;
    }

    /** CUDA copy calls the load made (3 when the KvView's heads are evenly spaced). */
    int copyCalls() {
        return copyCalls;
    }

    /** Bytes the load moved: the KvView's valid rows, positions and block-table entries. */
    public long copiedBytes() {
        return copiedBytes;
    }

    DeviceMemory memory() {
        return memory;
    }

    @Override
    public String toString() {
        return "GpuLayerView[layer " + layer + ", " + tokens() + " tokens, slot " + slot + "]";
    }
}
