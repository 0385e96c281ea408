package io.kvoffload.internal.io;

import io.kvoffload.FaultInjection;
import io.kvoffload.KvIoException;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.spi.IoBackend;
import io.kvoffload.spi.IoBatch;
import io.kvoffload.spi.IoDevice;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An {@link IoBackend} decorator that injects faults into the real I/O below it, drawn from a seed
 * ({@link FaultInjection}): failures reported as errors (EIO, ENOSPC, a vanished device), silent
 * corruption in flight (torn reads, bit flips in the read buffer) and on the media (bit flips and
 * torn writes applied to the pool file after a write completed), and latency spikes.
 *
 * <p>Each request's fault is decided when its batch is submitted. The real I/O always runs whole;
 * faults are applied when the batch is awaited, before the caller can see any data, so
 * {@link #awaitProgress} waits for the whole batch (as the SPI's default does). A reported failure
 * is thrown, as the SPI asks, only after every request of the batch has finished.
 */
public final class FaultInjectingBackend extends WholeBatchBackend {
    private static final Logger LOG = LoggerFactory.getLogger(FaultInjectingBackend.class);
    static final int EIO = 5;
    static final int ENOSPC = 28;

    /** The kinds of fault, as counted by {@link #injected(Kind)}. */
    public enum Kind { EIO, TORN_READ, BIT_FLIP_READ, BIT_FLIP_DISK, TORN_WRITE, ENOSPC, LATENCY_SPIKE, VANISHED }

    private static final byte NONE = -1;

    private final FaultInjection spec;
    private final SplittableRandom random;
    private final AtomicLongArray counts = new AtomicLongArray(Kind.values().length);
    private final Object lock = new Object();
    private long requests;
    private long injectedSoFar;
    private volatile boolean vanished;
    /** Per batch in flight: the fault of each request (NONE for none) and a random word for each. */
    private final java.util.Map<IoBatch, Plan> plans = new java.util.IdentityHashMap<>();

    /** Failures already thrown for a batch: thrown again by a later await until it is resubmitted. */
    private final java.util.Map<IoBatch, KvIoException> thrown = new java.util.IdentityHashMap<>();

    private record Plan(byte[] kinds, long[] words, boolean spike) {}

    private FaultInjectingBackend(IoBackend inner, FaultInjection spec) {
        super(inner);
        this.spec = spec;
        this.random = new SplittableRandom(spec.seed());
        LOG.warn("FAULT INJECTION is on over backend {}: {}", inner.name(), spec);
    }

    public static FaultInjectingBackend wrap(IoBackend inner, FaultInjection spec) {
        Checks.notNull("inner", inner);
        Checks.notNull("spec", spec);
        if (spec.onlyDevice() >= inner.devices().size()) {
            throw new IllegalArgumentException("faultInjection.onlyDevice = " + spec.onlyDevice()
                    + " is out of range; allowed: -1 or 0.." + (inner.devices().size() - 1));
        }
        if (spec.vanishDevice() >= inner.devices().size()) {
            throw new IllegalArgumentException("faultInjection.vanishDevice = " + spec.vanishDevice()
                    + " is out of range; allowed: -1 or 0.." + (inner.devices().size() - 1));
        }
        return new FaultInjectingBackend(inner, spec);
    }

    /**
     * Makes the configured vanishing device ({@link FaultInjection#vanishDevice()}) vanish now, before
     * its request count is reached (a no-op once it has vanished): a test arms the fault at a chosen
     * point (after its setup, right before the call under test) instead of predicting how many
     * requests come first. {@code vanishingDevice(device, Long.MAX_VALUE)} vanishes only when armed.
     *
     * @throws IllegalStateException when no vanishing device is configured
     */
    public void vanishNow() {
        if (spec.vanishDevice() < 0) {
            throw new IllegalStateException("no vanishing device is configured: " + spec);
        }
        synchronized (lock) {
            if (!vanished) {
                vanished = true;
                counts.incrementAndGet(Kind.VANISHED.ordinal());
                LOG.warn("fault injection: device {} vanishes now, after {} requests", spec.vanishDevice(), requests);
            }
        }
    }

    /** How many faults of {@code kind} were injected so far. */
    public long injected(Kind kind) {
        return counts.get(kind.ordinal());
    }

    @Override
    public String name() {
        return inner.name() + "+faults";
    }

    @Override
    public void submit(IoBatch batch) {
        int n = batch.size();
        byte[] kinds = new byte[n];
        long[] words = new long[n];
        boolean spike;
        synchronized (lock) {
            for (int i = 0; i < n; i++) {
                kinds[i] = decide(batch.op(i), batch.device(i));
                if (kinds[i] != NONE && kinds[i] != (byte) Kind.VANISHED.ordinal()) {
                    injectedSoFar++;
                }
                words[i] = random.nextLong();
            }
            spike = spec.latencySpike() > 0 && random.nextDouble() < spec.latencySpike();
            plans.put(batch, new Plan(kinds, words, spike));
            thrown.remove(batch);
        }
        inner.submit(batch);
    }

    private byte decide(byte op, int device) {
        requests++;
        if (spec.vanishDevice() >= 0 && requests > spec.vanishAfterRequests() && !vanished) {
            vanished = true;
            counts.incrementAndGet(Kind.VANISHED.ordinal());
            LOG.warn("fault injection: device {} vanishes after {} requests", spec.vanishDevice(), requests - 1);
        }
        if (vanished && device == spec.vanishDevice()) {
            return (byte) Kind.VANISHED.ordinal();
        }
        double u = random.nextDouble();
        if ((spec.onlyDevice() >= 0 && device != spec.onlyDevice()) || injectedSoFar >= spec.limit()) {
            return NONE;
        }
        if ((u -= spec.eio()) < 0) {
            return (byte) Kind.EIO.ordinal();
        }
        if (op == IoBatch.READ) {
            if ((u -= spec.tornRead()) < 0) {
                return (byte) Kind.TORN_READ.ordinal();
            }
            if ((u -= spec.bitFlipRead()) < 0) {
                return (byte) Kind.BIT_FLIP_READ.ordinal();
            }
        } else {
            if ((u -= spec.enospc()) < 0) {
                return (byte) Kind.ENOSPC.ordinal();
            }
            if ((u -= spec.bitFlipDisk()) < 0) {
                return (byte) Kind.BIT_FLIP_DISK.ordinal();
            }
            if ((u -= spec.tornWrite()) < 0) {
                return (byte) Kind.TORN_WRITE.ordinal();
            }
        }
        return NONE;
    }

    @Override
    public void await(IoBatch batch) {
        Plan plan;
        try {
            inner.await(batch);
        } finally {
            synchronized (lock) {
                plan = plans.remove(batch);
            }
        }
        if (plan == null) {
            KvIoException again;
            synchronized (lock) {
                again = thrown.get(batch);
            }
            if (again != null) {
                throw again;
            }
            return;
        }
        if (plan.spike) {
            counts.incrementAndGet(Kind.LATENCY_SPIKE.ordinal());
            LockSupport.parkNanos(spec.latencySpikeMillis() * 1_000_000L);
        }
        KvIoException failure = null;
        for (int i = 0; i < plan.kinds.length; i++) {
            if (plan.kinds[i] == NONE) {
                continue;
            }
            Kind k = Kind.values()[plan.kinds[i]];
            counts.incrementAndGet(k.ordinal());
            long w = plan.words[i];
            MemorySegment buf = batch.segment(i);
            switch (k) {
                case EIO, VANISHED, ENOSPC -> {
                    if (batch.op(i) == IoBatch.READ) {
                        garble(buf, 0, buf.byteSize(), w);
                    }
                    if (failure == null) {
                        int errno = k == Kind.ENOSPC ? ENOSPC : EIO;
                        failure = new KvIoException(batch.device(i), batch.offset(i), batch.length(i), errno,
                                "injected " + k, null);
                    }
                }
                case TORN_READ -> garble(buf, buf.byteSize() / 2, buf.byteSize() - buf.byteSize() / 2, w);
                case BIT_FLIP_READ -> flip(buf, w);
                case BIT_FLIP_DISK -> onDisk(batch, i, w, false);
                case TORN_WRITE -> onDisk(batch, i, w, true);
                default -> throw new AssertionError(k);
            }
        }
        if (failure != null) {
            synchronized (lock) {
                thrown.put(batch, failure);
            }
            throw failure;
        }
    }

    private static void garble(MemorySegment buf, long from, long length, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        for (long at = from; at < from + length; at++) {
            buf.set(ValueLayout.JAVA_BYTE, at, (byte) r.nextInt());
        }
    }

    private static void flip(MemorySegment buf, long w) {
        long at = Long.remainderUnsigned(w, buf.byteSize());
        byte b = buf.get(ValueLayout.JAVA_BYTE, at);
        buf.set(ValueLayout.JAVA_BYTE, at, (byte) (b ^ (1 << (int) ((w >>> 59) & 7))));
    }

    /** Damages the extent just written, on the pool file itself (buffered I/O; O_DIRECT reads see it). */
    private void onDisk(IoBatch batch, int i, long w, boolean torn) {
        IoDevice d = inner.devices().get(batch.device(i));
        try (FileChannel ch = FileChannel.open(d.poolFile(), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            long len = batch.length(i);
            if (torn) {
                ByteBuffer zeros = ByteBuffer.allocate((int) (len - len / 2));
                ch.write(zeros, batch.offset(i) + len / 2);
            } else {
                long at = batch.offset(i) + Long.remainderUnsigned(w, len);
                ByteBuffer one = ByteBuffer.allocate(1);
                ch.read(one, at);
                one.put(0, (byte) (one.get(0) ^ (1 << (int) ((w >>> 59) & 7)))).rewind();
                ch.write(one, at);
            }
            ch.force(false);
        } catch (IOException e) {
            LOG.warn("fault injection could not damage device {} at {}: {}", batch.device(i), batch.offset(i),
                    e.toString());
        }
    }

    @Override
    public void sync(int device) throws IOException {
        if (vanished && device == spec.vanishDevice()) {
            throw new IOException("injected: device " + device + " vanished");
        }
        inner.sync(device);
    }

    @Override
    public String toString() {
        return name();
    }
}
