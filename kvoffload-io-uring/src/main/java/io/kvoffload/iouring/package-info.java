/**
 * The io_uring I/O backend: {@link io.kvoffload.iouring.IoUringBackendProvider} (found through
 * {@link java.util.ServiceLoader}), {@link io.kvoffload.iouring.IoUringBackend} and its
 * configuration. Native access is confined to {@code io.kvoffload.iouring.bindings}; this package
 * deals only in {@link java.lang.foreign.MemorySegment}s, indices and counts.
 */
package io.kvoffload.iouring;
