package io.kvoffload.internal.storage;

import io.kvoffload.KvCapacityException;
import io.kvoffload.KvConfig;
import io.kvoffload.KvException;
import io.kvoffload.internal.dram.DramPool;
import io.kvoffload.internal.dram.DramSlot;
import io.kvoffload.internal.io.DeviceModel;
import io.kvoffload.internal.io.FaultInjectingBackend;
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
import io.kvoffload.KvDeviceUnavailableException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
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
    private final FileModes modes;
    private final StoreLock lock;
    private final DeviceSet deviceSet;
    private final List<DevicePool> devices;
    private final List<String> deviceUuids;
    private final ManifestStore manifests;
    private final SequenceCatalog catalog = new SequenceCatalog();
    private final List<Quarantined> quarantined = new ArrayList<>();
    private final List<long[]> quarantineRanges = new ArrayList<>();
    private long quarantinedBytes;
    private StoreRecord record;
    private IoBackend backend;
    private DramPool dram;
    private final IoStats stats;
    private DeviceTier deviceTier;
    private FaultInjectingBackend faults;

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
            loadCommitted();
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
        this.dram = new DramPool(config.dramBudgetBytes(), Math.max(config.dramSlabBytes(), maxAlign));
        IoBackend real = openBackend(config, devices);
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

    /** A sequence none of whose manifest copies could be used; its space stays reserved. */
    public record Quarantined(String id, List<Path> files, String reason) {}

    /**
     * Rebuilds the catalog and the allocators from the manifests. For each sequence the newest copy
     * that decodes, names only this store's devices and claims no space another manifest claims is
     * used. A sequence with a device missing is listed as unavailable with its space reserved. A
     * sequence with no usable copy is quarantined, and so is (conservatively) every free byte below
     * each device's high-water mark, since its manifest may reference any of it.
     */
    private void loadCommitted() {
        Map<String, Integer> healthyIndex = new HashMap<>();
        for (DevicePool d : devices) {
            healthyIndex.put(d.uuid(), d.index());
        }
        for (Map.Entry<String, List<ManifestStore.Copy>> e : manifests.loadAll().entrySet()) {
            List<ManifestStore.Copy> copies = new ArrayList<>(e.getValue());
            copies.sort(Comparator.comparingLong((ManifestStore.Copy c) -> c.manifest() == null ? Long.MIN_VALUE
                    : c.manifest().commitNumber()).reversed());
            List<String> reasons = new ArrayList<>();
            boolean loaded = false;
            long newest = copies.get(0).manifest() == null ? -1 : copies.get(0).manifest().commitNumber();
            for (int i = 0; i < copies.size() && !loaded; ) {
                ManifestStore.Copy c = copies.get(i);
                if (c.manifest() == null) {
                    reasons.add(c.file() + ": " + c.error());
                    i++;
                    continue;
                }
                // Copies of one commit are byte-identical when written by this store; copies that
                // disagree mean one was rewritten (even with a valid CRC): trust neither, try an older one.
                int j = i;
                boolean agree = true;
                while (j < copies.size() && copies.get(j).manifest() != null
                        && copies.get(j).manifest().commitNumber() == c.manifest().commitNumber()) {
                    agree &= copies.get(j).digest() == c.digest();
                    j++;
                }
                if (!agree) {
                    reasons.add("the copies of commit " + c.manifest().commitNumber() + " disagree: "
                            + copies.subList(i, j).stream().map(ManifestStore.Copy::file).toList());
                    i = j;
                    continue;
                }
                String why = adopt(c.manifest(), healthyIndex);
                if (why == null) {
                    if (c.manifest().commitNumber() < newest) {
                        LOG.warn("sequence {}: using commit {} from {}; the newer copies did not verify: {}", e.getKey(),
                                c.manifest().commitNumber(), c.file(), reasons);
                    }
                    loaded = true;
                } else {
                    reasons.add(c.file() + ": " + why);
                    i = j;
                }
            }
            if (!loaded) {
                Quarantined q = new Quarantined(e.getKey(), copies.stream().map(ManifestStore.Copy::file).toList(),
                        String.join("; ", reasons));
                quarantined.add(q);
                LOG.error("sequence {} cannot be loaded from any copy ({}); its space is quarantined until"
                        + " KvEngine.releaseQuarantine()", q.id(), q.reason());
            }
        }
        long missing = deviceSet.unavailable().stream().filter(u -> u.uuid() != null
                && !config.ssdDirectories().contains(u.directory())).count();
        if (missing >= config.metadataCopies()) {
            quarantined.add(new Quarantined(null, List.of(), missing + " member device(s) are missing, as many as"
                    + " metadataCopies = " + config.metadataCopies() + ": manifests kept only there cannot be read"));
        }
        if (!quarantined.isEmpty()) {
            for (DevicePool d : devices) {
                StoreRecord.Member m = record.member(d.uuid());
                for (long[] r : d.allocator().reserveFreeBelow(m.highWater())) {
                    quarantineRanges.add(new long[] {d.index(), r[0], r[1]});
                    quarantinedBytes += r[1];
                }
            }
            LOG.error("{} quarantine reason(s); {} bytes below the devices' high-water marks are reserved (see"
                    + " KvStats.quarantine(); KvEngine.releaseQuarantine() frees them)", quarantined.size(),
                    quarantinedBytes);
        }
        LOG.info("{} committed sequences found in {}", catalog.all().size(), manifests.readDirs());
    }

    /**
     * Puts a decoded manifest into the catalog and marks its extents used; returns null, or the
     * reason the copy cannot be used (nothing is then marked).
     */
    private String adopt(Manifest m, Map<String, Integer> healthyIndex) {
        int[] map = new int[m.deviceUuids().size()];
        String missingDevice = null;
        for (int i = 0; i < map.length; i++) {
            String u = m.deviceUuids().get(i);
            Integer idx = healthyIndex.get(u);
            if (idx != null) {
                map[i] = idx;
            } else if (record.member(u) != null || !deviceSet.recordWasPresent() || deviceSet.hasUnidentified()) {
                // A member that is not here; or, where membership is not fully known (no record yet,
                // or a directory that could not be identified), possibly one: unavailable, not foreign.
                map[i] = -1;
                missingDevice = u;
            } else {
                return "names device " + u + ", which is not a member of this store";
            }
        }
        Manifest local;
        if (missingDevice != null) {
            Manifest through = throughCopies(m, map);
            if (through != null) {
                LOG.warn("sequence {} has data on missing device {}, all of it also stored on present devices: served"
                        + " through those copies", m.id(), missingDevice);
                return adopt(through, healthyIndex);
            }
        }
        if (missingDevice == null) {
            try {
                ManifestCodec.validate(m, devices);
            } catch (IllegalArgumentException e) {
                return e.getMessage();
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
            local = new Manifest(m.id(), m.shape(), m.blockTokens(), deviceUuids, m.tokenIds(), m.layers(), clusters,
                    groups, m.commitMillis(), m.commitNumber(), m.identityChecksums());
        } else {
            local = m;
        }
        List<long[]> marked = new ArrayList<>();
        try {
            local.forEachExtent((d, off, len) -> {
                int dev = local == m ? map[d] : d;
                if (dev >= 0) {
                    devices.get(dev).allocator().markUsed(off, len);
                    marked.add(new long[] {dev, off, len});
                }
            });
        } catch (IllegalStateException | IllegalArgumentException e) {
            for (long[] x : marked) {
                devices.get((int) x[0]).allocator().free(x[1], x[2]);
            }
            return e.getMessage();
        }
        if (missingDevice != null) {
            String why = "sequence " + m.id() + " has data on device " + missingDevice + ", which is unavailable: "
                    + deviceSet.unavailable().stream().filter(u -> missingUuid(u, m)).map(DeviceSet.Unavailable::reason)
                            .findFirst().orElse("missing");
            catalog.putUnavailable(m, why, marked);
            LOG.warn("{}", why);
        } else {
            catalog.put(local, 0, false);
        }
        return null;
    }

    /**
     * {@code m} in the present devices' numbering, when everything it stores on missing devices
     * ({@code map} −1) is a Swarm cluster entry with another copy on a present device: the layouts
     * without those segments. Null when a block, a group or a token's last copy is on a missing device.
     */
    private Manifest throughCopies(Manifest m, int[] map) {
        for (BlockTable t : m.layers()) {
            for (int b = 0; b < t.size(); b++) {
                if (t.hasExtent(b) && map[t.device(b)] < 0) {
                    return null;
                }
            }
        }
        for (GroupLayout g : m.groups()) {
            for (int s = 0; g != null && s < g.segmentCount(); s++) {
                if (map[g.segmentDevice(s)] < 0) {
                    return null;
                }
            }
        }
        ClusterLayout[] clusters = new ClusterLayout[m.clusters().length];
        for (int l = 0; l < clusters.length; l++) {
            if (m.clusters()[l] != null) {
                clusters[l] = m.clusters()[l].withoutMissingDevices(map, deviceUuids.size());
                if (clusters[l] == null) {
                    return null;
                }
            }
        }
        BlockTable[] layers = new BlockTable[m.layers().length];
        for (int l = 0; l < layers.length; l++) {
            layers[l] = m.layers()[l].copy();
            layers[l].remapDevices(map);
        }
        GroupLayout[] groups = new GroupLayout[m.groups().length];
        for (int l = 0; l < groups.length; l++) {
            groups[l] = m.groups()[l] == null ? null : m.groups()[l].remapDevices(map);
        }
        Manifest through = new Manifest(m.id(), m.shape(), m.blockTokens(), deviceUuids, m.tokenIds(), layers, clusters,
                groups, m.commitMillis(), m.commitNumber(), m.identityChecksums());
        try {
            ManifestCodec.validate(through, devices);
        } catch (IllegalArgumentException e) {
            return null;
        }
        return through;
    }

    private static boolean missingUuid(DeviceSet.Unavailable u, Manifest m) {
        return u.uuid() != null && m.deviceUuids().contains(u.uuid());
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
        DevicePool preferred = devices.get(device);
        if (preferred.failure() == null && !preferred.full()) {
            while (true) {
                long off = preferred.allocator().allocate(length);
                if (off >= 0) {
                    return pack(device, off);
                }
                SequenceCatalog.Entry victim = catalog.evictionCandidate(requester);
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
                + (quarantinedBytes > 0 ? " (" + quarantinedBytes + " bytes quarantined, see KvStats.quarantine())" : "")
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
        freeAll(victim);
        stats.evictions.increment();
        LOG.info("evicted sequence {} ({} bytes) to make room", m.id(), m.storedBytes());
        if (!evictionListeners.isEmpty()) {
            io.kvoffload.SequenceInfo info = new io.kvoffload.SequenceInfo(m.id(), m.shape(), m.tokenCount(),
                    m.storedBytes(), m.commitNumber(), m.commitMillis(), 0);
            // Listeners run off the store lock (they may call back into the engine), in eviction order.
            listenerThread().execute(() -> {
                for (java.util.function.Consumer<io.kvoffload.SequenceInfo> l : evictionListeners) {
                    try {
                        l.accept(info);
                    } catch (RuntimeException e) {
                        LOG.warn("an eviction listener failed for {}", info.id(), e);
                    }
                }
            });
        }
    }

    private final List<java.util.function.Consumer<io.kvoffload.SequenceInfo>> evictionListeners =
            new java.util.concurrent.CopyOnWriteArrayList<>();
    private java.util.concurrent.ExecutorService listenerThread;

    /** Adds a listener told about each eviction (on a dedicated thread). */
    public void addEvictionListener(java.util.function.Consumer<io.kvoffload.SequenceInfo> listener) {
        evictionListeners.add(listener);
    }

    private synchronized java.util.concurrent.ExecutorService listenerThread() {
        if (listenerThread == null) {
            listenerThread = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "kvoffload-eviction-listeners");
                t.setDaemon(true);
                return t;
            });
        }
        return listenerThread;
    }

    private void freeAll(SequenceCatalog.Entry e) {
        if (e.unavailable() != null) {
            for (long[] x : e.reserved()) {
                devices.get((int) x[0]).allocator().free(x[1], x[2]);
            }
            return;
        }
        e.manifest().forEachExtent((d, off, len) -> devices.get(d).allocator().free(off, len));
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
        List<Path> dirs = manifestWriteDirs();
        if (!dirs.equals(manifests.writeDirs())) {
            manifests.setWriteDirs(dirs); // a device failed: its copies go to the next healthy device
        }
        manifests.write(m);
        synchronized (this) {
            SequenceCatalog.Entry e = catalog.get(m.id());
            catalog.put(m, e != null ? e.refs() : 1, e == null || e.heldByWriter());
            for (long[] x : superseded) {
                devices.get((int) x[0]).allocator().free(x[1], x[2]);
            }
        }
    }

    /**
     * Makes the store record's high-water marks cover {@code ends} before a manifest that uses the
     * space is written: quarantine after an unreadable manifest relies on them. Marks move in steps
     * of a 32nd of the pool so that the record is rewritten rarely.
     */
    private synchronized void raiseHighWater(long[] ends) throws IOException {
        List<StoreRecord.Member> members = new ArrayList<>(record.members());
        boolean changed = false;
        for (int d = 0; d < ends.length; d++) {
            DevicePool p = devices.get(d);
            for (int i = 0; i < members.size(); i++) {
                StoreRecord.Member x = members.get(i);
                if (x.uuid().equals(p.uuid()) && ends[d] > x.highWater()) {
                    long step = Math.max(p.alignment(), p.sizeBytes() / 32);
                    long hw = Math.min(p.sizeBytes(), (ends[d] + step - 1) / step * step);
                    members.set(i, new StoreRecord.Member(x.uuid(), x.poolBytes(), x.alignment(), x.lastPath(), hw));
                    changed = true;
                }
            }
        }
        if (changed) {
            StoreRecord next = new StoreRecord(record.storeUuid(), record.generation() + 1, null, List.copyOf(members));
            deviceSet.writeRecord(next, modes);
            record = next;
        }
    }

    /** Faults injected so far by kind (configuration {@code faultInjection}); empty without injection. */
    public Map<String, Long> injectedFaults() {
        Map<String, Long> out = new java.util.LinkedHashMap<>();
        if (faults != null) {
            for (FaultInjectingBackend.Kind k : FaultInjectingBackend.Kind.values()) {
                out.put(k.name(), faults.injected(k));
            }
        }
        return out;
    }

    /** The sequences and reasons that keep space quarantined; empty when nothing is. */
    public synchronized List<Quarantined> quarantined() {
        return List.copyOf(quarantined);
    }

    public synchronized long quarantinedBytes() {
        return quarantinedBytes;
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

    /**
     * The explicit user action that gives quarantined space back: the unusable manifest copies move
     * to a {@code quarantine} folder beside them (kept for inspection, never loaded again) and the
     * reserved space becomes free. Returns the bytes freed.
     */
    public synchronized long releaseQuarantine() throws IOException {
        Set<Path> files = new HashSet<>();
        for (Quarantined q : quarantined) {
            files.addAll(q.files());
        }
        manifests.quarantine(files);
        for (long[] r : quarantineRanges) {
            devices.get((int) r[0]).allocator().free(r[1], r[2]);
        }
        long freed = quarantinedBytes;
        LOG.warn("quarantine released by the user: {} manifest file(s) moved aside, {} bytes freed", files.size(), freed);
        quarantineRanges.clear();
        quarantined.clear();
        quarantinedBytes = 0;
        return freed;
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
        freeAll(e);
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
                try {
                    if (deviceTier != null) {
                        deviceTier.close();
                    }
                } finally {
                    synchronized (this) {
                        if (listenerThread != null) {
                            listenerThread.shutdown(); // queued notifications still run
                        }
                    }
                    lock.close();
                }
            }
        }
    }
}
