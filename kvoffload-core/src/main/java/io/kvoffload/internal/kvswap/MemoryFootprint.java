package io.kvoffload.internal.kvswap;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.internal.util.Checks;

/**
 * The DRAM KVSwap holds for a model, batch and context (§3.5's memory term), all layers together:
 * <ul>
 * <li>the compressed K caches: {@code layers × batch × maxContext × r × storage bytes};</li>
 * <li>the reuse buffers: {@code layers × batch × slots × G × entryBytes} (per layer and sequence;
 *     the preload buffer merges into it, Appendix A.2);</li>
 * <li>the rolling buffers: {@code layers × batch × rollingGroups × G × entryBytes};</li>
 * <li>the adapters: {@code layers × (kvHeads·headDim) × r × 4} (float32, shared by the batch).</li>
 * </ul>
 * {@code entryBytes} is one token's K and V for one layer ({@link KvShape#entryBytes()}).
 */
public record MemoryFootprint(long compressedKBytes, long reuseBufferBytes, long rollingBufferBytes, long adapterBytes) {

    public MemoryFootprint {
        Checks.inRange("compressedKBytes", compressedKBytes, 0, Long.MAX_VALUE / 4);
        Checks.inRange("reuseBufferBytes", reuseBufferBytes, 0, Long.MAX_VALUE / 4);
        Checks.inRange("rollingBufferBytes", rollingBufferBytes, 0, Long.MAX_VALUE / 4);
        Checks.inRange("adapterBytes", adapterBytes, 0, Long.MAX_VALUE / 4);
    }

    /** Everything together. */
    public long totalBytes() {
        return compressedKBytes + reuseBufferBytes + rollingBufferBytes + adapterBytes;
    }

    /**
     * The footprint of a configuration.
     *
     * @param maxContext tokens per sequence, 1..2^30
     * @param batchSize sequences, 1..65536
     * @param rank r, 1..kvHeads·headDim
     * @param storage element type of the compressed K cache
     * @param groupSize G, 1..4096
     * @param reuseSlots reuse-buffer slots per layer and sequence, 0..2^20
     * @param rollingGroups rolling-buffer capacity in groups, 1..1024
     */
    public static MemoryFootprint of(KvShape shape, int maxContext, int batchSize, int rank, DType storage,
            int groupSize, int reuseSlots, int rollingGroups) {
        Checks.notNull("shape", shape);
        Checks.inRange("maxContext", maxContext, 1, 1 << 30);
        Checks.inRange("batchSize", batchSize, 1, 65536);
        Checks.inRange("rank", rank, 1, shape.elementsPerToken());
        Checks.notNull("storage", storage);
        Checks.inRange("groupSize", groupSize, 1, 4096);
        Checks.inRange("reuseSlots", reuseSlots, 0, 1 << 20);
        Checks.inRange("rollingGroups", rollingGroups, 1, 1024);
        long perLayerSeq = (long) shape.layers() * batchSize;
        long entry = shape.entryBytes();
        return new MemoryFootprint(
                perLayerSeq * maxContext * rank * storage.bytes(),
                perLayerSeq * reuseSlots * groupSize * entry,
                perLayerSeq * rollingGroups * groupSize * entry,
                (long) shape.layers() * shape.elementsPerToken() * rank * 4);
    }

    /** The full K cache the compressed one replaces: {@code layers × batch × maxContext × halfEntryBytes}. */
    public static long fullKBytes(KvShape shape, int maxContext, int batchSize) {
        Checks.notNull("shape", shape);
        Checks.inRange("maxContext", maxContext, 1, 1 << 30);
        Checks.inRange("batchSize", batchSize, 1, 65536);
        return (long) shape.layers() * batchSize * maxContext * shape.halfEntryBytes();
    }
}
