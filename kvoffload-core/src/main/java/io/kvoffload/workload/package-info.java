/**
 * Workloads for selection and placement, public API: a seeded synthetic generator whose attention
 * has the structure the papers report ({@link io.kvoffload.workload.SyntheticWorkload}) and a trace
 * file format for queries and keys captured from a real model ({@link io.kvoffload.workload.TraceWriter},
 * {@link io.kvoffload.workload.TraceReader}), with which an engine can record its own model's
 * attention and measure a strategy on it ({@link io.kvoffload.attention.QualityMetrics}). It builds on
 * the library; the library never depends on it.
 *
 * <p>Tests, benchmarks and the demo all draw their data from here, so a selector measured in one
 * place is measured on the same workload everywhere.
 */
package io.kvoffload.workload;

