package io.kvoffload.strategy.kvswap;

import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.internal.util.Checks;

/**
 * Options of KVSwap's offline phase ({@link KvSwap#groupLayer}): how a layer is laid out in
 * groups and how its low-rank K adapter is fitted [KVSwap §3.2–3.4].
 *
 * @param groupSize G, consecutive tokens stored and read as one unit ({@code [K of G | V of G]},
 *     one aligned read); 1..4096, default 4 (the paper's NVMe setting; 8 suits eMMC)
 * @param rank r, columns kept of the SVD adapter (the compressed key's dimension); 0 (the default,
 *     {@link #AUTO_RANK}) takes {@code kvHeads × headDim / 8}: a compression ratio σ of 8 whatever the
 *     number of KV heads (the paper's {@code r = headDim} gives σ = 8 with its 8 KV heads, but 16
 *     with 16 and 32 with MHA-32, which loses the prediction); else 1..kvHeads·headDim
 * @param calibrationRows at most this many of the layer's own stored keys (sampled uniformly, in
 *     position order) calibrate the adapter; 1..2^30, default 8192
 * @param seed seed of the calibration sample
 */
public record GroupOptions(int groupSize, int rank, int calibrationRows, long seed) {

    /** {@link #rank()} value meaning {@code kvHeads × headDim / DEFAULT_COMPRESSION}. */
    public static final int AUTO_RANK = 0;
    /** The compression ratio σ of {@link #AUTO_RANK}: full key dimension over rank. */
    public static final int DEFAULT_COMPRESSION = 8;

    public GroupOptions {
        Checks.inRange("groupSize", groupSize, 1, 4096);
        Checks.inRange("rank", rank, 0, 1 << 24);
        Checks.inRange("calibrationRows", calibrationRows, 1, 1 << 30);
    }

    /** G = 4, r = kvHeads × headDim / 8, 8192 calibration rows, seed 0. */
    public static GroupOptions defaults() {
        return new GroupOptions(4, AUTO_RANK, 8192, 0);
    }

    public GroupOptions withGroupSize(int g) {
        return new GroupOptions(g, rank, calibrationRows, seed);
    }

    public GroupOptions withRank(int r) {
        return new GroupOptions(groupSize, r, calibrationRows, seed);
    }

    public GroupOptions withCalibrationRows(int n) {
        return new GroupOptions(groupSize, rank, n, seed);
    }

    public GroupOptions withSeed(long s) {
        return new GroupOptions(groupSize, rank, calibrationRows, s);
    }

    /**
     * The rank for {@code shape}: {@link #rank()}, or for {@link #AUTO_RANK} {@code kvHeads × headDim / 8}
     * (at least 1), so the compression ratio does not change with the head count; checked against the shape.
     */
    public int rankFor(KvShape shape) {
        int max = shape.kvHeads() * shape.headDim();
        if (rank > max) {
            throw new IllegalArgumentException("rank = " + rank + " is out of range for kvHeads " + shape.kvHeads()
                    + " × headDim " + shape.headDim() + "; allowed: 0 (kvHeads × headDim / " + DEFAULT_COMPRESSION
                    + ") or 1.." + max);
        }
        return rank == AUTO_RANK ? Math.max(1, max / DEFAULT_COMPRESSION) : rank;
    }
}
