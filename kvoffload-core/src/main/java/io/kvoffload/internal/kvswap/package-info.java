/**
 * KVSwap's algorithms [KVSwap §3.2–3.5], independent of the storage engine: the low-rank K
 * adapter ({@link io.kvoffload.internal.kvswap.LowRankAdapter}, an SVD of calibration keys), the
 * in-memory compressed K cache ({@link io.kvoffload.internal.kvswap.CompressedKCache}), the grouped
 * critical-KV predictor ({@link io.kvoffload.internal.kvswap.GroupPredictor}, a
 * {@code TokenSelector}), the rolling buffer of the newest tokens
 * ({@link io.kvoffload.internal.kvswap.RollingBuffer}), the reuse buffer's slot tables and
 * replacement ({@link io.kvoffload.internal.kvswap.ReuseBuffer},
 * {@link io.kvoffload.internal.kvswap.ReusePlan}), the paged-attention view of a step
 * ({@link io.kvoffload.internal.kvswap.MappingTable}) and the offline parameter tuning
 * ({@link io.kvoffload.internal.kvswap.ParameterTuner} → {@link io.kvoffload.internal.kvswap.KvSwapConfig},
 * with {@link io.kvoffload.internal.kvswap.MemoryFootprint} and
 * {@link io.kvoffload.internal.kvswap.FetchCostModel}).
 *
 * <p>These classes decide which groups to read and where they go; the storage engine moves the
 * bytes. Not exported from the module: the engine reaches them through the public API.
 */
package io.kvoffload.internal.kvswap;
