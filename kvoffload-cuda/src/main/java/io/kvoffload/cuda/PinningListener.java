package io.kvoffload.cuda;

import io.kvoffload.spi.DramSlabListener;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentHashMap;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Page-locks every DRAM slab for the GPU when the pool allocates it, and on free drains the GPU
 * copies first, then unpins (the pool then frees the memory): the lifecycle is drain, unregister,
 * free. A slab that cannot be pinned stays usable: CUDA then stages copies from it through its own
 * pinned buffer, slower and synchronous with the host, but correct.
 */
final class PinningListener implements DramSlabListener {
    private static final Logger LOG = LoggerFactory.getLogger(PinningListener.class);

    private final HostPinning pinning;
    private final Runnable beforePinCall;
    private final Runnable drain;
    private final Set<Integer> pinned = ConcurrentHashMap.newKeySet();

    /**
     * @param beforePinCall makes the tier's device current on the calling thread
     * @param drain waits for every copy the tier has queued
     */
    PinningListener(HostPinning pinning, Runnable beforePinCall, Runnable drain) {
        this.pinning = pinning;
        this.beforePinCall = beforePinCall;
        this.drain = drain;
    }

    @Override
    public void slabAllocated(int slabId, MemorySegment slab) {
        try {
            beforePinCall.run();
            pinning.pin(slab);
            pinned.add(slabId);
            LOG.debug("DRAM slab {} ({} bytes) page-locked with {}", slabId, slab.byteSize(), pinning.name());
        } catch (RuntimeException e) {
            LOG.warn("DRAM slab {} ({} bytes) could not be page-locked with {}; copies from it will be staged"
                    + " by CUDA: {}", slabId, slab.byteSize(), pinning.name(), e.getMessage());
        }
    }

    @Override
    public void slabFreed(int slabId, MemorySegment slab) {
        if (!pinned.remove(slabId)) {
            return;
        }
        try {
            beforePinCall.run();
            drain.run();
            pinning.unpin(slab);
        } catch (RuntimeException e) {
            LOG.warn("unpinning DRAM slab {} failed: {}", slabId, e.getMessage());
        }
    }

    int pinnedCount() {
        return pinned.size();
    }
}
