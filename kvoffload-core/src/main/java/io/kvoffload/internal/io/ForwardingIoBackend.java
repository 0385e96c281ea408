package io.kvoffload.internal.io;

import io.kvoffload.spi.DramSlabListener;
import io.kvoffload.spi.IoBackend;
import io.kvoffload.spi.IoBatch;
import io.kvoffload.spi.IoDevice;
import java.io.IOException;
import java.util.List;

/**
 * An {@link IoBackend} that forwards every call to another; decorators (the device model, fault
 * injection, device health) override only what they change.
 */
public abstract class ForwardingIoBackend implements IoBackend {
    protected final IoBackend inner;

    protected ForwardingIoBackend(IoBackend inner) {
        this.inner = inner;
    }

    /** The backend below this one. */
    public IoBackend inner() {
        return inner;
    }

    @Override
    public String name() {
        return inner.name();
    }

    @Override
    public List<IoDevice> devices() {
        return inner.devices();
    }

    @Override
    public boolean directIo(int device) {
        return inner.directIo(device);
    }

    @Override
    public IoBatch newBatch(int capacity) {
        return inner.newBatch(capacity);
    }

    @Override
    public DramSlabListener dramSlabListener() {
        return inner.dramSlabListener();
    }

    @Override
    public void submit(IoBatch batch) {
        inner.submit(batch);
    }

    @Override
    public void await(IoBatch batch) {
        inner.await(batch);
    }

    @Override
    public int awaitProgress(IoBatch batch, int seen) {
        return inner.awaitProgress(batch, seen);
    }

    @Override
    public void poll() {
        inner.poll();
    }

    @Override
    public void sync(int device) throws IOException {
        inner.sync(device);
    }

    @Override
    public void close() {
        inner.close();
    }
}
