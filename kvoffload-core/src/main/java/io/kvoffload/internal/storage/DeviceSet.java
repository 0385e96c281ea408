package io.kvoffload.internal.storage;

import io.kvoffload.KvCapacityException;
import io.kvoffload.KvConfig;
import io.kvoffload.KvDeviceUnavailableException;
import io.kvoffload.KvStoreMismatchException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which configured directory is which device of the store, decided by identity, never by list
 * position: each directory's {@code kvoffload-device.json} (or, when that is damaged, the
 * {@link StoreRecord} copy beside it, or the record's last known path of the device) names its
 * device. The newest {@link StoreRecord} that verifies lists every member, so a member that is not
 * among the directories is known to be <em>missing</em>, and a directory whose records cannot be
 * trusted is <em>failed</em> with the reason, rather than re-created over its data.
 */
public final class DeviceSet {
    private static final Logger LOG = LoggerFactory.getLogger(DeviceSet.class);

    /** A device that is not serving: missing from the configuration, or present but unusable. */
    public record Unavailable(String uuid, Path directory, String reason) {}

    private final List<DevicePool> healthy;
    private final List<Unavailable> unavailable;
    private final StoreRecord record;
    private final boolean recordWasPresent;

    private DeviceSet(List<DevicePool> healthy, List<Unavailable> unavailable, StoreRecord record,
            boolean recordWasPresent) {
        this.healthy = healthy;
        this.unavailable = unavailable;
        this.record = record;
        this.recordWasPresent = recordWasPresent;
    }

    /** The devices serving, indexed 0.. in configuration order. */
    public List<DevicePool> healthy() {
        return healthy;
    }

    /** Members that are missing or failed, with the reason. */
    public List<Unavailable> unavailable() {
        return unavailable;
    }

    /** The record as written at open (generation advanced). */
    public StoreRecord record() {
        return record;
    }

    /** Whether a configured directory could not be identified (it may be any member). */
    public boolean hasUnidentified() {
        return unavailable.stream().anyMatch(u -> u.uuid() == null);
    }

    /** False for a store opened for the first time by a version that writes store records. */
    public boolean recordWasPresent() {
        return recordWasPresent;
    }

    private static final class Dir {
        final int position;
        final Path path;
        DevicePool.Identity identity;
        String identityError;
        StoreRecord localRecord;
        String recordError;
        boolean poolExists;
        String uuid;
        String failure;

        Dir(int position, Path path) {
            this.position = position;
            this.path = path;
        }
    }

