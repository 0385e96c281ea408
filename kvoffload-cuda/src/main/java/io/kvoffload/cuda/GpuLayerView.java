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
 * kernels launched through other bindings). When the KvView had
 * {@link io.kvoffload.KvView#partialRows() partial rows} ({@link #partialRows()}), some rows hold only
 * some KV heads and the per-row head masks are uploaded too ({@link #headMasks()}); a kernel leaves
 * out every (row, head) pair whose bit is clear, since its K/V bytes are undefined.
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
    private final boolean partialRows;
    private final long generation;
    private final int copyCalls;
    private final long copiedBytes;

    GpuLayerView(LayerStreamBuffer owner, int slot, DeviceMemory memory, CudaEvent ready, CudaEvent released, int layer,
            ViewLayout layout, boolean partialRows, long generation, int copyCalls, long copiedBytes) {
        this.owner = owner;
        this.slot = slot;
        this.memory = memory;
        this.ready = ready;
        this.released = released;
        this.layer = layer;
        this.layout = layout;
        this.partialRows = partialRows;
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

    /**
     * Whether some row holds only some KV heads ({@link io.kvoffload.KvView#partialRows()}), so the
     * head masks were uploaded ({@link #headMasks()}). False: every row holds every KV head, and the
     * head-mask region was not written (it holds stale bytes).
     */
    public boolean partialRows() {
        return partialRows;
    }

    /**
     * int64 head masks on the device, one per row ({@link ViewLayout#headMasksOffset()}): bit
     * {@code h} of row {@code r}'s mask (little-endian) is set when the row's K and V of KV head
     * {@code h} are the token's; a kernel leaves out the (row, head) pairs whose bit is clear.
     * Uploaded only when {@link #partialRows()}; otherwise every row is whole and the region holds
     * stale bytes, so a kernel reads it only when {@code partialRows()} is true.
     */
    public CUdeviceptr headMasks() {
        return memory.pointer(layout.headMasksOffset());
    }

    /** The address of {@link #headMasks()}, for kernels launched through other bindings. */
    public long headMasksAddress() {
        return memory.address(layout.headMasksOffset());
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

    /** CUDA copy calls the load made (3 when the KvView's heads are evenly spaced, 4 with head masks). */
    int copyCalls() {
        return copyCalls;
    }

    /** Bytes the load moved: the KvView's valid rows, positions, block-table entries and, with partial rows, head masks. */
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
