package io.kvoffload.spi;

import java.io.IOException;
import java.util.List;

/**
 * Batched, asynchronous reads and writes of aligned extents on the engine's device pool files.
 *
 * <p>A caller fills an {@link IoBatch} (requests across any devices), calls {@link #submit} which
 * starts all of them and returns, overlaps other work, then calls {@link #await}. Always wait through
 * {@link #await}, never {@link IoBatch#awaitCompletions()} directly: a backend may collect
 * completions only inside {@code await} (io_uring reaps its ring there). A batch is used by one
 * thread at a time; different threads may run different batches concurrently.
 *
 * <p>Contract for implementations: every request is transferred completely (short transfers are
 * continued for the remainder, EINTR and EAGAIN retried); any other failure is reported by
 * {@link #await} as a {@link io.kvoffload.KvIoException} naming device, offset and length, after
 * every request of the batch has finished (so no buffer is still in use by the kernel).
 * {@link #close()} drains in-flight I/O before releasing anything.
 */
public interface IoBackend extends AutoCloseable {
    String name();

    List<IoDevice> devices();

    /** Whether the device is open with O_DIRECT. */
    boolean directIo(int device);

    /** A reusable batch of at most {@code capacity} requests; allocate once, reuse per step. */
    default IoBatch newBatch(int capacity) {
        return new IoBatch(devices(), capacity);
    }

    /** Starts every request in the batch. Returns without waiting for completion. */
    void submit(IoBatch batch);

    /** Waits until every request of a submitted batch has finished; throws on the first failure. */
    void await(IoBatch batch);

    /**
     * Waits until more than {@code seen} requests of a submitted batch have completed successfully
     * ({@link IoBatch#completedCount()}) or none is pending, and returns the completed count, so a
     * caller can verify and copy early requests while later ones are still in flight. Failed
     * requests are reported by the {@link #await} that must follow once none is pending. The
     * default waits for the whole batch (and may then throw its failure).
     */
    default int awaitProgress(IoBatch batch, int seen) {
        await(batch);
        return batch.completedCount();
    }

    /**
     * Without waiting: takes the completions that are ready and hands the device queues the
     * requests that were waiting for room (a backend's backlog), so a thread that is busy with CPU
     * work between its waits (selection, verifying and gathering) does not let the SSDs run dry.
     * Failures stay with their batches for {@link #await}. Call it from the thread that submitted;
     * a backend that keeps its queues full by itself needs nothing here, and the default does nothing.
     */
    default void poll() {
    }

    /** Submits and waits. */
    default void execute(IoBatch batch) {
        submit(batch);
        await(batch);
    }

    /** Makes completed writes on the device durable (fdatasync). */
    void sync(int device) throws IOException;

    /** A listener this backend wants for the DRAM tier's slabs (fixed-buffer registration), or null. */
    default DramSlabListener dramSlabListener() {
        return null;
    }

    /** Drains in-flight I/O, then releases files and rings. */
    @Override
    void close();
}
