package io.kvoffload.internal.storage;

import io.kvoffload.KvCapacityException;
import io.kvoffload.KvConfig;
import io.kvoffload.KvException;
import io.kvoffload.internal.dram.DramPool;
import io.kvoffload.internal.dram.DramSlot;
import io.kvoffload.internal.io.DeviceModel;
import io.kvoffload.spi.Availability;
import io.kvoffload.spi.DeviceTier;
import io.kvoffload.spi.DeviceTierOptions;
import io.kvoffload.spi.DeviceTierProvider;
import io.kvoffload.spi.DramSlabListener;
import io.kvoffload.spi.HostSlots;
import io.kvoffload.spi.IoBackend;
import io.kvoffload.spi.IoBatch;
import io.kvoffload.spi.IoBackendProvider;
import io.kvoffload.spi.IoDevice;
import io.kvoffload.spi.IoOptions;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.ServiceLoader;
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
    private final List<DevicePool> devices;
    private final List<String> deviceUuids;
    private final ManifestStore manifests;
    private final SequenceCatalog catalog = new SequenceCatalog();
    private final IoBackend backend;
    private final DramPool dram;
    private final IoStats stats;
    private final DeviceTier deviceTier;

    public Store(KvConfig config) throws IOException {
        this.config = config;
        List<DevicePool> devs = new ArrayList<>();
        for (int i = 0; i < config.ssdDirectories().size(); i++) {
            devs.add(DevicePool.openOrCreate(i, config.ssdDirectories().get(i), config.deviceCapacityBytes(),
                    config.directIoAlignment()));
        }
        for (int i = 0; i < devs.size(); i++) {
            for (int j = 0; j < i; j++) {
                if (devs.get(i).uuid().equals(devs.get(j).uuid())) {
                    throw new IllegalArgumentException("ssdDirectories[" + j + "] and ssdDirectories[" + i
                            + "] hold the same device " + devs.get(i).uuid() + " (a copied directory?)");
                }
            }
        }
        this.devices = List.copyOf(devs);
        this.deviceUuids = devices.stream().map(DevicePool::uuid).toList();
        this.stats = new IoStats(devices.size());
        this.manifests = new ManifestStore(config.metadataDirectory());
        manifests.removeLeftovers();
        loadCommitted();
        int maxAlign = devices.stream().mapToInt(DevicePool::alignment).max().orElse(4096);
        this.dram = new DramPool(config.dramBudgetBytes(), Math.max(config.dramSlabBytes(), maxAlign));
        IoBackend real = openBackend(config, devices);
        // A device model makes each directory behave like an SSD of its own (docs/configuration.md).
        try {
            this.backend = config.deviceModel() == null ? real : DeviceModel.wrap(real, config.deviceModel());
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
            tier = openDeviceTier(config, dram);
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
     * Opens the device tier the configuration asks for: none for {@code gpu = off}; the first
     * available provider for {@code auto} (none, with the reasons logged, when no provider works);
     * for {@code on}, the first available provider or a {@link KvException} naming every reason.
     */
    private static DeviceTier openDeviceTier(KvConfig config, DramPool dram) {
        if (config.gpu() == KvConfig.Gpu.OFF) {
            return null;
        }
        List<String> reasons = new ArrayList<>();
        for (DeviceTierProvider p : ServiceLoader.load(DeviceTierProvider.class)) {
            Availability a = p.probe();
            if (!a.available()) {
                reasons.add(p.name() + ": " + a.reason());
                continue;
            }
            DeviceTier t = p.open(new DeviceTierOptions(config.gpuDevice(), config.gpuCacheBudgetBytes()),
                    dramSlots(dram));
            LOG.info("device tier {} ({})", p.name(), t.describe());
            return t;
        }
        String why = reasons.isEmpty()
                ? "no device tier provider on the class path (add kvoffload-cuda)"
                : String.join("; ", reasons);
        if (config.gpu() == KvConfig.Gpu.ON) {
            throw new KvException("gpu = on but no GPU tier is available here: " + why);
        }
        LOG.info("running without a GPU tier: {}", why);
        return null;
    }

    private static HostSlots dramSlots(DramPool dram) {
        return bytes -> {
            DramSlot slot = dram.acquire(bytes);
            return new HostSlots.Lease() {
                private boolean closed;

                @Override
                public java.lang.foreign.MemorySegment segment() {
                    return slot.segment();
                }

                @Override
                public int slabId() {
                    return slot.slabId();
                }

                @Override
                public synchronized void close() {
                    if (!closed) {
                        closed = true;
                        dram.release(slot);
                    }
                }
            };
        };
    }

    private void loadCommitted() throws IOException {
        for (ManifestStore.Loaded loaded : manifests.loadAll()) {
            if (loaded.manifest() == null) {
                LOG.error("ignoring manifest {}: {}", loaded.file(), loaded.error());
                continue;
            }
            Manifest m = loaded.manifest();
            int[] map;
            try {
                map = ManifestCodec.validate(m, devices);
            } catch (IllegalArgumentException e) {
                LOG.error("ignoring manifest {}: {}", loaded.file(), e.getMessage());
                continue;
            }
            for (BlockTable t : m.layers()) {
                t.remapDevices(map);
            }
            ClusterLayout[] clusters = new ClusterLayout[m.clusters().length];
            for (int l = 0; l < clusters.length; l++) {
                clusters[l] = m.clusters()[l] == null ? null : m.clusters()[l].remapDevices(map);
            }
            GroupLayout[] groups = new GroupLayout[m.groups().length];
            for (int l = 0; l < groups.length; l++) {
                groups[l] = m.groups()[l] == null ? null : m.groups()[l].remapDevices(map);
            }
            Manifest local = new Manifest(m.id(), m.shape(), m.blockTokens(), deviceUuids, m.tokenIds(), m.layers(),
                    clusters, groups, m.commitMillis(), m.commitNumber());
            List<long[]> marked = new ArrayList<>();
            try {
                local.forEachExtent((d, off, len) -> {
                    devices.get(d).allocator().markUsed(off, len);
                    marked.add(new long[] {d, off, len});
                });
            } catch (IllegalStateException e) {
                for (long[] x : marked) {
                    devices.get((int) x[0]).allocator().free(x[1], x[2]);
                }
                LOG.error("ignoring manifest {}: {}", loaded.file(), e.getMessage());
                continue;
            }
            catalog.put(local, 0, false);
        }
        LOG.info("{} committed sequences found in {}", catalog.all().size(), manifests.directory());
    }

    private static IoBackend openBackend(KvConfig config, List<DevicePool> devices) throws IOException {
        List<IoBackendProvider> providers = new ArrayList<>();
        for (IoBackendProvider p : ServiceLoader.load(IoBackendProvider.class)) {
            providers.add(p);
        }
        providers.sort(Comparator.comparingInt(IoBackendProvider::priority).reversed());
        List<IoDevice> ioDevices = devices.stream()
                .map(d -> new IoDevice(d.index(), d.poolFile(), d.sizeBytes(), d.alignment()))
                .toList();
        IoOptions options = new IoOptions(config.directIo(), config.queueDepth(), config.ioThreadsPerDevice());
        String wanted = config.ioBackend();
        if (!KvConfig.AUTO.equals(wanted)) {
            for (IoBackendProvider p : providers) {
                if (p.name().equals(wanted)) {
                    Availability a = p.probe();
                    if (!a.available()) {
                        throw new KvException("ioBackend = '" + wanted + "' is not available here: " + a.reason());
                    }
                    LOG.info("I/O backend {} (configured)", wanted);
                    return p.open(ioDevices, options);
                }
            }
            throw new IllegalArgumentException("ioBackend = '" + wanted + "' is unknown; allowed: 'auto' or one of "
                    + providers.stream().map(IoBackendProvider::name).toList());
        }
        IOException lastFailure = null;
        for (IoBackendProvider p : providers) {
            Availability a = p.probe();
            if (!a.available()) {
                LOG.info("I/O backend {} not available: {}", p.name(), a.reason());
                continue;
            }
            try {
                IoBackend b = p.open(ioDevices, options);
                LOG.info("I/O backend {} ({})", p.name(), a.reason());
                return b;
            } catch (IOException | RuntimeException e) {
                LOG.warn("I/O backend {} failed to open, trying the next: {}", p.name(), e.toString());
                lastFailure = e instanceof IOException io ? io : new IOException(e);
            }
        }
        throw new IOException("no I/O backend could be opened", lastFailure);
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
        while (true) {
            long off = devices.get(device).allocator().allocate(length);
            if (off >= 0) {
                return pack(device, off);
            }
            SequenceCatalog.Entry victim = catalog.evictionCandidate(requester);
            if (victim == null) {
                break;
            }
            evict(victim);
        }
        for (int i = 1; i < devices.size(); i++) {
            int d = (device + i) % devices.size();
            long off = devices.get(d).allocator().allocate(length);
            if (off >= 0) {
                return pack(d, off);
            }
        }
        DevicePool d = devices.get(device);
        throw new KvCapacityException("device " + device + " (" + d.directory() + ") is full: pool of "
                + d.sizeBytes() + " bytes, " + d.allocator().freeBytes() + " free, extent of " + length
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

    public synchronized void free(int device, long offset, long length) {
        devices.get(device).allocator().free(offset, length);
    }

    private void evict(SequenceCatalog.Entry victim) {
        Manifest m = victim.manifest();
        try {
            manifests.delete(m.id());
        } catch (IOException e) {
            throw new KvException("evicting sequence " + m.id() + " failed: could not delete its manifest", e);
        }
        catalog.remove(m.id());
        freeAll(m);
        stats.evictions.increment();
        LOG.info("evicted sequence {} ({} bytes) to make room", m.id(), m.storedBytes());
    }

    private void freeAll(Manifest m) {
        m.forEachExtent((d, off, len) -> devices.get(d).allocator().free(off, len));
    }

    /**
     * Makes {@code m} the durable state of its sequence, then frees the extents the previous
     * manifest used and {@code m} no longer does. The committing handle is the sequence's append
     * handle: on a first commit it becomes its only holder.
     */
    public void commit(Manifest m, List<long[]> superseded) throws IOException {
        manifests.write(m);
        synchronized (this) {
            SequenceCatalog.Entry e = catalog.get(m.id());
            catalog.put(m, e != null ? e.refs() : 1, e == null || e.heldByWriter());
            for (long[] x : superseded) {
                devices.get((int) x[0]).allocator().free(x[1], x[2]);
            }
        }
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
        manifests.delete(id);
        catalog.remove(id);
        freeAll(e.manifest());
        return true;
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
                dram.close();
            } finally {
                if (deviceTier != null) {
                    deviceTier.close();
                }
            }
        }
    }
}