    /**
     * Opens the configured directories as devices of one store, creating pools in empty ones and
     * writing the updated {@link StoreRecord} to every healthy device.
     *
     * @throws IllegalArgumentException when a directory is missing or not writable
     * @throws KvStoreMismatchException when two directories hold the same device or directories of
     *     different stores are mixed
     * @throws KvCapacityException when a new pool cannot be preallocated
     */
    public static DeviceSet open(KvConfig config, FileModes modes) throws IOException {
        List<Dir> dirs = new ArrayList<>();
        for (int i = 0; i < config.ssdDirectories().size(); i++) {
            Path p = config.ssdDirectories().get(i);
            String arg = "ssdDirectories[" + i + "]";
            if (!Files.isDirectory(p)) {
                throw new IllegalArgumentException(arg + " = " + p
                        + " does not exist or is not a directory; allowed: an existing, writable directory on the SSD");
            }
            if (!Files.isWritable(p)) {
                throw new IllegalArgumentException(arg + " = " + p
                        + " is not writable; allowed: an existing, writable directory on the SSD");
            }
            Dir d = new Dir(i, p);
            try {
                d.identity = DevicePool.readIdentity(p);
            } catch (IOException e) {
                d.identityError = DevicePool.DEVICE_FILE + " is unreadable: " + e.getMessage();
            }
            try {
                byte[] b = AtomicFiles.readRegular(p.resolve(StoreRecord.FILE));
                d.localRecord = b == null ? null : StoreRecord.decode(b);
            } catch (IOException e) {
                d.recordError = StoreRecord.FILE + " is unreadable: " + e.getMessage();
            }
            d.poolExists = Files.exists(p.resolve(DevicePool.POOL_FILE));
            dirs.add(d);
        }
        StoreRecord newest = null;
        for (Dir d : dirs) {
            if (d.localRecord != null && (newest == null || d.localRecord.generation() > newest.generation())) {
                newest = d.localRecord;
            }
        }
        String storeUuid = newest != null ? newest.storeUuid() : null;
        for (Dir d : dirs) {
            String other = d.localRecord != null ? d.localRecord.storeUuid()
                    : d.identity != null ? d.identity.storeUuid() : null;
            if (storeUuid == null && other != null) {
                storeUuid = other;
            } else if (other != null && !other.equals(storeUuid)) {
                throw new KvStoreMismatchException("ssdDirectories[" + d.position + "] = " + d.path + " belongs to store "
                        + other + " but the other directories to store " + storeUuid
                        + "; allowed: the directories of one store (use separate engines for separate stores)");
            }
        }
        boolean recordWasPresent = newest != null;
        if (storeUuid == null) {
            storeUuid = UUID.randomUUID().toString();
        }
        identify(dirs, newest);
        Map<String, Dir> byUuid = new LinkedHashMap<>();
        for (Dir d : dirs) {
            if (d.uuid == null) {
                continue;
            }
            Dir prev = byUuid.putIfAbsent(d.uuid, d);
            if (prev != null) {
                throw new KvStoreMismatchException("ssdDirectories[" + prev.position + "] and ssdDirectories["
                        + d.position + "] hold the same device " + d.uuid + " (a copied directory?)");
            }
        }
        List<DevicePool> healthy = new ArrayList<>();
        List<Unavailable> unavailable = new ArrayList<>();
        List<StoreRecord.Member> members = new ArrayList<>(newest != null ? newest.members() : List.of());
        for (Dir d : dirs) {
            if (d.failure == null) {
                try {
                    DevicePool pool = openPool(d, healthy.size(), storeUuid, newest, config, modes);
                    healthy.add(pool);
                    StoreRecord.Member old = memberOf(members, pool.uuid());
                    // A store without a record (or a new member) gets a high-water mark of the whole
                    // pool: nothing is known about what its manifests use until it is raised honestly.
                    long hw = old != null ? Math.min(old.highWater(), pool.sizeBytes())
                            : d.identity == null && !d.poolExists ? 0 : pool.sizeBytes();
                    StoreRecord.Member m = new StoreRecord.Member(pool.uuid(), pool.sizeBytes(), pool.alignment(),
                            d.path.toAbsolutePath().toString(), hw);
                    replace(members, m);
                    continue;
                } catch (KvCapacityException e) {
                    throw e;
                } catch (IOException | RuntimeException e) {
                    d.failure = e.getMessage();
                }
            }
            LOG.error("ssdDirectories[{}] = {} is not used: {}", d.position, d.path, d.failure);
            unavailable.add(new Unavailable(d.uuid, d.path, d.failure));
        }
        Set<String> seen = new HashSet<>();
        for (Dir d : dirs) {
            if (d.uuid != null) {
                seen.add(d.uuid);
            }
        }
        for (StoreRecord.Member m : members) {
            if (!seen.contains(m.uuid())) {
                String why = "device " + m.uuid() + " (last opened from " + m.lastPath()
                        + ") is a member of this store but not among the configured ssdDirectories";
                LOG.error("{}: sequences with data there are unavailable until it is listed again", why);
                unavailable.add(new Unavailable(m.uuid(), Path.of(m.lastPath()), why));
            }
        }
        if (healthy.isEmpty()) {
            throw new KvDeviceUnavailableException(null, "no configured device can be used: "
                    + unavailable.stream().map(u -> u.directory() + ": " + u.reason()).toList());
        }
        StoreRecord rec = new StoreRecord(storeUuid, newest == null ? 1 : newest.generation() + 1, null,
                List.copyOf(members));
        DeviceSet set = new DeviceSet(List.copyOf(healthy), List.copyOf(unavailable), rec, recordWasPresent);
        set.writeRecord(rec, modes);
        return set;
    }

