package io.kvoffload.internal.util;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;

/**
 * Enforces that a handle is used by one thread at a time: each public entry point calls
 * {@link #enter} (a compare-and-set of the owner field to the calling thread) and {@link #exit} on
 * the way out. A second thread entering meanwhile gets an {@link IllegalStateException} naming the
 * handle and both threads, instead of corrupting state that is deliberately unsynchronised (the
 * decode path must stay lock- and allocation-free). Re-entry by the owner is allowed.
 *
 * <p>Cost on the hot path: one volatile read, one CAS and one volatile write per call, no
 * allocation (only a failure builds its message).
 */
public final class SingleOwner {
    private static final VarHandle OWNER;

    static {
        try {
            OWNER = MethodHandles.lookup().findVarHandle(SingleOwner.class, "owner", Thread.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused") // accessed through OWNER
    private volatile Thread owner;
    /** Set when the handle starts closing: a thread refused meanwhile is told that, not "in use". */
    private volatile String closedMessage;

    /** The handle is closing (from any thread); later conflicts report {@code message}. */
    public void markClosing(String message) {
        closedMessage = message;
    }

    /**
     * Takes the handle for the calling thread.
     *
     * @return true if this call took it (the caller must {@link #exit}); false if the calling
     *     thread already holds it (a nested call, which must not exit)
     * @throws IllegalStateException if another thread is inside the handle
     */
    public boolean enter(Object handle) {
        Thread me = Thread.currentThread();
        while (true) {
            Thread o = (Thread) OWNER.getVolatile(this);
            if (o == me) {
                return false;
            }
            if (o == null) {
                if (OWNER.compareAndSet(this, null, me)) {
                    return true;
                }
                continue; // lost a race: look at the winner
            }
            String closing = closedMessage;
            if (closing != null) {
                throw new IllegalStateException(closing);
            }
            throw new IllegalStateException(handle + " is in use by thread '" + o.getName() + "' (id " + o.threadId()
                    + ") and was called from thread '" + me.getName() + "' (id " + me.threadId() + "); a handle is"
                    + " used by one thread at a time: hand it to another thread only between calls");
        }
    }

    /** Releases the handle taken by {@link #enter} (when it returned true). */
    public void exit() {
        OWNER.setVolatile(this, null);
    }

    /**
     * Runs {@code body} as the owner of {@code handle} ({@link #enter}, then {@link #exit} if this
     * call took it). The lambda may allocate: entries on the decode path enter and exit themselves.
     */
    public void run(Object handle, Runnable body) {
        boolean owned = enter(handle);
        try {
            body.run();
        } finally {
            if (owned) {
                exit();
            }
        }
    }

    /** {@link #run} for an entry that returns a value. */
    public <T> T call(Object handle, Supplier<T> body) {
        boolean owned = enter(handle);
        try {
            return body.get();
        } finally {
            if (owned) {
                exit();
            }
        }
    }

    /**
     * Takes the handle, waiting while another thread is inside it (for {@code close}, which may
     * come from any thread, e.g. an engine shutting down while a decoder thread is mid-step; the
     * handle is marked closed first, so that thread's next call fails and it leaves soon).
     *
     * @return as for {@link #enter}
     */
    public boolean enterWaiting() {
        Thread me = Thread.currentThread();
        while (true) {
            Thread o = (Thread) OWNER.getVolatile(this);
            if (o == me) {
                return false;
            }
            if (o == null && OWNER.compareAndSet(this, null, me)) {
                return true;
            }
            LockSupport.parkNanos(this, 100_000);
        }
    }
}
