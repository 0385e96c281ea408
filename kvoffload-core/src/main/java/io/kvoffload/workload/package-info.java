/**
 * Workloads for selection and placement: a seeded synthetic generator whose attention has the
 * structure the papers report ({@link io.kvoffload.workload.SyntheticWorkload}), exact reference
 * attention ({@link io.kvoffload.workload.ExactAttention}), the quality metrics every selector is
 * judged by ({@link io.kvoffload.workload.QualityMetrics}) and a trace file format for queries and
 * keys captured from a real model ({@link io.kvoffload.workload.TraceWriter},
 * {@link io.kvoffload.workload.TraceReader}).
 *
 * <p>Tests, benchmarks and the demo all draw their data from here, so a selector measured in one
 * place is measured on the same workload everywhere.
 */
package io.kvoffload.workload;
