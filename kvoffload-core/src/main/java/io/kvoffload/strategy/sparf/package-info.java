/**
 * InstInfer's SparF from flash ({@link io.kvoffload.strategy.sparf.SparF}, strategy {@code "sparf"}):
 * a dimension-major second copy of K written at layout time, whose top-r dimension slices each step
 * reads from the SSDs before it picks page groups. Found through {@link java.util.ServiceLoader}.
 */
package io.kvoffload.strategy.sparf;
