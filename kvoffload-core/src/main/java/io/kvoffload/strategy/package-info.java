/**
 * The selection-strategy SPI: a {@link io.kvoffload.strategy.SelectionStrategy} lays a layer out
 * (offline) and opens a {@link io.kvoffload.strategy.LayerSelector} per layer (online) that adds
 * each step's positions to a {@link io.kvoffload.strategy.FetchPlan}; the decoder's fetch pipeline
 * serves them (DRAM window and cache, bucket scheduler, one batched submission, per-entry checksums,
 * the view). {@link io.kvoffload.strategy.Strategies} finds strategies by name; every strategy,
 * the built-in ones included, reaches it through a {@link io.kvoffload.strategy.StrategyProvider}
 * ({@link java.util.ServiceLoader}), a provided {@code SelectionStrategy} or {@code register}. See
 * docs/architecture.md, "Writing a strategy".
 */
package io.kvoffload.strategy;
