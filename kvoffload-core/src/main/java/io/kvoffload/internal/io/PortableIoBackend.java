package io.kvoffload.internal.io;

import com.sun.nio.file.ExtendedOpenOption;
import io.kvoffload.spi.IoBackend;
import io.kvoffload.spi.IoBatch;
import io.kvoffload.spi.IoDevice;
import io.kvoffload.spi.IoOptions;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.FileChannel;
import java.nio.file.OpenOption;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Portable backend: each device's pool file is a {@link FileChannel} (O_DIRECT through
 * {@link ExtendedOpenOption#DIRECT} where the file system allows it), served by a small thread
 * pool per device, so the requests of one batch proceed on all devices in parallel.
 */
final class PortableIoBackend implements IoBackend {
    private static final Logger LOG = LoggerFactory.getLogger(PortableIoBackend.class);

    private final List<IoDevice> devices;
    private final FileChannel[] channels;
    private final boolean[] direct;
    private final ExecutorService[] workers;
    private volatile boolean closed;

    PortableIoBackend(List<IoDevice> devices, IoOptions options) throws IOException {
        this.devices = List.copyOf(devices);
        int n = devices.size();
        channels = new FileChannel[n];
        direct = new boolean[n];
        workers = new ExecutorService[n];
        try {
            for (int d = 0; d < n; d++) {
                openDevice(devices.get(d), options.directIo());
                int dev = d;
                AtomicInteger seq = new AtomicInteger();
                workers[d] = Executors.newFixedThreadPool(Math.max(1, options.threadsPerDevice()), r -> {
                    Thread t = new Thread(r, "kvo-io-d" + dev + "-" + seq.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                });
            }
        } catch (IOException | RuntimeException e) {
            close();
            throw e;
        }
    }

    private void openDevice(IoDevice dev, boolean wantDirect) throws IOException {
        int d = dev.index();
        if (wantDirect) {
            try {
                channels[d] = FileChannel.open(dev.poolFile(),
                        new OpenOption[] {StandardOpenOption.READ, StandardOpenOption.WRITE, ExtendedOpenOption.DIRECT});
                direct[d] = true;
                return;
            } catch (IOException | UnsupportedOperationException e) {
                LOG.warn("device {} ({}): O_DIRECT refused by the file system ({}); using buffered I/O", d,
                        dev.poolFile(), e.toString());
            }
        }
        channels[d] = FileChannel.open(dev.poolFile(), StandardOpenOption.READ, StandardOpenOption.WRITE);
    }

    @Override
    public String name() {
        return PortableIoBackendProvider.NAME;
    }

    @Override
    public List<IoDevice> devices() {
        return devices;
    }

    @Override
    public boolean directIo(int device) {
        return direct[device];
    }

    @Override
    public void submit(IoBatch batch) {
        if (closed) {
            throw new IllegalStateException("I/O backend is closed");
        }
        batch.checkBuffersAlive();
        int n = batch.size();
        batch.expectCompletions(n);
        for (int i = 0; i < n; i++) {
            int req = i;
            try {
                workers[batch.device(i)].execute(() -> run(batch, req));
            } catch (RejectedExecutionException e) {
                // close() raced this submit: fail the request so its waiters wake instead of hanging.
                batch.failed(i, 0, "I/O backend closed before the request started", e);
            }
        }
    }

    private void run(IoBatch batch, int i) {
        FileChannel ch = channels[batch.device(i)];
        ByteBuffer buf = batch.buffer(i).asByteBuffer();
        long pos = batch.offset(i);
        boolean write = batch.op(i) == IoBatch.WRITE;
        try {
            while (buf.hasRemaining()) {
                int n = write ? ch.write(buf, pos) : ch.read(buf, pos);
                if (n < 0) {
                    batch.failed(i, 0, "end of file after " + buf.position() + " bytes", null);
                    return;
                }
                pos += n;
            }
            batch.completed(i);
        } catch (ClosedByInterruptException e) {
            batch.failed(i, 4 /* EINTR */, "interrupted; channel closed", e);
        } catch (IOException | RuntimeException e) {
            batch.failed(i, 0, e.toString(), e);
        }
    }

    @Override
    public int awaitProgress(IoBatch batch, int seen) {
        return batch.awaitProgress(seen);
    }

    @Override
    public void await(IoBatch batch) {
        batch.awaitCompletions();
    }

    @Override
    public void sync(int device) throws IOException {
        channels[device].force(false);
    }

    @Override
    public void close() {
        closed = true;
        for (ExecutorService w : workers) {
            if (w != null) {
                w.shutdown();
            }
        }
        for (ExecutorService w : workers) {
            try {
                if (w != null && !w.awaitTermination(60, TimeUnit.SECONDS)) {
                    LOG.warn("I/O workers did not drain within 60 s");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        for (FileChannel ch : channels) {
            try {
                if (ch != null) {
                    ch.close();
                }
            } catch (IOException e) {
                LOG.warn("closing a pool file failed", e);
            }
        }
    }
}