    /** Names each directory's device: its own record, else its store-record copy, else its last known path. */
    private static void identify(List<Dir> dirs, StoreRecord newest) throws IOException {
        for (Dir d : dirs) {
            if (d.identity != null) {
                d.uuid = d.identity.uuid();
                if (newest != null && newest.member(d.uuid) == null && d.poolExists
                        && newest.storeUuid().equals(d.identity.storeUuid())) {
                    LOG.warn("device {} ({}) is not in the store record; adding it", d.uuid, d.path);
                }
            } else if (d.localRecord != null) {
                d.uuid = d.localRecord.self();
                LOG.warn("ssdDirectories[{}] = {}: {}; identified as device {} by its store record", d.position, d.path,
                        d.identityError != null ? d.identityError : DevicePool.DEVICE_FILE + " is missing", d.uuid);
            }
        }
        for (Dir d : dirs) {
            if (d.uuid != null || (!d.poolExists && d.identityError == null && d.recordError == null)) {
                continue; // identified, or a fresh directory
            }
            String real = d.path.toRealPath().toString();
            StoreRecord.Member byPath = null;
            if (newest != null) {
                for (StoreRecord.Member m : newest.members()) {
                    boolean taken = dirs.stream().anyMatch(o -> m.uuid().equals(o.uuid));
                    if (!taken && (m.lastPath().equals(real) || m.lastPath().equals(d.path.toAbsolutePath().toString()))) {
                        byPath = m;
                    }
                }
            }
            String why = d.identityError != null ? d.identityError
                    : DevicePool.DEVICE_FILE + " is missing though the pool file exists";
            if (byPath != null) {
                d.uuid = byPath.uuid();
                LOG.warn("ssdDirectories[{}] = {}: {}; identified as device {} by the store record's last path",
                        d.position, d.path, why, d.uuid);
            } else {
                d.failure = why + (d.recordError != null ? "; " + d.recordError : "")
                        + "; the device cannot be identified, so it is left untouched (restore "
                        + DevicePool.DEVICE_FILE + ", or remove the directory's kvoffload files to start it afresh)";
            }
        }
    }

