package io.kvoffload.cuda;

import io.kvoffload.KvShape;
import io.kvoffload.cuda.bindings.Cuda;
import io.kvoffload.cuda.bindings.CudaEvent;
import io.kvoffload.cuda.bindings.CudaStream;
import io.kvoffload.cuda.bindings.DeviceMemory;
import io.kvoffload.internal.cache.CostEffectiveness;
import io.kvoffload.spi.DeviceTier;
import io.kvoffload.spi.DeviceTierOptions;
import io.kvoffload.spi.DramSlabListener;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.IntToLongFunction;
import jcuda.runtime.cudaStream_t;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The GPU tier over CUDA (JCuda): page-locks the DRAM tier's slabs (so the
 * {@link io.kvoffload.KvView}s a {@link io.kvoffload.KvDecoder} gathers there are DMA-ready), hands
 * out {@link LayerStreamBuffer}s that upload those views, and keeps the {@link HbmHotCache}. Reach
 * it from an engine with {@code engine.deviceTier().map(t -> t.unwrap(CudaDeviceTier.class))}.
 *
 * <p>Lifecycle: the engine closes its DRAM tier first (for each slab this tier drains every copy,
 * then unregisters the slab, then the pool frees it), then this tier (buffers, hot cache, streams).
 */
public final class CudaDeviceTier implements DeviceTier {
    private static final Logger LOG = LoggerFactory.getLogger(CudaDeviceTier.class);

    private final int device;
    private final String description;
    private final CudaStream hotStream;
    private final CudaEvent hotEvent;
    private final PinningListener pinning;
    private final List<LayerStreamBuffer> buffers = new CopyOnWriteArrayList<>();
    private long hotBudgetBytes;
    private HbmHotCache<DeviceMemory> hotCache;
    private volatile boolean closed;

    CudaDeviceTier(DeviceTierOptions options, String description, HostPinning pinningMode) {
        this.device = options.device();
        this.description = description;
        this.hotBudgetBytes = options.hotCacheBytes();
        makeCurrent();
        this.hotStream = CudaStream.createNonBlocking();
        this.hotEvent = CudaEvent.create();
        this.pinning = new PinningListener(pinningMode, this::makeCurrent, this::synchronize);
    }

    @Override
    public String name() {
        return CudaDeviceTierProvider.NAME;
    }

    @Override
    public String describe() {
        return description + "; HBM hot cache budget " + hotBudgetBytes + " bytes";
    }

    @Override
    public DramSlabListener dramSlabListener() {
        return pinning;
    }

    public int device() {
        return device;
    }

    /** DRAM slabs page-locked now. */
    public int pinnedSlabs() {
        return pinning.pinnedCount();
    }

    /** Makes this tier's GPU the calling thread's current device (cheap when it already is). */
    public void makeCurrent() {
        Cuda.setDevice(device);
    }

    /**
     * A layer stream buffer with {@code depth} slots (2 = double-buffered) for KvViews of
     * {@code shape} and {@code blockTokens} (the sequence's) of up to {@code maxTokens} tokens.
     */
    public LayerStreamBuffer layerStreamBuffer(KvShape shape, int blockTokens, int maxTokens, int depth) {
        ensureOpen();
        makeCurrent();
        LayerStreamBuffer b = new LayerStreamBuffer(this, shape, blockTokens, maxTokens, depth);
        buffers.add(b);
        return b;
    }

    void forget(LayerStreamBuffer b) {
        buffers.remove(b);
    }

    /**
     * Opens the HBM hot cache over the configured budget (one per tier).
     *
     * @param blockBytes bytes of one block (e.g. blockTokens × entryBytes)
     * @param blocksPerChunk blocks per device allocation; the budget resizes in chunks
     * @param items expected number of item ids
     * @param itemBytes bytes of an item's data
     * @param score the DRAM tier's cost-effectiveness function
     */
    public synchronized HbmHotCache<DeviceMemory> openHotCache(long blockBytes, int blocksPerChunk, int items,
            int entryBytes, IntToLongFunction itemBytes, CostEffectiveness score) {
        ensureOpen();
        if (hotCache != null) {
            throw new IllegalStateException("the HBM hot cache is already open; one per tier");
        }
        DeviceChunks chunks = new DeviceChunks(this, hotStream);
        BlockMajorPool<DeviceMemory> pool = new BlockMajorPool<>(blockBytes, blocksPerChunk, hotBudgetBytes, chunks);
        hotCache = new HbmHotCache<>(pool, chunks, items, entryBytes, itemBytes, score);
        return hotCache;
    }

    /** Changes the hot cache's budget at run time (see {@link HbmHotCache#resize}). */
    public synchronized void resizeHotCache(long budgetBytes) {
        if (budgetBytes < 0) {
            throw new IllegalArgumentException("budgetBytes = " + budgetBytes + "; allowed: 0 or more");
        }
        hotBudgetBytes = budgetBytes;
        if (hotCache != null) {
            hotCache.resize(budgetBytes);
        }
    }

    /** Device address of a hot-cache block, for kernels. */
    public long hotBlockAddress(int block) {
        BlockMajorPool<DeviceMemory> pool = hotCache.pool();
        return pool.chunk(block).address(pool.offsetInChunk(block));
    }

    /** Makes later work on {@code kernelStream} wait for the hot-cache uploads queued so far. */
    public void hotUploadsBefore(cudaStream_t kernelStream) {
        makeCurrent();
        hotEvent.record(hotStream);
        CudaStream.waitFor(kernelStream, hotEvent);
    }

    /**
     * Makes later hot-cache uploads wait for the kernels queued so far on {@code kernelStream}, so
     * a block evicted this step is overwritten only after the kernels that read it.
     */
    public void hotUploadsAfter(cudaStream_t kernelStream) {
        makeCurrent();
        hotEvent.record(kernelStream);
        hotStream.waitFor(hotEvent);
    }

    /** Blocks until every copy this tier queued (stream buffers and hot cache) is done. */
    public void synchronize() {
        if (closed) {
            return;
        }
        makeCurrent();
        for (LayerStreamBuffer b : buffers) {
            b.synchronize();
        }
        hotStream.synchronize();
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("CUDA tier is closed");
        }
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        try {
            makeCurrent();
            synchronize();
            for (LayerStreamBuffer b : buffers) {
                b.close();
            }
            if (hotCache != null) {
                hotCache.close();
            }
            hotEvent.close();
            hotStream.close();
        } catch (RuntimeException e) {
            LOG.warn("closing the CUDA tier failed", e);
        } finally {
            closed = true;
        }
    }
}
