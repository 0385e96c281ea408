package io.kvoffload.spi;

import io.kvoffload.KvIoException;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/**
 * A reusable batch of aligned read and write requests across devices.
 *
 * <p>Every request is validated when it is added: the device exists, the buffer is native memory
 * whose address, length and file offset are multiples of the device's direct-I/O alignment, and
 * the range lies inside the pool file. A backend may therefore hand {@code buffer.address()} and
 * {@code buffer.byteSize()} to the kernel as they are: no request can make the kernel touch memory
 * outside its segment or a file outside its pool.
 *
 * <p>The arrays are allocated once, in the constructor; filling, submitting and completing a batch
 * allocates nothing on the heap (only a failure creates its exception).
 *
 * <p>Successful completions are also logged in the order they arrive ({@link #completedCount()},
 * {@link #completedRequest(int)}), so a caller can consume requests while the rest of the batch is
 * still in flight (see {@link IoBackend#awaitProgress}).
 */
public final class IoBatch {
    public static final byte READ = 0;
    public static final byte WRITE = 1;

    private static final VarHandle PENDING;
    private static final VarHandle LOGGED;
    private static final VarHandle WAITER;
    /** How often a second waiter (only the first is unparked by completions) looks again. */
    private static final long SECONDARY_WAIT_NANOS = 200_000;
    private static final VarHandle LOG_ENTRY = MethodHandles.arrayElementVarHandle(int[].class);

