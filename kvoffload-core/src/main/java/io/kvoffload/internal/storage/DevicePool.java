package io.kvoffload.internal.storage;

import com.fasterxml.jackson.jr.ob.JSON;
import io.kvoffload.internal.ffi.Libc;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One SSD: its directory, its preallocated pool file and the allocator over it. A small
 * {@code kvoffload-device.json} names the device (a UUID manifests refer to, so the order of
 * directories in the configuration may change) and records the pool size and alignment.
 */
public final class DevicePool {
    private static final Logger LOG = LoggerFactory.getLogger(DevicePool.class);
    public static final String POOL_FILE = "kvoffload.pool";
    public static final String DEVICE_FILE = "kvoffload-device.json";
    public static final int DEFAULT_ALIGNMENT = 4096;

    private final int index;
    private final Path directory;
    private final Path poolFile;
    private final String uuid;
    private final long sizeBytes;
    private final int alignment;
    private final ExtentAllocator allocator;

    private DevicePool(int index, Path directory, String uuid, long sizeBytes, int alignment) {
        this.index = index;
        this.directory = directory;
        this.poolFile = directory.resolve(POOL_FILE);
        this.uuid = uuid;
        this.sizeBytes = sizeBytes;
        this.alignment = alignment;
        this.allocator = new ExtentAllocator(sizeBytes, alignment);
    }

    /**
     * Opens the device in {@code directory}, creating and preallocating its pool on first use.
     *
     * @param configuredAlignment 0 to detect from the file system
     */
    public static DevicePool openOrCreate(int index, Path directory, long capacity, int configuredAlignment)
            throws IOException {
        String arg = "ssdDirectories[" + index + "]";
        if (!Files.isDirectory(directory)) {
            throw new IllegalArgumentException(arg + " = " + directory
                    + " does not exist or is not a directory; allowed: an existing, writable directory on the SSD");
        }
        if (!Files.isWritable(directory)) {
            throw new IllegalArgumentException(arg + " = " + directory
                    + " is not writable; allowed: an existing, writable directory on the SSD");
        }
        Path meta = directory.resolve(DEVICE_FILE);
        Path pool = directory.resolve(POOL_FILE);
        if (Files.exists(meta)) {
            Map<String, Object> m = JSON.std.mapFrom(Files.readString(meta));
            String uuid = String.valueOf(m.get("uuid"));
            long size = ((Number) m.get("poolBytes")).longValue();
            int align = ((Number) m.get("alignment")).intValue();
            if (configuredAlignment != 0 && configuredAlignment != align) {
                throw new IllegalArgumentException("directIoAlignment = " + configuredAlignment + " but the pool in "
                        + directory + " was created with alignment " + align + "; allowed: 0 (keep) or " + align);
            }
            if (!Files.exists(pool) || Files.size(pool) < size) {
                throw new IOException("pool file " + pool + " is missing or shorter than the " + size
                        + " bytes recorded in " + meta);
            }
            if (capacity > size) {
                preallocate(pool, capacity);
                writeMeta(meta, uuid, capacity, align);
                LOG.info("device {} ({}): pool grown from {} to {} bytes", index, directory, size, capacity);
                size = capacity;
            } else if (capacity < size) {
                LOG.info("device {} ({}): keeping the existing pool of {} bytes (deviceCapacityBytes = {} is smaller;"
                        + " pools never shrink under committed data)", index, directory, size, capacity);
            }
            return new DevicePool(index, directory, uuid, size, align);
        }
        // O_DIRECT needs the logical block size (512 or 4096 on NVMe). 4096 is safe for both, is the
        // page size the DRAM slots are aligned to, and is where NVMe IOPS peak (Haas & Leis).
        int align = configuredAlignment != 0 ? configuredAlignment : DEFAULT_ALIGNMENT;
        long size = capacity - capacity % align;
        preallocate(pool, size);
        String uuid = UUID.randomUUID().toString();
        writeMeta(meta, uuid, size, align);
        LOG.info("device {} ({}): created pool of {} bytes, alignment {}", index, directory, size, align);
        return new DevicePool(index, directory, uuid, size, align);
    }

    private static void preallocate(Path pool, long size) throws IOException {
        if (Libc.unavailableReason() == null) {
            int err = Libc.posixFallocate(pool, size);
            if (err == 0) {
                return;
            }
            LOG.warn("posix_fallocate({}, {}) failed with errno {}; the pool file is sized but sparse", pool, size, err);
        } else {
            LOG.warn("native access unavailable ({}); the pool file {} is sized but sparse",
                    Libc.unavailableReason().toString(), pool);
        }
        try (RandomAccessFile f = new RandomAccessFile(pool.toFile(), "rw")) {
            if (f.length() < size) {
                f.setLength(size);
            }
        }
    }

    private static void writeMeta(Path meta, String uuid, long size, int align) throws IOException {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("uuid", uuid);
        m.put("poolBytes", size);
        m.put("alignment", align);
        m.put("layoutVersion", io.kvoffload.KvShape.LAYOUT_VERSION);
        AtomicFiles.write(meta, JSON.std.asString(m).getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    public int index() {
        return index;
    }

    public Path directory() {
        return directory;
    }

    public Path poolFile() {
        return poolFile;
    }

    public String uuid() {
        return uuid;
    }

    public long sizeBytes() {
        return sizeBytes;
    }

    public int alignment() {
        return alignment;
    }

    public ExtentAllocator allocator() {
        return allocator;
    }
}
