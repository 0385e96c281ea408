package io.kvoffload.internal.sequence;

import io.kvoffload.internal.util.SingleOwner;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * The lifecycle of a sequence handle: every public entry runs as the handle's one owner thread
 * ({@link SingleOwner}); {@link #close} may come from any thread, marks the handle closing first
 * (so the owner's next call fails at once), waits for the owner, and runs once.
 */
public final class HandleGuard {
    private final SingleOwner owner = new SingleOwner();
    private final Object handle;
    private final String name;
    private final BooleanSupplier engineClosed;
    private final Runnable engineCheckOpen;
    /** Set by {@link #close} before it waits for the owner. */
    private volatile boolean closing;
    private boolean closed;

    /**
     * @param handle what a conflict names (its {@code toString})
     * @param name what a closed-handle failure names ({@code "sequence <id>"})
     * @param engineClosed whether the engine that made the handle was closed
     * @param engineCheckOpen fails if that engine was closed
     */
    public HandleGuard(Object handle, String name, BooleanSupplier engineClosed, Runnable engineCheckOpen) {
        this.handle = handle;
        this.name = name;
        this.engineClosed = engineClosed;
        this.engineCheckOpen = engineCheckOpen;
    }

    /** Runs a public entry's body as the owner thread. */
    public void run(Runnable body) {
        owner.run(handle, body);
    }

    /** {@link #run} for an entry that returns a value. */
    public <T> T call(Supplier<T> body) {
        return owner.call(handle, body);
    }

    /** @throws IllegalStateException if the handle or its engine is closed (or closing) */
    public void checkOpen() {
        if (closing || closed) {
            throw new IllegalStateException(closedMessage());
        }
        engineCheckOpen.run();
    }

    private String closedMessage() {
        return name + " is closed" + (engineClosed.getAsBoolean() ? " because the engine was closed" : "");
    }

    /**
     * Closes the handle: {@code body} runs once, as the owner, after any call in progress on
     * another thread returned; it calls {@link #markClosed} once the handle counts as closed.
     */
    public void close(Runnable body) {
        closing = true;
        owner.markClosing(closedMessage());
        boolean owned = owner.enterWaiting();
        try {
            if (!closed) {
                body.run();
            }
        } finally {
            if (owned) {
                owner.exit();
            }
        }
    }

    /** From the body of {@link #close}: a later close does nothing. */
    public void markClosed() {
        closed = true;
    }
}