    static {
        try {
            PENDING = MethodHandles.lookup().findVarHandle(IoBatch.class, "pending", int.class);
            LOGGED = MethodHandles.lookup().findVarHandle(IoBatch.class, "logged", int.class);
            WAITER = MethodHandles.lookup().findVarHandle(IoBatch.class, "waiter", Thread.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final long[] deviceSize;
    private final int[] deviceAlignment;
    private final byte[] ops;
    private final int[] devices;
    private final long[] offsets;
    private final MemorySegment[] buffers;
    private final long[] bufferOffsets;
    private final long[] lengths;
    private final long[] tags;
    /** Successfully completed request indices + 1, in completion order; 0 = slot reserved, not yet written. */
    private final int[] completionLog;
    private int size;

    @SuppressWarnings("unused") // accessed through PENDING
    private volatile int pending;
    @SuppressWarnings("unused") // accessed through LOGGED
    private volatile int logged;
    /** The waiter completions unpark; further waiters (e.g. a closing engine) poll. */
    private volatile Thread waiter;
    /** The waiter wakes once more than this many requests completed; MAX_VALUE: only when none is pending. */
    private volatile int waitSeen = Integer.MAX_VALUE;
    private volatile KvIoException failure;

    public IoBatch(List<IoDevice> deviceList, int capacity) {
        if (capacity <= 0) {
            throw new IllegalArgumentException("capacity = " + capacity + " must be positive");
        }
        deviceSize = new long[deviceList.size()];
        deviceAlignment = new int[deviceList.size()];
        for (int i = 0; i < deviceSize.length; i++) {
            deviceSize[i] = deviceList.get(i).sizeBytes();
            deviceAlignment[i] = deviceList.get(i).alignment();
        }
        ops = new byte[capacity];
        devices = new int[capacity];
        offsets = new long[capacity];
        buffers = new MemorySegment[capacity];
        bufferOffsets = new long[capacity];
        lengths = new long[capacity];
        tags = new long[capacity];
        completionLog = new int[capacity];
    }

    public int capacity() {
        return ops.length;
    }

    public int size() {
        return size;
    }

    public boolean isFull() {
        return size == ops.length;
    }

    /** Forgets all requests (and drops the buffer references) so the batch can be refilled. */
    public void clear() {
        if (pending() > 0) {
            throw new IllegalStateException("batch has " + pending() + " requests in flight; await it before clearing");
        }
        for (int i = 0; i < size; i++) {
            buffers[i] = null;
        }
        size = 0;
        failure = null;
    }

    /** Adds a read of {@code buffer.byteSize()} bytes at {@code offset} of {@code device}. */
    public int addRead(int device, long offset, MemorySegment buffer, long tag) {
        return add(READ, device, offset, buffer, 0, buffer == null ? 0 : buffer.byteSize(), tag);
    }

    /**
     * Adds a read of {@code length} bytes at {@code offset} of {@code device} into
     * {@code buffer[bufferOffset, bufferOffset + length)}. Unlike slicing the buffer first, this
     * creates no segment object, so a hot path can fill batches without allocating.
     */
    public int addRead(int device, long offset, MemorySegment buffer, long bufferOffset, long length, long tag) {
        return add(READ, device, offset, buffer, bufferOffset, length, tag);
    }

    /** Adds a write of all of {@code buffer} at {@code offset} of {@code device}. */
    public int addWrite(int device, long offset, MemorySegment buffer, long tag) {
        return add(WRITE, device, offset, buffer, 0, buffer == null ? 0 : buffer.byteSize(), tag);
    }

    private int add(byte op, int device, long offset, MemorySegment buffer, long bufferOffset, long length,
            long tag) {
        if (pending() > 0) {
            throw new IllegalStateException("batch is in flight; await it before adding requests");
        }
        if (size == ops.length) {
            throw new IllegalStateException("batch is full: capacity " + ops.length);
        }
        if (device < 0 || device >= deviceSize.length) {
            throw new IllegalArgumentException(
                    "device = " + device + " is out of range; allowed: 0.." + (deviceSize.length - 1));
        }
        if (buffer == null || !buffer.isNative()) {
            throw new IllegalArgumentException("buffer must be a native MemorySegment (heap memory cannot be"
                    + " handed to the kernel); got " + buffer);
        }
        if (!buffer.scope().isAlive()) {
            throw new IllegalArgumentException("buffer " + buffer + " was freed (its arena is closed); allowed: memory"
                    + " that stays allocated until the batch completes");
        }
        if (bufferOffset < 0 || length < 0 || bufferOffset > buffer.byteSize() - length) {
            throw new IllegalArgumentException("buffer range [" + bufferOffset + ", " + bufferOffset + " + " + length
                    + ") lies outside the buffer of " + buffer.byteSize() + " bytes");
        }
        long align = deviceAlignment[device];
        if (length <= 0 || length > Integer.MAX_VALUE || (length & (align - 1)) != 0) {
            throw new IllegalArgumentException("buffer length = " + length + " must be a positive multiple of the"
                    + " device " + device + " alignment " + align + " and at most " + Integer.MAX_VALUE);
        }
        if (((buffer.address() + bufferOffset) & (align - 1)) != 0) {
            throw new IllegalArgumentException("buffer address 0x" + Long.toHexString(buffer.address() + bufferOffset)
                    + " is not aligned to the device " + device + " alignment " + align);
        }
        if (offset < 0 || (offset & (align - 1)) != 0 || offset > deviceSize[device] - length) {
            throw new IllegalArgumentException("offset = " + offset + " with length " + length
                    + " is outside device " + device + ": allowed offsets are multiples of " + align
                    + " in 0.." + (deviceSize[device] - length));
        }
        int i = size++;
        ops[i] = op;
        devices[i] = device;
        offsets[i] = offset;
        buffers[i] = buffer;
        bufferOffsets[i] = bufferOffset;
        lengths[i] = length;
        tags[i] = tag;
        return i;
    }

    public byte op(int i) {
        return ops[check(i)];
    }

    public int device(int i) {
        return devices[check(i)];
    }

    public long offset(int i) {
        return offsets[check(i)];
    }

    /** The request's memory as a segment of its own (creates a slice when the request named a range). */
    public MemorySegment buffer(int i) {
        check(i);
        MemorySegment b = buffers[i];
        return bufferOffsets[i] == 0 && lengths[i] == b.byteSize() ? b : b.asSlice(bufferOffsets[i], lengths[i]);
    }

    /** The segment the request's memory lies in; the request covers {@link #bufferOffset}..+{@link #length}. */
    public MemorySegment segment(int i) {
        return buffers[check(i)];
    }

    public long bufferOffset(int i) {
        return bufferOffsets[check(i)];
    }

    /** Bytes the request transfers. */
    public long length(int i) {
        return lengths[check(i)];
    }

    public long tag(int i) {
        return tags[check(i)];
    }

    private int check(int i) {
        if (i < 0 || i >= size) {
            throw new IndexOutOfBoundsException("request " + i + " of a batch of " + size);
        }
        return i;
    }

    // ---- completion support for backends ----

    /**
     * Called by a backend in {@code submit} before any request reaches the kernel or a worker:
     * every buffer must still be allocated. A buffer freed after it was added (its arena closed)
     * would otherwise receive a read into memory that may belong to someone else by now.
     *
     * @throws IllegalStateException naming the first request whose buffer was freed; nothing of the
     *     batch has been started
     */
    public void checkBuffersAlive() {
        for (int i = 0; i < size; i++) {
            if (!buffers[i].scope().isAlive()) {
                throw new IllegalStateException("request " + i + " (" + (ops[i] == READ ? "read" : "write") + " of "
                        + lengths[i] + " bytes at offset " + offsets[i] + " of device " + devices[i] + "): its buffer"
                        + " was freed after it was added (the segment's arena is closed); nothing of the batch was"
                        + " submitted");
            }
        }
    }

    /** Called by a backend before it starts the requests: {@code n} completions will follow. */
    public void expectCompletions(int n) {
        if (n < 0 || n > ops.length) {
            throw new IllegalArgumentException("n = " + n + " completions; allowed: 0.." + ops.length);
        }
        // Claimed atomically: two threads submitting the same batch at once cannot both start it.
        if (n > 0 ? !PENDING.compareAndSet(this, 0, n) : pending() != 0) {
            throw new IllegalStateException("batch is already in flight (" + pending() + " requests pending): a batch"
                    + " is used by one thread at a time");
        }
        failure = null;
        // Only the first n positions can be reserved by this submission's completions, none of
        // which can arrive before the backend starts the requests, after this returns.
        java.util.Arrays.fill(completionLog, 0, n, 0);
        LOGGED.setVolatile(this, 0);
    }

    /** Called by a backend when request {@code i} finished successfully. */
    public void completed(int i) {
        // Logged before the count-down: whoever sees pending() == 0 sees every logged completion.
        int k = (int) LOGGED.getAndAdd(this, 1);
        LOG_ENTRY.setRelease(completionLog, k, i + 1);
        if (k >= waitSeen) {
            Thread w = waiter;
            if (w != null) {
                LockSupport.unpark(w);
            }
        }
        countDown();
    }

    /** Called by a backend when request {@code i} failed for good. The first failure is kept. */
    public void failed(int i, int errno, String message, Throwable cause) {
        if (failure == null) {
            failure = new KvIoException(devices[i], offsets[i], lengths[i], errno, message, cause);
        }
        countDown();
    }

    private void countDown() {
        if ((int) PENDING.getAndAdd(this, -1) == 1) {
            Thread w = waiter;
            if (w != null) {
                LockSupport.unpark(w);
            }
        }
    }

    /**
     * Requests that completed successfully since the batch was submitted (failed ones are not
     * counted; {@link IoBackend#await} reports them). Never decreases while the batch is in flight.
     */
    public int completedCount() {
        return (int) LOGGED.getVolatile(this);
    }

    /**
     * The request that completed {@code k}-th, for {@code k < completedCount()}: its data is in its
     * buffer. Requests appear in the order the backend credited them.
     */
    public int completedRequest(int k) {
        if (k < 0 || k >= completedCount()) {
            throw new IndexOutOfBoundsException("completion " + k + " of " + completedCount() + " logged");
        }
        int v;
        // A completer reserves the position before writing it: wait out that instant.
        while ((v = (int) LOG_ENTRY.getAcquire(completionLog, k)) == 0) {
            Thread.onSpinWait();
        }
        return v - 1;
    }

    /**
     * Parks until more than {@code seen} requests completed or none is pending, for backends whose
     * completions arrive on other threads; returns {@link #completedCount()}. Does not throw.
     */
    public int awaitProgress(int seen) {
        parkUntil(seen);
        return completedCount();
    }

    /**
     * Parks until more than {@code seen} requests completed or none is pending. Any number of
     * threads may wait: the first is unparked by completions, the others (rare: a close waiting
     * beside the batch's own thread) wake every {@value #SECONDARY_WAIT_NANOS} ns to look again, so
     * nobody waits forever and completions stay allocation-free.
     */
    private void parkUntil(int seen) {
        Thread me = Thread.currentThread();
        boolean primary = WAITER.compareAndSet(this, null, me);
        if (primary) {
            // After the waiter is published: a completer that sees this threshold also sees the waiter.
            waitSeen = seen;
        }
        boolean interrupted = false;
        try {
            while (pending() > 0 && completedCount() <= seen) {
                if (primary) {
                    LockSupport.park(this);
                } else {
                    LockSupport.parkNanos(this, SECONDARY_WAIT_NANOS);
                }
                if (Thread.interrupted()) {
                    // Buffers stay in use until the kernel is done, so keep waiting; re-assert later.
                    interrupted = true;
                }
            }
        } finally {
            if (primary) {
                waitSeen = Integer.MAX_VALUE;
                WAITER.setVolatile(this, null);
            }
        }
        if (interrupted) {
            me.interrupt();
        }
    }

    /** Completions still outstanding. */
    public int pending() {
        return (int) PENDING.getVolatile(this);
    }

    /**
     * Parks until every expected completion arrived, then throws the first failure if there was
     * one. For backends whose completions arrive on other threads.
     */
    public void awaitCompletions() {
        parkUntil(Integer.MAX_VALUE);
        KvIoException f = failure;
        if (f != null) {
            throw f;
        }
    }

    /** The first failure recorded since the last {@link #expectCompletions}, or null. */
    public KvIoException failure() {
        return failure;
    }
}
