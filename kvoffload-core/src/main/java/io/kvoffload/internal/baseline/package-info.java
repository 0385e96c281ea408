/**
 * The baseline token selectors of the comparison, each a {@link
 * io.kvoffload.internal.select.TokenSelector} built from one layer's keys: the exact top-k oracle
 * ({@link io.kvoffload.internal.baseline.OracleSelector}), Quest's page bounds ({@link
 * io.kvoffload.internal.baseline.QuestSelector}), InfLLM's block representatives ({@link
 * io.kvoffload.internal.baseline.InfLLMSelector}), PQCache's product quantisation ({@link
 * io.kvoffload.internal.baseline.PQCacheSelector}), ClusterKV's key clusters ({@link
 * io.kvoffload.internal.baseline.ClusterKVSelector}), SparQ's top-r query dimensions ({@link
 * io.kvoffload.internal.baseline.SparQSelector}) with InstInfer's flash-page variant SparF ({@link
 * io.kvoffload.internal.baseline.SparFSelector}).
 *
 * <h2>One token set per layer (GQA)</h2>
 * An entry on disk is one token's K and V for every KV head, so every selector returns one set of
 * token positions for the whole layer. The published methods select per head; here the query heads
 * sharing a KV head are summed into one query (as {@link io.kvoffload.internal.swarm.MedoidIndex}
 * does, so a score is the sum of the heads' logits) and the KV heads' scores are added, except where a
 * method's own score is a probability (the oracle and SparQ/SparF average the per-head softmax, the
 * quantity attention-mass recall measures). Each class documents its mapping.
 *
 * <h2>Hot path</h2>
 * {@code select} allocates nothing once warmed up: scratch buffers are sized at construction, and
 * top-k choices use a linear radix select ({@link io.kvoffload.internal.util.PartialTopK}),
 * never a full sort of the per-token scores. Ties are broken by the lower position everywhere, so
 * every selector is deterministic.
 *
 * <p>Not exported from the module; the benchmarks (the comparison harness and JMH) run on the class
 * path and use it directly.
 */
package io.kvoffload.internal.baseline;
