package io.kvoffload.internal.storage;

import io.kvoffload.KvIoException;
import io.kvoffload.internal.io.ForwardingIoBackend;
import io.kvoffload.spi.IoBackend;
import io.kvoffload.spi.IoBatch;
import java.util.List;
import java.util.concurrent.atomic.AtomicIntegerArray;

/**
 * The outermost {@link IoBackend} of a store: counts each device's consecutive failed batches and
 * marks a device {@linkplain DevicePool#fail failed} once {@link #FAILURE_THRESHOLD} batches in a
 * row failed on it with a device error, so a disk that died at run time is taken out of service
 * (nothing more is allocated there, commits naming it are refused) without a restart. A batch that
 * completes clears the count of every device it touched. Counting allocates nothing.
 */
final class DeviceHealth extends ForwardingIoBackend {
    /** Consecutive failed batches after which a device is declared failed. */
    static final int FAILURE_THRESHOLD = 8;
    static final int ENOSPC = 28;

    private final List<DevicePool> devices;
    private final AtomicIntegerArray consecutive;

    DeviceHealth(IoBackend inner, List<DevicePool> devices) {
        super(inner);
        this.devices = devices;
        this.consecutive = new AtomicIntegerArray(devices.size());
    }

    @Override
    public void await(IoBatch batch) {
        try {
            inner.await(batch);
        } catch (KvIoException e) {
            failed(e);
            throw e;
        }
        succeeded(batch);
    }

    @Override
    public int awaitProgress(IoBatch batch, int seen) {
        try {
            return inner.awaitProgress(batch, seen);
        } catch (KvIoException e) {
            failed(e);
            throw e;
        }
    }

    private void succeeded(IoBatch batch) {
        if (!anyToClear()) {
            return; // the usual case on the decode path: a look at each device, no loop over the batch
        }
        for (int i = 0, n = batch.size(); i < n; i++) {
            int d = batch.device(i);
            if (consecutive.get(d) != 0) {
                consecutive.set(d, 0);
            }
            if (batch.op(i) == IoBatch.WRITE && devices.get(d).full()) {
                devices.get(d).full(false); // space came back
            }
        }
    }

    private boolean anyToClear() {
        for (int d = 0; d < devices.size(); d++) {
            if (consecutive.get(d) != 0 || devices.get(d).full()) {
                return true;
            }
        }
        return false;
    }

    private void failed(KvIoException e) {
        int d = e.device();
        if (d < 0 || d >= devices.size()) {
            return;
        }
        if (e.errno() == ENOSPC) {
            devices.get(d).full(true);
            return;
        }
        if (!isDeviceError(e.errno())) {
            return;
        }
        int n = consecutive.incrementAndGet(d);
        if (n == FAILURE_THRESHOLD) {
            devices.get(d).fail(n + " batches in a row failed on it, the last with: " + e.getMessage());
        }
    }

    /** EIO, ENXIO, ENODEV, EROFS, EBADF: the device, not the request, is at fault. */
    private static boolean isDeviceError(int errno) {
        return errno == 5 || errno == 6 || errno == 19 || errno == 30 || errno == 9;
    }

}
