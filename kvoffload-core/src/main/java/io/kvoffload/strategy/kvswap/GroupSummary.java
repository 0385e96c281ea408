package io.kvoffload.strategy.kvswap;

import io.kvoffload.KvSequence;

/**
 * What {@link KvSwap#groupLayer} built for one layer.
 *
 * @param layer the layer
 * @param groupedTokens tokens {@code [0, groupedTokens)} now live in groups
 * @param groups groups written ({@code groupedTokens / groupSize})
 * @param groupSize G
 * @param rank r of the low-rank adapter
 * @param compressionRatio σ = kvHeads·headDim / r
 * @param retainedEnergy share of the calibration keys' energy the adapter keeps, 0..1
 * @param readBytes bytes read for one group (its data padded to the direct-I/O alignment; head-sharded,
 *     each head group's, summed over the S devices)
 * @param compressedKeyBytes DRAM a decoder's compressed K cache of the grouped tokens takes (F16)
 * @param fitMillis time to read the calibration keys and compute the SVD
 * @param writeMillis time to write the groups
 */
public record GroupSummary(int layer, int groupedTokens, int groups, int groupSize, int rank,
        double compressionRatio, double retainedEnergy, int readBytes, long compressedKeyBytes, long fitMillis,
        long writeMillis) {}
