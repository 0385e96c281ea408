package io.kvoffload.internal.io;

import io.kvoffload.DeviceModelSpec;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.spi.IoBackend;
import io.kvoffload.spi.IoBatch;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An {@link IoBackend} decorator that makes each device behave like a separate SSD with its own
 * bandwidth, IOPS, latency floor and queue, while every request still really happens on the real
 * backend (io_uring or portable) and the real files. One physical disk can so stand in for several
 * SSDs; figures measured through it are <em>simulated</em>, and {@link #name()} says so.
 *
 * <p><b>Model (virtual time per device).</b> A request of {@code len} bytes arriving at {@code t}
 * on device {@code d} waits for a free slot of the device's queue (depth {@code q}: the slot of
 * the request {@code q} places earlier), starts at {@code s = max(t, slot free)}, occupies the
 * device's transfer pipe for {@code max(len / bandwidth, 1 / iops)} after the pipe's previous
 * request, and completes at {@code max(pipe end, s + latency)}. Completion times of one device
 * are non-decreasing, so a ring of the last {@code q} completions is the queue. Idle time earns no
 * credit (unlike a token bucket there are no bursts above the limit). {@link #await} first waits
 * for the real I/O, then until the batch's latest modelled completion; so a batch finishes at
 * {@code max(real, model)}, and {@link #stats()} says how often the model (not the real disk) was
 * what the caller waited for.
 *
 * <p><b>Contract.</b> {@link #submit} returns at once (the inner backend's submit plus a short
 * computation under a lock shared by all devices: the model is a simulation, not a hot path to
 * scale across cores); {@link #await} propagates the inner backend's failure at once, without the
 * modelled delay; {@link #close} closes the inner backend, which drains. Steady state allocates
 * nothing: per-device state and the in-flight batch table are arrays allocated up front (the table
 * doubles when more batches than ever before are in flight at once).
 */
public final class DeviceModel extends WholeBatchBackend {
    private static final Logger LOG = LoggerFactory.getLogger(DeviceModel.class);
    /** Marker in {@link #name()} of every simulated backend. */
    public static final String SIMULATED = "simulated";
    /** Below this remaining wait, spin instead of parking: parkNanos overshoots by tens of µs. */
    private static final long SPIN_NANOS = 60_000L;

    private final DeviceModelSpec spec;
    private final String name;
    private final double scale;
    private final double nanosPerByte;
    private final double nanosPerRequest;
    private final long latencyNanos;
    private final int queueDepth;

    private final Object lock = new Object();
    // Guarded by lock.
    private final long[] pipeFree;
    private final long[][] slots;
    private final int[] head;
    private final long[] requests;
    private final long[] bytes;
    private IoBatch[] inflight = new IoBatch[16];
    private long[] deadlines = new long[16];

    private final AtomicLong awaits = new AtomicLong();
    private final AtomicLong modelBoundAwaits = new AtomicLong();
    private final AtomicLong modelWaitNanos = new AtomicLong();
    private volatile boolean closed;

    private DeviceModel(IoBackend inner, DeviceModelSpec spec) {
        super(inner);
        this.spec = spec;
        int n = inner.devices().size();
        this.scale = spec.effectiveScale(n);
        this.nanosPerByte = 1e9 / (spec.bandwidthBytesPerSecond() * scale);
        this.nanosPerRequest = 1e9 / (spec.iops() * scale);
        this.latencyNanos = spec.latencyNanos();
        this.queueDepth = spec.queueDepth();
        this.name = inner.name() + "+" + SIMULATED + ":" + spec.profile();
        pipeFree = new long[n];
        slots = new long[n][queueDepth];
        head = new int[n];
        requests = new long[n];
        bytes = new long[n];
        long now = System.nanoTime();
        Arrays.fill(pipeFree, now);
        for (long[] s : slots) {
            Arrays.fill(s, now);
        }
        double totalBw = n * spec.bandwidthBytesPerSecond() * scale;
        double totalIops = n * spec.iops() * scale;
        if (totalBw > spec.hostBandwidthBytesPerSecond() * 1.0001 || totalIops > spec.hostIops() * 1.0001) {
            LOG.warn("device model: {} devices together allow {} MB/s and {} IOPS, more than the host disk's {} MB/s and"
                    + " {} IOPS; measured figures will be limited by the real disk, not the model", n,
                    Math.round(totalBw / 1e6), Math.round(totalIops), spec.hostBandwidthBytesPerSecond() / 1_000_000,
                    spec.hostIops());
        }
        LOG.info("device model over {} devices: {}", n, spec.describe(n));
    }

    /**
     * Wraps {@code inner}: from now on its devices behave like simulated SSDs of {@code spec}.
     *
     * @throws IllegalArgumentException if the spec cannot be scaled to the inner backend's devices
     *     (see {@link DeviceModelSpec#effectiveScale})
     */
    public static DeviceModel wrap(IoBackend inner, DeviceModelSpec spec) {
        Checks.notNull("inner", inner);
        Checks.notNull("spec", spec);
        if (inner instanceof DeviceModel) {
            throw new IllegalArgumentException("inner = " + inner.name() + " is already simulated; wrap the real backend");
        }
        if (inner.devices().isEmpty()) {
            throw new IllegalArgumentException("inner has no devices; at least one device is needed");
        }
        return new DeviceModel(inner, spec);
    }

    /** Whether figures measured on {@code backend} come from a device model. */
    public static boolean isSimulated(IoBackend backend) {
        return backend instanceof DeviceModel || isSimulated(backend.name());
    }

    /** Whether a backend name ({@link io.kvoffload.KvStats#ioBackend()}) names a simulated backend. */
    public static boolean isSimulated(String backendName) {
        return backendName != null && backendName.contains("+" + SIMULATED);
    }

    public DeviceModelSpec spec() {
        return spec;
    }

    /** The scale factor in use (profile bandwidth and IOPS are multiplied by it). */
    public double scale() {
        return scale;
    }

    /** One simulated device's bandwidth in bytes per second. */
    public double deviceBandwidth() {
        return 1e9 / nanosPerByte;
    }

    /** One simulated device's requests per second. */
    public double deviceIops() {
        return 1e9 / nanosPerRequest;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public void submit(IoBatch batch) {
        Checks.notNull("batch", batch);
        if (closed) {
            throw new IllegalStateException("I/O backend is closed");
        }
        inner.submit(batch);
        synchronized (lock) {
            long deadline = modelLocked(batch, System.nanoTime());
            remember(batch, deadline);
        }
    }

    /**
     * Runs the batch's requests through the device queues at time {@code now}; returns the latest
     * completion. Package-private so that the queue arithmetic is tested in virtual time, where a
     * loaded machine cannot move the figures.
     */
    long model(IoBatch batch, long now) {
        synchronized (lock) {
            return modelLocked(batch, now);
        }
    }

    private long modelLocked(IoBatch batch, long now) {
        long latest = now;
        int n = batch.size();
        for (int i = 0; i < n; i++) {
            int d = batch.device(i);
            long len = batch.length(i);
            long[] ring = slots[d];
            int h = head[d];
            long start = Math.max(now, ring[h]);
            long cost = (long) Math.max(len * nanosPerByte, nanosPerRequest);
            long pipe = Math.max(pipeFree[d], start) + cost;
            pipeFree[d] = pipe;
            long done = Math.max(pipe, start + latencyNanos);
            ring[h] = done;
            head[d] = h + 1 == ring.length ? 0 : h + 1;
            requests[d]++;
            bytes[d] += len;
            if (done > latest) {
                latest = done;
            }
        }
        return latest;
    }

    private void remember(IoBatch batch, long deadline) {
        for (int i = 0; i < inflight.length; i++) {
            if (inflight[i] == null) {
                inflight[i] = batch;
                deadlines[i] = deadline;
                return;
            }
        }
        int i = inflight.length;
        inflight = Arrays.copyOf(inflight, i * 2);
        deadlines = Arrays.copyOf(deadlines, i * 2);
        inflight[i] = batch;
        deadlines[i] = deadline;
    }

    /** Removes the batch from the in-flight table; its deadline, or {@link Long#MIN_VALUE} if unknown. */
    private long forget(IoBatch batch) {
        synchronized (lock) {
            for (int i = 0; i < inflight.length; i++) {
                if (inflight[i] == batch) {
                    inflight[i] = null;
                    return deadlines[i];
                }
            }
        }
        return Long.MIN_VALUE;
    }

    @Override
    public void await(IoBatch batch) {
        Checks.notNull("batch", batch);
        long deadline;
        try {
            inner.await(batch);
        } finally {
            deadline = forget(batch);
        }
        if (deadline == Long.MIN_VALUE) {
            return; // never submitted through the model (or already awaited)
        }
        awaits.incrementAndGet();
        long wait = deadline - System.nanoTime();
        if (wait > 0) {
            modelBoundAwaits.incrementAndGet();
            modelWaitNanos.addAndGet(wait);
            sleepUntil(deadline);
        }
    }

    private static void sleepUntil(long deadline) {
        boolean interrupted = false;
        long left;
        while ((left = deadline - System.nanoTime()) > 0) {
            if (left > SPIN_NANOS) {
                LockSupport.parkNanos(left - SPIN_NANOS);
                if (Thread.interrupted()) {
                    // The simulated device is still busy; keep the modelled time, re-assert later.
                    interrupted = true;
                }
            } else {
                Thread.onSpinWait();
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        closed = true;
        inner.close();
    }

    /**
     * Counters since the model opened.
     *
     * @param awaits batches awaited
     * @param modelBoundAwaits batches whose modelled completion came after the real one (the model,
     *     not the real disk, set their time); close to {@code awaits} means the figures are the model's
     * @param modelWaitNanos total time added by the model after the real I/O had finished
     * @param requests requests per device
     * @param bytes bytes per device
     */
    public record Stats(long awaits, long modelBoundAwaits, long modelWaitNanos, long[] requests, long[] bytes) {
        /** Share of awaited batches whose time the model set, 0..1. */
        public double modelBoundShare() {
            return awaits == 0 ? 0 : (double) modelBoundAwaits / awaits;
        }
    }

    /** A snapshot of the counters (allocates; not for the hot path). */
    public Stats stats() {
        synchronized (lock) {
            return new Stats(awaits.get(), modelBoundAwaits.get(), modelWaitNanos.get(), requests.clone(),
                    bytes.clone());
        }
    }

    @Override
    public String toString() {
        return name + " (" + spec.describe(inner.devices().size()) + ")";
    }
}
