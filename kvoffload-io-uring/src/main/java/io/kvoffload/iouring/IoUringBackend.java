package io.kvoffload.iouring;

import io.kvoffload.internal.util.Checks;
import io.kvoffload.iouring.bindings.IoUringException;
import io.kvoffload.iouring.bindings.Posix;
import io.kvoffload.iouring.bindings.libc_h;
import io.kvoffload.iouring.bindings.liburing_h;
import io.kvoffload.spi.DramSlabListener;
import io.kvoffload.spi.IoBackend;
import io.kvoffload.spi.IoBatch;
import io.kvoffload.spi.IoDevice;
import io.kvoffload.spi.IoOptions;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * I/O backend on io_uring (liburing 2.3 through FFM): the pool files are opened with O_DIRECT and
 * registered with every ring, DRAM slabs are registered as fixed buffers as the DRAM tier creates
 * them, and all requests of a batch go to the kernel in one {@code io_uring_submit} (more only when
 * the batch is larger than the SQ).
 *
 * <p><b>Ring topology.</b> One ring serves all devices; each submitting thread gets a ring of its
 * own (up to {@link IoUringConfig#maxRings}, after which threads share rings). A ring has a lock;
 * submit and await take it, so batches of different threads run concurrently on different rings
 * without contention, and sharing a ring stays correct. The thread that awaits reaps every ready
 * completion of its ring and credits it to whichever batch it belongs to. Why this topology and
 * not a ring per device: docs/io-uring.md has the measurements.
 *
 * <p><b>Steady state allocates nothing.</b> Ring memory, batch slots and per-request progress are
 * allocated once; a request's {@code user_data} is its index plus the batch slot and generation
 * ({@code UserData}, packed into a {@code long});
 * SQEs and CQEs are read and written in place in the mapped rings.
 *
 * <p><b>Contract.</b> Short transfers are continued for the remainder, EINTR/EAGAIN retried, and
 * any other result reported through {@link IoBatch#failed} so {@link #await} throws a
 * {@link io.kvoffload.KvIoException} naming device, offset and length, after the whole batch
 * finished. {@link #close()} drains every ring, then unregisters buffers and files, exits the rings
 * and closes the files.
 */
public final class IoUringBackend implements IoBackend {
    private static final Logger LOG = LoggerFactory.getLogger(IoUringBackend.class);

    /** A DRAM slab known to the backend and the fixed-buffer slot it occupies in every ring. */
    record Slab(int slabId, int index, MemorySegment segment) {}

    private final List<IoDevice> devices;
    private final IoUringConfig config;
    private final int[] fds;
    private final boolean[] direct;
    private final ThreadLocal<Ring> threadRing = new ThreadLocal<>();
    private final Set<String> warned = ConcurrentHashMap.newKeySet();
    private final SlabListener slabListener;
    // Guarded by this: the slab table and ring creation (a new ring registers the slabs known at
    // that moment; a slab announced later is registered in every ring published by then).
    private final List<Slab> slabs = new ArrayList<>();
    private final BitSet usedBufferSlots = new BitSet();
    private volatile Ring[] rings = new Ring[0];
    private int nextShared;
    private boolean firstRingTaken;
    private volatile boolean closed;
    private final int maxInflight;

    private IoUringBackend(List<IoDevice> devices, IoOptions options, IoUringConfig config) throws IOException {
        this.devices = List.copyOf(devices);
        this.config = config;
        int n = this.devices.size();
        for (int d = 0; d < n; d++) {
            if (this.devices.get(d).index() != d) {
                throw new IllegalArgumentException("devices[" + d + "].index() = " + this.devices.get(d).index()
                        + "; device indices must be 0.." + (n - 1) + " in list order");
            }
        }
        this.maxInflight = inflightLimit(config, this.devices); // reads sysfs only: before any file opens
        fds = new int[n];
        java.util.Arrays.fill(fds, -1);
        direct = new boolean[n];
        slabListener = config.fixedBuffers() ? new SlabListener() : null;
        try {
            for (int d = 0; d < n; d++) {
                openDevice(this.devices.get(d), options.directIo());
            }
            // The first ring now, so a kernel that refuses io_uring fails open() rather than the
            // first batch.
            synchronized (this) {
                rings = new Ring[] {new Ring(0, this, config, maxInflight, fds, slabs)};
            }
        } catch (IOException | RuntimeException e) {
            closeFiles();
            throw e;
        }
        LOG.debug("io_uring backend over {} devices: {} SQ entries, at most {} in flight and {} rings, fixed files"
                + " {}", n, config.sqEntries(), maxInflight, config.maxRings(), rings[0].fixedFiles());
    }

    /** The configured depth, within what the block devices under the pool files queue (if asked and known). */
    private static int inflightLimit(IoUringConfig config, List<IoDevice> devices) {
        if (!config.deviceQueueLimit()) {
            return config.maxInflight();
        }
        int slots = BlockQueues.requestSlots(devices.stream().map(IoDevice::poolFile).toList());
        if (slots <= 0 || slots >= config.maxInflight()) {
            return config.maxInflight();
        }
        LOG.info("io_uring: at most {} requests in flight per ring instead of {}: the block devices under the pool"
                + " files queue {} (nr_requests), and a fuller ring would block the submitting thread in the kernel;"
                + " the rest wait in the ring's backlog", slots, config.maxInflight(), slots);
        return slots;
    }

    /** Most requests one ring has queued or in flight: the configured depth within the devices' queues. */
    public int maxInflight() {
        return maxInflight;
    }

    /**
     * Opens the backend over {@code devices}.
     *
     * @throws IOException when a pool file cannot be opened or the kernel refuses io_uring
     */
    public static IoUringBackend open(List<IoDevice> devices, IoOptions options, IoUringConfig config)
            throws IOException {
        Checks.notNull("devices", devices);
        Checks.notNull("options", options);
        Checks.notNull("config", config);
        if (devices.isEmpty()) {
            throw new IllegalArgumentException("devices is empty; at least one device is needed");
        }
        String reason = io.kvoffload.iouring.bindings.Liburing.unavailableReason();
        if (reason != null) {
            throw new IOException("io_uring backend unavailable: " + reason);
        }
        return new IoUringBackend(devices, options, config);
    }

    private void openDevice(IoDevice dev, boolean wantDirect) throws IOException {
        int d = dev.index();
        int flags = libc_h.O_RDWR | libc_h.O_CLOEXEC;
        int fd = -libc_h.EINVAL;
        if (wantDirect) {
            fd = Posix.open(dev.poolFile(), flags | libc_h.O_DIRECT, 0);
            if (fd >= 0) {
                direct[d] = true;
            } else if (fd == -libc_h.EINVAL) {
                LOG.warn("device {} ({}): the file system refuses O_DIRECT ({}); using buffered I/O", d,
                        dev.poolFile(), Posix.describe(libc_h.EINVAL));
            }
        }
        if (fd == -libc_h.EINVAL) {
            fd = Posix.open(dev.poolFile(), flags, 0);
        }
        if (fd < 0) {
            throw new IOException("cannot open device " + d + " pool file " + dev.poolFile() + ": "
                    + Posix.describe(-fd));
        }
        fds[d] = fd;
        // Block devices report size 0 here; only regular files can be checked.
        long size = Files.isRegularFile(dev.poolFile()) ? Files.size(dev.poolFile()) : Long.MAX_VALUE;
        if (size < dev.sizeBytes()) {
            LOG.warn("device {} ({}): the pool file has {} bytes but the device is declared with {}; reads past"
                    + " the end will fail", d, dev.poolFile(), size, dev.sizeBytes());
        }
    }

    @Override
    public String name() {
        return IoUringBackendProvider.NAME;
    }

    @Override
    public List<IoDevice> devices() {
        return devices;
    }

    @Override
    public boolean directIo(int device) {
        return direct[Checks.index("device", device, direct.length)];
    }

    int deviceCount() {
        return fds.length;
    }

    int fd(int device) {
        return fds[device];
    }

    /** The configuration the rings run with. */
    public IoUringConfig config() {
        return config;
    }

    @Override
    public void submit(IoBatch batch) {
        Checks.notNull("batch", batch);
        ensureOpen();
        // Outstanding completions mean the batch is still in flight on some ring (a batch's slot is
        // released only after its last completion was credited).
        if (batch.pending() != 0) {
            throw new IllegalStateException("batch is already in flight (" + batch.pending()
                    + " requests outstanding); await it before submitting it again");
        }
        if (batch.size() == 0) {
            batch.expectCompletions(0);
            return;
        }
        Ring ring = ringForThisThread();
        ring.lock.lock();
        try {
            if (ring.isClosed()) {
                throw new IllegalStateException("io_uring backend is closed");
            }
            ring.submit(batch);
        } finally {
            ring.lock.unlock();
        }
    }

    @Override
    public void await(IoBatch batch) {
        progress(batch, Integer.MAX_VALUE);
        var failure = batch.failure();
        if (failure != null) {
            throw failure;
        }
    }

    /**
     * Reaps what this thread's ring has ready and refills it from its backlog, without waiting; a
     * ring another thread holds right now is left to that thread (it is reaping already).
     */
    @Override
    public void poll() {
        Ring mine = threadRing.get();
        if (mine != null && mine.lock.tryLock()) {
            try {
                if (!mine.isClosed()) {
                    mine.poll();
                }
            } finally {
                mine.lock.unlock();
            }
        }
    }

    @Override
    public int awaitProgress(IoBatch batch, int seen) {
        progress(batch, seen);
        return batch.completedCount();
    }

    /**
     * Reaps on the ring that holds {@code batch} (this thread's first, then the others) until more
     * than {@code seen} of its requests completed or none is pending.
     */
    private void progress(IoBatch batch, int seen) {
        Checks.notNull("batch", batch);
        if (batch.pending() != 0 && batch.completedCount() <= seen) {
            Ring mine = threadRing.get();
            if (mine == null || !progressOn(mine, batch, seen)) {
                for (Ring r : rings) {
                    if (r != mine && progressOn(r, batch, seen)) {
                        break;
                    }
                }
            }
            if (batch.pending() != 0 && batch.completedCount() <= seen) {
                throw new IllegalStateException("batch has " + batch.pending()
                        + " requests outstanding but is not in flight on this backend");
            }
        }
    }

    private static boolean progressOn(Ring ring, IoBatch batch, int seen) {
        ring.lock.lock();
        try {
            return !ring.isClosed() && ring.awaitProgress(batch, seen);
        } finally {
            ring.lock.unlock();
        }
    }

    private Ring ringForThisThread() {
        Ring r = threadRing.get();
        if (r == null) {
            r = assignRing();
            threadRing.set(r);
        }
        return r;
    }

    /** A ring for a thread that has none: a new one while fewer than maxRings exist, else a shared one. */
    private synchronized Ring assignRing() {
        ensureOpen();
        Ring[] current = rings;
        // The first ring is made at open() and waits for its first thread.
        if (current.length == 1 && !firstRingTaken) {
            firstRingTaken = true;
            return current[0];
        }
        if (current.length < config.maxRings()) {
            try {
                Ring r = new Ring(current.length, this, config, maxInflight, fds, slabs);
                Ring[] next = java.util.Arrays.copyOf(current, current.length + 1);
                next[current.length] = r;
                rings = next;
                return r;
            } catch (IoUringException | RuntimeException e) {
                warnOnce("ring", "creating io_uring ring {} failed ({}); threads share the {} existing rings",
                        current.length, e.getMessage(), current.length);
            }
        }
        return current[nextShared++ % current.length];
    }

    @Override
    public void sync(int device) throws IOException {
        Checks.index("device", device, fds.length);
        ensureOpen();
        int ret = Posix.fdatasync(fds[device]);
        if (ret != 0) {
            throw new IOException("fdatasync of device " + device + " (" + devices.get(device).poolFile()
                    + ") failed: " + Posix.describe(-ret));
        }
    }

    @Override
    public DramSlabListener dramSlabListener() {
        return slabListener;
    }

    /** Counters summed over all rings, for benchmarks and diagnostics. */
    public IoUringStats stats() {
        long submits = 0;
        long waits = 0;
        long fixed = 0;
        long plain = 0;
        long shorts = 0;
        long retried = 0;
        long done = 0;
        int registered = 0;
        Ring[] rs = rings;
        for (Ring r : rs) {
            r.lock.lock();
            try {
                submits += r.submitCalls;
                waits += r.waitCalls;
                fixed += r.fixedIos;
                plain += r.plainIos;
                shorts += r.shortTransfers;
                retried += r.retries;
                done += r.completions;
                registered = Math.max(registered, r.registeredBuffers());
            } finally {
                r.lock.unlock();
            }
        }
        return new IoUringStats(rs.length, submits, waits, fixed, plain, shorts, retried, done, registered);
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("io_uring backend is closed");
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        for (Ring r : rings) {
            r.lock.lock();
            try {
                r.drainAndClose();
            } finally {
                r.lock.unlock();
            }
        }
        closeFiles();
    }

    private void closeFiles() {
        for (int d = 0; d < fds.length; d++) {
            if (fds[d] >= 0) {
                int ret = Posix.close(fds[d]);
                if (ret != 0) {
                    LOG.warn("closing device {} failed: {}", d, Posix.describe(-ret));
                }
                fds[d] = -1;
            }
        }
    }

    // ---------------------------------------------------------------- fixed buffers

    /** Logs {@code message} at WARN the first time {@code key} comes up on this backend. */
    void warnOnce(String key, String message, Object... args) {
        if (warned.add(key)) {
            LOG.warn(message, args);
        }
    }

    /** A ring could not register {@code slab}: say once which limit bit. */
    void registrationFailed(Slab slab, int errno) {
        if (errno == libc_h.ENOMEM) {
            long limit = Posix.memlockLimit();
            warnOnce("memlock", "registering DRAM slab {} ({} bytes) as an io_uring fixed buffer failed: {}."
                    + " RLIMIT_MEMLOCK is {} (ulimit -l; registered buffers are locked memory, counted per ring);"
                    + " raise it (ulimit -l unlimited, LimitMEMLOCK=infinity, docker --ulimit memlock=-1) to use"
                    + " fixed buffers. Slabs that do not fit use plain READ/WRITE.", slab.slabId(),
                    slab.segment().byteSize(), Posix.describe(errno),
                    limit == Long.MAX_VALUE ? "unlimited" : limit < 0 ? "unknown" : limit + " bytes");
        } else {
            warnOnce("register-" + errno, "registering DRAM slab {} ({} bytes at 0x{}) as an io_uring fixed buffer"
                    + " failed: {}; it is used with plain READ/WRITE", slab.slabId(), slab.segment().byteSize(),
                    Long.toHexString(slab.segment().address()), Posix.describe(errno));
        }
    }

    /** Registers DRAM slabs with every ring as they appear, and drops them before they are freed. */
    private final class SlabListener implements DramSlabListener {
        @Override
        public void slabAllocated(int slabId, MemorySegment slab) {
            if (slab == null || !slab.isNative() || slab.byteSize() == 0) {
                throw new IllegalArgumentException("slab " + slabId + " must be a non-empty native segment; got "
                        + slab);
            }
            if (slab.byteSize() > liburing_h.IORING_MAX_REG_BUFFER_BYTES) {
                warnOnce("1g", "DRAM slab {} has {} bytes, more than io_uring's 1 GiB ({} bytes) limit per"
                        + " registered buffer; I/O into it uses plain READ/WRITE (use slabs of at most 1 GiB to"
                        + " get fixed buffers)", slabId, slab.byteSize(), liburing_h.IORING_MAX_REG_BUFFER_BYTES);
                return;
            }
            Slab s;
            Ring[] targets;
            synchronized (IoUringBackend.this) {
                if (closed) {
                    return;
                }
                int index = usedBufferSlots.nextClearBit(0);
                if (index >= config.bufferSlots()) {
                    warnOnce("slots", "all {} fixed-buffer slots are in use; DRAM slab {} and later ones use"
                            + " plain READ/WRITE", config.bufferSlots(), slabId);
                    return;
                }
                usedBufferSlots.set(index);
                s = new Slab(slabId, index, slab);
                slabs.add(s);
                targets = rings;
            }
            eachLocked(targets, s, Ring::registerSlab);
        }

        /** Applies {@code op} to each ring and {@code s} while holding that ring's lock. */
        private static void eachLocked(Ring[] targets, Slab s, BiConsumer<Ring, Slab> op) {
            for (Ring r : targets) {
                r.lock.lock();
                try {
                    op.accept(r, s);
                } finally {
                    r.lock.unlock();
                }
            }
        }

        @Override
        public void slabFreed(int slabId, MemorySegment slab) {
            Slab s = null;
            Ring[] targets;
            synchronized (IoUringBackend.this) {
                for (int i = 0; i < slabs.size(); i++) {
                    Slab c = slabs.get(i);
                    if (c.slabId() == slabId && c.segment().address() == slab.address()
                            && c.segment().byteSize() == slab.byteSize()) {
                        s = slabs.remove(i);
                        break;
                    }
                }
                targets = rings;
            }
            if (s == null) {
                return;
            }
            eachLocked(targets, s, Ring::unregisterSlab);
            synchronized (IoUringBackend.this) {
                usedBufferSlots.clear(s.index());
            }
        }
    }
}
