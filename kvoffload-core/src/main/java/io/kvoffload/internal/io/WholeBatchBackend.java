package io.kvoffload.internal.io;

import io.kvoffload.spi.IoBackend;
import io.kvoffload.spi.IoBatch;

/**
 * A {@link ForwardingIoBackend} that acts on a batch as a whole when it is awaited (the device model
 * delays it, fault injection damages it), so no caller may see a request of it complete earlier:
 * progress is the whole batch (the SPI's default) and {@link #poll()} credits nothing.
 */
public abstract class WholeBatchBackend extends ForwardingIoBackend {

    protected WholeBatchBackend(IoBackend inner) {
        super(inner);
    }

    /** Waits for the whole batch: what happens at {@link #await} must come before any of its data is seen. */
    @Override
    public final int awaitProgress(IoBatch batch, int seen) {
        await(batch);
        return batch.completedCount();
    }

    /** Nothing: an early completion would show a batch's data before {@link #await} has acted on it. */
    @Override
    public final void poll() {
    }
}
