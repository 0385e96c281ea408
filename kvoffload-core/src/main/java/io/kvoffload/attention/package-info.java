/**
 * Reference attention and the quality metrics every selection strategy is judged by: exact dense
 * attention over a layer's keys ({@link io.kvoffload.attention.ExactAttention}) and attention-mass
 * recall, top-k recall and output error of a selected token set
 * ({@link io.kvoffload.attention.QualityMetrics}).
 */
package io.kvoffload.attention;
