package io.kvoffload.iouring;

import io.kvoffload.iouring.bindings.libc_h;

/**
 * What to do with one CQE of a read or write: the completion rules of the {@code IoBackend}
 * contract, kept free of ring state so they can be tested on their own.
 */
final class Completion {
    private Completion() {}

    /** The whole request has been transferred. */
    static final int DONE = 0;
    /** A short transfer: queue the remainder. */
    static final int CONTINUE = 1;
    /** EINTR or EAGAIN: queue the same remainder again. */
    static final int RETRY = 2;
    /** A read returned 0 bytes before the end of the request: the file ends early. */
    static final int END_OF_FILE = 3;
    /** A write returned 0 bytes: the device accepts nothing, retrying would spin. */
    static final int NO_PROGRESS = 4;
    /** The kernel reported an error (or an impossible count); report it. */
    static final int FAILED = 5;

    /** EINTR/EAGAIN retries per request before it is reported instead. */
    static final int MAX_RETRIES = 1000;

    /**
     * @param res the CQE's {@code res}: bytes transferred, or {@code -errno}
     * @param done bytes of the request transferred by earlier CQEs
     * @param length the request's full length
     * @param write whether the request is a write
     * @param retries EINTR/EAGAIN retries of this request so far
     * @return one of {@link #DONE}, {@link #CONTINUE}, {@link #RETRY}, {@link #END_OF_FILE},
     *     {@link #NO_PROGRESS}, {@link #FAILED}
     */
    static int decide(int res, long done, long length, boolean write, int retries) {
        if (res >= 0) {
            long left = length - done;
            if (res > left) {
                return FAILED;
            }
            if (res == left) {
                return DONE;
            }
            if (res == 0) {
                return write ? NO_PROGRESS : END_OF_FILE;
            }
            return CONTINUE;
        }
        if (res == -libc_h.EINTR || res == -libc_h.EAGAIN) {
            return retries < MAX_RETRIES ? RETRY : FAILED;
        }
        return FAILED;
    }
}
