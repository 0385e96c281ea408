package io.kvoffload.iouring;

/**
 * Counters of an {@link IoUringBackend}, summed over its rings since it was opened.
 *
 * @param rings rings created so far
 * @param submitCalls io_uring_submit calls (each one io_uring_enter)
 * @param waitCalls io_uring_submit_and_wait calls (each one io_uring_enter that may block)
 * @param fixedIos SQEs queued as READ_FIXED/WRITE_FIXED (buffer inside a registered slab)
 * @param plainIos SQEs queued as READ/WRITE
 * @param shortTransfers short reads or writes whose remainder was resubmitted
 * @param retries EINTR/EAGAIN resubmissions
 * @param completions CQEs reaped
 * @param registeredBuffers slabs registered as fixed buffers (the most on any ring)
 */
public record IoUringStats(
        int rings, long submitCalls, long waitCalls, long fixedIos, long plainIos, long shortTransfers,
        long retries, long completions, int registeredBuffers) {

    /** Counters accumulated between {@code earlier} and this snapshot. */
    public IoUringStats minus(IoUringStats earlier) {
        return new IoUringStats(rings, submitCalls - earlier.submitCalls, waitCalls - earlier.waitCalls,
                fixedIos - earlier.fixedIos, plainIos - earlier.plainIos, shortTransfers - earlier.shortTransfers,
                retries - earlier.retries, completions - earlier.completions, registeredBuffers);
    }
}
