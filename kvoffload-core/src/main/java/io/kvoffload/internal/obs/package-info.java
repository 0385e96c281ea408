/**
 * Observability: the JFR events the library emits (fetch, commit, eviction, checksum failure,
 * device error, degradation), the engine's MXBean and the decoders' latency histograms. Events are
 * built only when a recording enables them ({@link io.kvoffload.internal.obs.Flight}), so a decode
 * step with JFR off allocates nothing here.
 */
package io.kvoffload.internal.obs;