    private static DevicePool openPool(Dir d, int index, String storeUuid, StoreRecord newest, KvConfig config,
            FileModes modes) throws IOException {
        Path pool = d.path.resolve(DevicePool.POOL_FILE);
        int configured = config.directIoAlignment();
        if (d.uuid == null) {
            // O_DIRECT needs the logical block size (512 or 4096 on NVMe). 4096 is safe for both, is the
            // page size the DRAM slots are aligned to, and is where NVMe IOPS peak (Haas & Leis).
            int align = configured != 0 ? configured : DevicePool.DEFAULT_ALIGNMENT;
            long size = config.deviceCapacityBytes() - config.deviceCapacityBytes() % align;
            DevicePool.createPool(pool, size, modes);
            d.uuid = UUID.randomUUID().toString();
            DevicePool.writeIdentity(d.path, new DevicePool.Identity(d.uuid, storeUuid, size, align), modes);
            LOG.info("device {} ({}): created pool of {} bytes, alignment {}", index, d.path, size, align);
            return new DevicePool(index, d.path, d.uuid, size, align);
        }
        StoreRecord.Member m = newest == null ? null : newest.member(d.uuid);
        long size = d.identity != null ? d.identity.poolBytes() : m.poolBytes();
        int align = d.identity != null ? d.identity.alignment() : m.alignment();
        if (m != null && (m.poolBytes() > size || m.alignment() != align)) {
            throw new IOException(DevicePool.DEVICE_FILE + " (pool " + size + " bytes, alignment " + align
                    + ") contradicts the store record (pool " + m.poolBytes() + ", alignment " + m.alignment() + ")");
        }
        if (configured != 0 && configured != align) {
            throw new IllegalArgumentException("directIoAlignment = " + configured + " but the pool in " + d.path
                    + " was created with alignment " + align + "; allowed: 0 (keep) or " + align);
        }
        if (!d.poolExists || Files.size(pool) < size) {
            throw new IOException("pool file " + pool + " is missing or shorter than the " + size + " bytes recorded");
        }
        long capacity = config.deviceCapacityBytes() - config.deviceCapacityBytes() % align;
        if (capacity > size) {
            try {
                DevicePool.preallocate(pool, size, capacity);
                LOG.info("device {} ({}): pool grown from {} to {} bytes", index, d.path, size, capacity);
                size = capacity;
            } catch (KvCapacityException e) {
                LOG.warn("device {} ({}): keeping the pool of {} bytes: {}", index, d.path, size, e.getMessage());
            }
        } else if (capacity < size) {
            LOG.info("device {} ({}): keeping the existing pool of {} bytes (deviceCapacityBytes = {} is smaller;"
                    + " pools never shrink under committed data)", index, d.path, size, config.deviceCapacityBytes());
        }
        DevicePool.Identity want = new DevicePool.Identity(d.uuid, storeUuid, size, align);
        if (!want.equals(d.identity)) {
            DevicePool.writeIdentity(d.path, want, modes);
        }
        return new DevicePool(index, d.path, d.uuid, size, align);
    }

    private static StoreRecord.Member memberOf(List<StoreRecord.Member> members, String uuid) {
        for (StoreRecord.Member m : members) {
            if (m.uuid().equals(uuid)) {
                return m;
            }
        }
        return null;
    }

    private static void replace(List<StoreRecord.Member> members, StoreRecord.Member m) {
        for (int i = 0; i < members.size(); i++) {
            if (members.get(i).uuid().equals(m.uuid())) {
                members.set(i, m);
                return;
            }
        }
        members.add(m);
    }

    /**
     * Whether every member device of {@code record} and every folder of {@code manifestDirs} can be
     * reached: none missing, failed or unidentified, every directory that may hold manifests
     * listable. Only then can a deletion remove every copy of a manifest, and a tombstone be given up.
     */
    public boolean everyMemberReachable(StoreRecord record, List<Path> manifestDirs) {
        if (!unavailable.isEmpty() || hasUnidentified()) {
            return false;
        }
        for (StoreRecord.Member x : record.members()) {
            if (healthy.stream().noneMatch(d -> d.uuid().equals(x.uuid()))) {
                return false;
            }
        }
        for (DevicePool d : healthy) {
            if (d.failure() != null || !java.nio.file.Files.isDirectory(d.directory())) {
                return false;
            }
        }
        for (Path d : manifestDirs) {
            if (java.nio.file.Files.exists(d) && !(java.nio.file.Files.isReadable(d)
                    && java.nio.file.Files.isExecutable(d))) {
                return false;
            }
        }
        return true;
    }

    /** Writes {@code rec} to every healthy device; succeeds when at least one copy is durable. */
    public void writeRecord(StoreRecord rec, FileModes modes) throws IOException {
        IOException last = null;
        int written = 0;
        for (DevicePool p : healthy) {
            if (p.failure() != null) {
                continue;
            }
            try {
                AtomicFiles.write(p.directory().resolve(StoreRecord.FILE), rec.withSelf(p.uuid()).encode(), modes);
                written++;
            } catch (IOException e) {
                LOG.warn("could not write the store record on device {} ({}): {}", p.index(), p.directory(),
                        e.toString());
                last = e;
            }
        }
        if (written == 0) {
            throw last != null ? last : new IOException("no healthy device to hold the store record");
        }
    }
}
