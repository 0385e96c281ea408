package io.kvoffload.internal.storage;

import io.kvoffload.KvCapacityException;
import io.kvoffload.KvConfig;
import io.kvoffload.KvDegradation;
import io.kvoffload.KvDeviceUnavailableException;
import io.kvoffload.KvException;
import io.kvoffload.KvIoException;
import io.kvoffload.SequenceInfo;
import io.kvoffload.internal.dram.DramPool;
import io.kvoffload.internal.dram.DramSlot;
import io.kvoffload.internal.elastic.ElasticDramPool;
import io.kvoffload.internal.io.DeviceModel;
import io.kvoffload.internal.io.FaultInjectingBackend;
import io.kvoffload.internal.obs.Degradations;
import io.kvoffload.internal.obs.Flight;
import io.kvoffload.spi.DeviceTier;
import io.kvoffload.spi.DramSlabListener;
import io.kvoffload.spi.IoBackend;
import io.kvoffload.spi.IoBatch;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The multi-SSD store behind an engine: the devices and their allocators, the I/O backend, the
 * DRAM tier, the manifests and the catalog of committed sequences. Metadata operations are
 * serialised on this object; data I/O is not (each sequence runs its own batches).
 */
public final class Store implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Store.class);

    private final KvConfig config;
    private final FileModes modes;
    private final StoreLock lock;
    private final DeviceSet deviceSet;
    private final List<DevicePool> devices;
    private final List<String> deviceUuids;
    private final ManifestStore manifests;
    private final SequenceCatalog catalog = new SequenceCatalog();
    /** Holders of the extents forks share; every free of an extent goes through it. */
    private final SharedExtents shared = new SharedExtents();
    /** Deletions a device that is away has not seen yet. */
    private final Tombstones tombstones;
    private Quarantine quarantine;
    private StoreRecord record;
    private IoBackend backend;
    private DramPool dram;
    /** The elastic units of decoders' hot caches and reuse buffers, inside the DRAM budget. */
    private ElasticDramPool elastic;
    private final IoStats stats;
    private DeviceTier deviceTier;
    private FaultInjectingBackend faults;
    private final ListenerThread listeners = new ListenerThread();
    private final Degradations degradations = new Degradations(listeners::executor);
    private volatile java.util.function.Predicate<String> evictFirst = id -> false;
    private volatile RemoteCopy remoteCopy; // null without a remote tier

    public Store(KvConfig config) throws IOException {
        this.config = config;
        this.modes = FileModes.parse("fileMode", config.fileMode());
        List<Path> lockDirs = new ArrayList<>(config.ssdDirectories());
        Path meta = config.metadataDirectory();
        if (meta != null) {
            modes.createDirectory(meta);
            lockDirs.add(meta);
        }
        this.lock = StoreLock.acquire(lockDirs, "kvoffload engine", modes);
        try {
            this.deviceSet = DeviceSet.open(config, modes);
            this.record = deviceSet.record();
            this.devices = deviceSet.healthy();
            this.deviceUuids = devices.stream().map(DevicePool::uuid).toList();
            this.stats = new IoStats(devices.size());
            List<Path> readDirs = new ArrayList<>();
            if (meta != null) {
                readDirs.add(meta);
            }
            for (Path d : config.ssdDirectories()) {
                readDirs.add(d.resolve(DevicePool.MANIFEST_DIR));
            }
            this.manifests = new ManifestStore(readDirs, manifestWriteDirs(), modes);
            manifests.removeLeftovers();
            this.tombstones = new Tombstones(manifests, modes);
            tombstones.load();
            ManifestRecovery recovery = new ManifestRecovery(config, deviceSet, record, devices, deviceUuids, catalog,
                    manifests, shared, tombstones);
            this.quarantine = recovery.load();
            recovery.reReplicate();
            if (tombstones.pending() && deviceSet.everyMemberReachable(record, manifests.readDirs())) {
                tombstones.collect(); // every device has now seen each deletion: nothing left to outvote
            }
            for (DeviceSet.Unavailable u : deviceSet.unavailable()) {
                degradations.report(new KvDegradation(KvDegradation.Kind.DEVICE_UNAVAILABLE, null, -1,
                        "device " + u.uuid() + " (" + u.directory() + ") is unavailable: " + u.reason()));
            }
            recovery.found.forEach(degradations::report);
            degradations.opened();
            for (DevicePool d : devices) {
                d.onFailure(why -> degradations.report(new KvDegradation(KvDegradation.Kind.DEVICE_FAILED, null, -1,
                        "device " + d.index() + " (" + d.uuid() + ", " + d.directory() + ") failed: " + why
                                + "; it serves nothing more until the engine is reopened")));
            }
        } catch (IOException | RuntimeException | Error e) {
            lock.close();
            throw e;
        }
        try {
            openTiers();
        } catch (IOException | RuntimeException | Error e) {
            lock.close();
            throw e;
        }
    }

    private void openTiers() throws IOException {
        int maxAlign = devices.stream().mapToInt(DevicePool::alignment).max().orElse(4096);
        this.dram = new DramPool(config.dramBudgetBytes(), Math.max(config.dramSlabBytes(), maxAlign),
                config.dramHugePages());
        this.elastic = new ElasticDramPool(dram, config.dramBudgetBytes(), config.dramSlabBytes());
        IoBackend real = TierProviders.openBackend(config, devices);
        // A device model makes each directory behave like an SSD of its own (docs/configuration.md).
        try {
            IoBackend b = config.deviceModel() == null ? real : DeviceModel.wrap(real, config.deviceModel());
            if (config.faultInjection() != null) {
                faults = FaultInjectingBackend.wrap(b, config.faultInjection());
                b = faults;
            }
            this.backend = new DeviceHealth(b, devices);
        } catch (RuntimeException e) {
            real.close();
            throw e;
        }
        try {
            for (DramSlabListener l : ServiceLoader.load(DramSlabListener.class)) {
                dram.addListener(l);
            }
            DramSlabListener own = backend.dramSlabListener();
            if (own != null) {
                dram.addListener(own);
            }
        } catch (RuntimeException e) {
            backend.close();
            throw e;
        }
        DeviceTier tier = null;
        try {
            tier = TierProviders.openDeviceTier(config, dram);
            if (tier != null && tier.dramSlabListener() != null) {
                dram.addListener(tier.dramSlabListener());
            }
        } catch (RuntimeException e) {
            try {
                backend.close();
                dram.close();
            } finally {
                if (tier != null) {
                    tier.close();
                }
            }
            throw e;
        }
        this.deviceTier = tier;
    }

    /**
     * Where commits write manifests: the metadata directory if configured, then the
     * {@code manifests} folders of healthy devices in UUID order (stable whatever the configured
     * order), {@code metadataCopies} copies in all where there are enough devices.
     */
    private List<Path> manifestWriteDirs() {
        List<Path> out = new ArrayList<>();
        if (config.metadataDirectory() != null) {
            out.add(config.metadataDirectory());
        }
        devices.stream().filter(d -> d.failure() == null).sorted(Comparator.comparing(DevicePool::uuid))
                .limit(Math.max(0, config.metadataCopies() - out.size()))
                .forEach(d -> out.add(d.directory().resolve(DevicePool.MANIFEST_DIR)));
        return out;
    }

    public KvConfig config() {
        return config;
    }

    public List<DevicePool> devices() {
        return devices;
    }

    public List<String> deviceUuids() {
        return deviceUuids;
    }

    public IoBackend backend() {
        return backend;
    }

    /** Runs a batch to completion and counts its requests in the device statistics. */
    public void execute(IoBatch batch) {
        backend.execute(batch);
        stats.count(batch);
    }

    /**
     * Makes the completed writes on device {@code d} durable (fdatasync).
     *
     * @throws KvIoException naming the device if the sync fails
     */
    public void syncDevice(int d) {
        try {
            backend.sync(d);
        } catch (IOException e) {
            throw KvIoException.of("fdatasync of device " + d + " (" + devices.get(d).directory() + ") failed", e);
        }
    }

    /**
     * Runs a batch of writes whose buffers are the DRAM {@code slots} (one per request), then
     * releases the slots and clears the batch, also when a write failed.
     */
    void executeAndRelease(IoBatch batch, DramSlot[] slots) {
        try {
            if (batch.size() > 0) {
                execute(batch);
            }
        } finally {
            for (int i = 0; i < batch.size(); i++) {
                dram.release(slots[i]);
                slots[i] = null;
            }
            batch.clear();
        }
    }

    public DramPool dram() {
        return dram;
    }

    /** The elastic pool decoders' hot caches and reuse buffers take units from. */
    public ElasticDramPool elastic() {
        return elastic;
    }

    /** The GPU tier, or null when the engine runs without one. */
    public DeviceTier deviceTier() {
        return deviceTier;
    }

    public IoStats stats() {
        return stats;
    }

    public SequenceCatalog catalog() {
        return catalog;
    }

    /**
     * Allocates an extent, preferring {@code device}; when it is full, evicts least-recently-used
     * committed sequences nobody holds, then tries the other devices.
     *
     * @return {@code device << 48 | offset} packed (offsets stay below 2^48)
     * @throws KvCapacityException when every device is full and nothing can be evicted
     */
    public synchronized long allocate(int device, long length, String requester) {
        DevicePool preferred = devices.get(device);
        if (preferred.failure() == null && !preferred.full()) {
            while (true) {
                long off = preferred.allocator().allocate(length);
                if (off >= 0) {
                    return pack(device, off);
                }
                SequenceCatalog.Entry victim = catalog.evictionCandidate(requester, evictFirst);
                if (victim == null) {
                    break;
                }
                evict(victim);
            }
        }
        // The other healthy devices, those the file system did not call full first; a device that
        // said ENOSPC is still tried last, so writing resumes by itself once space returns.
        for (int pass = 0; pass < 2; pass++) {
            for (int i = 0; i < devices.size(); i++) {
                int d = (device + i) % devices.size();
                DevicePool p = devices.get(d);
                if (p.failure() != null || p.full() != (pass == 1) || (i == 0 && pass == 0)) {
                    continue;
                }
                long off = p.allocator().allocate(length);
                if (off >= 0) {
                    return pack(d, off);
                }
            }
        }
        if (devices.stream().allMatch(x -> x.failure() != null)) {
            throw new KvDeviceUnavailableException(null, "every device has failed: "
                    + devices.stream().map(x -> x.directory() + ": " + x.failure()).toList());
        }
        DevicePool d = devices.get(device);
        throw new KvCapacityException("device " + device + " (" + d.directory() + ") is full: pool of "
                + d.sizeBytes() + " bytes, " + d.allocator().freeBytes() + " free"
                + (quarantine.bytes() > 0 ? " (" + quarantine.bytes() + " bytes quarantined, see KvStats.quarantine())" : "")
                + ", extent of " + length
                + " bytes needed; every device is full and " + catalog.heldCount()
                + " committed sequences are open (open sequences are never evicted). Close sequences, delete some,"
                + " or raise deviceCapacityBytes");
    }

    public static int packedDevice(long packed) {
        return (int) (packed >>> 48);
    }

    public static long packedOffset(long packed) {
        return packed & ((1L << 48) - 1);
    }

    private static long pack(int device, long offset) {
        return ((long) device << 48) | offset;
    }

    /**
     * One holder lets the extent go: its space returns to the allocator when that was the last one
     * (an extent a fork shares stays until every sequence naming it has let it go).
     */
    public synchronized void free(int device, long offset, long length) {
        if (shared.release(device, offset)) {
            devices.get(device).allocator().free(offset, length);
        }
    }

    /** One more holder of the extent at {@code offset} of {@code device} (a fork sharing its source's block). */
    public synchronized void share(int device, long offset) {
        shared.share(device, offset);
    }

    /** How many sequences (committed, or forks being written) hold the extent; 1 for one not shared. */
    public synchronized int extentHolders(int device, long offset) {
        return shared.holders(device, offset);
    }

    private void evict(SequenceCatalog.Entry victim) {
        Manifest m = victim.manifest();
        try {
            forget(m);
        } catch (IOException e) {
            throw new KvException("evicting sequence " + m.id() + " failed: could not delete its manifest", e);
        }
        catalog.remove(m.id());
        freeAll(victim);
        stats.evictions.increment();
        LOG.info("evicted sequence {} ({} bytes) to make room", m.id(), m.storedBytes());
        Flight.eviction(m.id(), m.tokenCount(), m.storedBytes());
        listeners.evicted(new SequenceInfo(m.id(), m.shape(), m.tokenCount(), m.storedBytes(), m.commitNumber(),
                m.commitMillis(), 0));
    }

    /** The store's identity, shared by its devices' records. */
    public synchronized String storeUuid() {
        return record.storeUuid();
    }

    /** Reports degradations (JFR events, listeners). */
    public Degradations degradations() {
        return degradations;
    }

    /**
     * Sequences eviction drops before the others (those a remote tier can give back); asked under
     * this store's lock, so it must not take locks that are held while waiting for the store.
     */
    public void evictFirst(java.util.function.Predicate<String> p) {
        this.evictFirst = p;
    }

    /** Sets the copy outside the store that reads fall back on when no local copy verifies. */
    public void remoteCopy(RemoteCopy c) {
        this.remoteCopy = c;
    }

    /**
     * Block {@code block} of {@code layer} of committed sequence {@code id} from the remote copy, or
     * null (no tier, not committed that far, or the tier has no good copy).
     */
    public MemorySegment remoteBlock(String id, int layer, int block) {
        RemoteCopy c = remoteCopy;
        if (c == null) {
            return null;
        }
        Manifest m = committedManifest(id);
        if (m == null || m.tokenCount() < (block + 1L) * m.blockTokens()) {
            return null; // only whole committed blocks were published
        }
        return c.block(m, layer, block);
    }

    /** The manifest of committed sequence {@code id}, or null. */
    public synchronized Manifest committedManifest(String id) {
        SequenceCatalog.Entry e = catalog.get(id);
        return e == null ? null : e.manifest();
    }

    /** The directory small engine-wide records go to: the metadata directory, else the first SSD directory. */
    public Path metadataHome() {
        return config.metadataDirectory() != null ? config.metadataDirectory() : config.ssdDirectories().get(0);
    }

    public FileModes modes() {
        return modes;
    }

    /** Adds a listener told about each eviction (on a dedicated thread). */
    public void addEvictionListener(Consumer<SequenceInfo> listener) {
        listeners.addEvictionListener(listener);
    }

    private void freeAll(SequenceCatalog.Entry e) {
        if (e.unavailable() != null) {
            for (long[] x : e.reserved()) {
                free((int) x[0], x[1], x[2]);
            }
            return;
        }
        e.manifest().forEachExtent(this::free);
    }

    /**
     * Makes {@code m} the durable state of its sequence, then frees the extents the previous
     * manifest used and {@code m} no longer does. The committing handle is the sequence's append
     * handle: on a first commit it becomes its only holder.
     */
    public void commit(Manifest m, List<long[]> superseded) throws IOException {
        long[] ends = new long[devices.size()];
        m.forEachExtent((d, off, len) -> ends[d] = Math.max(ends[d], off + len));
        for (int d = 0; d < ends.length; d++) {
            if (ends[d] > 0) {
                String failure = devices.get(d).checkPresent();
                if (failure != null) {
                    throw new KvDeviceUnavailableException(devices.get(d).uuid(), "commit of sequence " + m.id()
                            + " refused: it has data on device " + d + " (" + devices.get(d).directory() + "), which "
                            + "failed: " + failure + "; the previous commit stays the durable state");
                }
            }
        }
        raiseHighWater(ends);
        followFailures();
        manifests.write(m);
        synchronized (this) {
            SequenceCatalog.Entry e = catalog.get(m.id());
            catalog.put(m, e != null ? e.refs() : 1, e == null || e.heldByWriter());
            for (long[] x : superseded) {
                free((int) x[0], x[1], x[2]);
            }
        }
    }

    /** Points manifest (and tombstone) writes away from a device that failed, to the next healthy one. */
    private void followFailures() throws IOException {
        List<Path> dirs = manifestWriteDirs();
        if (!dirs.equals(manifests.writeDirs())) {
            manifests.setWriteDirs(dirs);
        }
    }

    /**
     * Makes the store record's high-water marks cover {@code ends} before a manifest that uses the
     * space is written: quarantine after an unreadable manifest relies on them ({@link
     * StoreRecord#withHighWater}).
     */
    private synchronized void raiseHighWater(long[] ends) throws IOException {
        StoreRecord next = record.withHighWater(devices, ends);
        if (next != record) {
            deviceSet.writeRecord(next, modes);
            record = next;
        }
    }

    /** Faults injected so far by kind (configuration {@code faultInjection}); empty without injection. */
    public Map<String, Long> injectedFaults() {
        Map<String, Long> out = new LinkedHashMap<>();
        if (faults != null) {
            for (FaultInjectingBackend.Kind k : FaultInjectingBackend.Kind.values()) {
                out.put(k.name(), faults.injected(k));
            }
        }
        return out;
    }

    /** The sequences and reasons that keep space quarantined; empty when nothing is. */
    public synchronized List<Quarantine.Reason> quarantined() {
        return quarantine.reasons();
    }

    public synchronized long quarantinedBytes() {
        return quarantine.bytes();
    }

    /** Devices that are missing or failed, with the reasons (failures at run time included). */
    public List<DeviceSet.Unavailable> unavailableDevices() {
        List<DeviceSet.Unavailable> out = new ArrayList<>(deviceSet.unavailable());
        for (DevicePool d : devices) {
            if (d.failure() != null) {
                out.add(new DeviceSet.Unavailable(d.uuid(), d.directory(), d.failure()));
            }
        }
        return out;
    }

    /** Gives quarantined space back ({@link Quarantine#release}); returns the bytes freed. */
    public synchronized long releaseQuarantine() throws IOException {
        return quarantine.release(manifests, devices);
    }

    /** Deletes a committed sequence nobody holds; returns false if there is none with that id. */
    public synchronized boolean delete(String id) throws IOException {
        SequenceCatalog.Entry e = catalog.get(id);
        if (e == null) {
            if (catalog.contains(id)) {
                throw new IllegalStateException("sequence " + id + " is open and not yet committed; close it instead");
            }
            return false;
        }
        if (e.refs() > 0) {
            throw new IllegalStateException("sequence " + id + " is held by " + e.refs()
                    + " open handle(s); close them before deleting it");
        }
        forget(e.manifest());
        catalog.remove(id);
        freeAll(e);
        return true;
    }

    /**
     * Makes the deletion of {@code m}'s sequence durable, so that its extents may be reused. With
     * every member device reachable, or none unreachable that can hold a copy of its manifest,
     * removing every copy does it (a failure throws and the sequence stays). Otherwise a copy may
     * survive on a device that is away, so a deletion tombstone is written first and is what makes the deletion durable (a failure throws, nothing
     * changed); the copies that can be reached are then removed where possible, and the rest are
     * collected once every device is back ({@link Tombstones}).
     */
    private void forget(Manifest m) throws IOException {
        if (deviceSet.everyMemberReachable(record, manifests.readDirs()) || !(tombstones.mayBeHeldAway(m.id()) || failedSinceOpen())) {
            // Nothing unreachable can hold a copy: of a device away since open, only a sequence that
            // existed then can; a device failed since may hold any. Removing every copy suffices.
            manifests.delete(m.id());
            tombstones.deleted(m.id());
            return;
        }
        followFailures();
        tombstones.bury(m.id(), m.commitNumber());
        tombstones.deleted(m.id());
        try {
            manifests.delete(m.id());
        } catch (IOException e) {
            LOG.warn("sequence {} is deleted (its tombstone is durable); a copy of its manifest is left until every"
                    + " device is back: {}", m.id(), e.toString());
        }
    }

    private boolean failedSinceOpen() {
        for (DevicePool d : devices) {
            if (d.failure() != null) {
                return true;
            }
        }
        return false;
    }

    /**
     * The commit number a new sequence named {@code id} counts from: past every commit of an earlier
     * sequence of that id that had a copy when this store opened or a deletion tombstone records, so
     * that a copy the earlier one left on a device that was away is never taken for the new one's.
     */
    public synchronized long numberingBase(String id) {
        return tombstones.numberingBase(id);
    }

    /**
     * Drains I/O, then frees the DRAM tier (whose slab listeners drain GPU copies and unpin each
     * slab first), then the device tier.
     */
    @Override
    public void close() {
        try {
            backend.close();
        } finally {
            try {
                elastic.close();
                dram.close();
            } finally {
                try {
                    if (deviceTier != null) {
                        deviceTier.close();
                    }
                } finally {
                    listeners.shutdown(); // queued notifications still run
                    lock.close();
                }
            }
        }
    }
}
