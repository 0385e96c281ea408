package io.kvoffload.internal.storage;

import io.kvoffload.KvShape;
import java.util.List;

/**
 * The durable description of one committed sequence: its shape, token ids, and for every layer
 * the extent, device and CRC32C of each block. Devices are named by UUID so directories may be
 * reordered between runs.
 *
 * @param id sequence id
 * @param shape the model shape
 * @param blockTokens tokens per block
 * @param deviceUuids the devices the extents refer to, by manifest-local index
 * @param tokenIds the sequence's token ids (every layer holds KV for all of them)
 * @param layers per layer, the block table (device = manifest-local device index)
 * @param commitMillis when it was committed
 * @param commitNumber how many times this sequence has been committed
 */
public record Manifest(String id, KvShape shape, int blockTokens, List<String> deviceUuids, int[] tokenIds,
        BlockTable[] layers, long commitMillis, long commitNumber) {

    public int tokenCount() {
        return tokenIds.length;
    }

    public int blocksPerLayer() {
        return (tokenIds.length + blockTokens - 1) / blockTokens;
    }

    /** Bytes of extents this sequence holds on all devices. */
    public long storedBytes() {
        long sum = 0;
        for (BlockTable t : layers) {
            for (int b = 0; b < t.size(); b++) {
                sum += t.length(b);
            }
        }
        return sum;
    }
}
