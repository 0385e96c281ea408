/**
 * FFM bindings to liburing 2.3 ({@code liburing.so.2}) and the few libc calls the backend needs,
 * in the shape jextract generates (a header class of downcall handles and constants, one class per
 * struct with its layout, offsets and accessors; {@code kvoffload-io-uring/jextract.sh} has the
 * command), plus Java ports of liburing's {@code static inline} ring helpers in
 * {@link io.kvoffload.iouring.bindings.SubmissionQueue} and
 * {@link io.kvoffload.iouring.bindings.CompletionQueue}.
 *
 * <p>This is the only package that touches native addresses. Its public methods take
 * {@link java.lang.foreign.MemorySegment}s and check that any range handed to the kernel lies
 * inside them (and inside the registered buffer, for fixed buffers).
 */
package io.kvoffload.iouring.bindings;
