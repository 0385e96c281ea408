package io.kvoffload.internal.storage;

import io.kvoffload.KvCapacityException;
import io.kvoffload.KvShape;
import io.kvoffload.internal.ffi.Libc;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One SSD: its directory, its preallocated pool file and the allocator over it. A small
 * {@code kvoffload-device.json} (with a CRC32C) names the device by a UUID that manifests refer to,
 * so the order of directories in the configuration may change, and records the store it belongs
 * to, the pool size and the alignment. {@link DeviceSet} decides which directory is which device.
 *
 * <p>A device that fails while the engine runs (its pool file vanished or was replaced) is marked
 * {@linkplain #failure() failed}: nothing more is allocated on it and commits naming it are refused.
 */
public final class DevicePool {
    private static final Logger LOG = LoggerFactory.getLogger(DevicePool.class);
    public static final String POOL_FILE = "kvoffload.pool";
    public static final String DEVICE_FILE = "kvoffload-device.json";
    public static final String MANIFEST_DIR = "manifests";
    public static final int DEFAULT_ALIGNMENT = 4096;

    private final int index;
    private final Path directory;
    private final Path poolFile;
    private final String uuid;
    private final long sizeBytes;
    private final int alignment;
    private final Object fileKey;
    private final ExtentAllocator allocator;
    private volatile String failure;
    /** Told the reason when the device fails (the store reports it as a degradation). */
    private volatile java.util.function.Consumer<String> onFailure = why -> { };
    /** A write here failed with ENOSPC and none has succeeded since (thin-provisioned or COW storage). */
    private volatile boolean full;

    DevicePool(int index, Path directory, String uuid, long sizeBytes, int alignment) throws IOException {
        this.index = index;
        this.directory = directory;
        this.poolFile = directory.resolve(POOL_FILE);
        this.uuid = uuid;
        this.sizeBytes = sizeBytes;
        this.alignment = alignment;
        this.fileKey = Files.readAttributes(poolFile, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).fileKey();
        this.allocator = new ExtentAllocator(sizeBytes, alignment);
    }

    /** What {@code kvoffload-device.json} says. */
    record Identity(String uuid, String storeUuid, long poolBytes, int alignment) {}

    /** Reads a device record; null when the file does not exist. */
    static Identity readIdentity(Path directory) throws IOException {
        byte[] bytes = AtomicFiles.readRegular(directory.resolve(DEVICE_FILE));
        if (bytes == null) {
            return null;
        }
        // Records written before they carried a CRC (and a store) are still accepted.
        Map<String, Object> m = CheckedJson.decode(bytes, false);
        String store = m.containsKey("storeUuid") ? CheckedJson.string(m, "storeUuid") : null;
        return new Identity(CheckedJson.string(m, "uuid"), store, CheckedJson.number(m, "poolBytes", 1, Long.MAX_VALUE),
                (int) CheckedJson.number(m, "alignment", 512, 1 << 20));
    }

    static void writeIdentity(Path directory, Identity id, FileModes modes) throws IOException {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("uuid", id.uuid());
        m.put("storeUuid", id.storeUuid());
        m.put("poolBytes", id.poolBytes());
        m.put("alignment", id.alignment());
        m.put("layoutVersion", KvShape.LAYOUT_VERSION);
        AtomicFiles.write(directory.resolve(DEVICE_FILE), CheckedJson.encode(m), modes);
    }

    /**
     * Creates and preallocates a pool of {@code size} bytes. Fails, leaving no pool behind, when the
     * file system cannot back it: a sparse pool would accept allocations the disk cannot hold.
     */
    static void createPool(Path pool, long size, FileModes modes) throws IOException {
        Files.createFile(pool, modes.fileAttribute());
        modes.applyToFile(pool);
        try {
            preallocate(pool, 0, size);
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(pool);
            throw e;
        }
    }

    /**
     * Reserves disk blocks for {@code [from, size)} of {@code pool}: {@code posix_fallocate} where
     * native access works, else by writing zeros. A failure leaves the file at its old size.
     *
     * @throws KvCapacityException when the file system has no room (the message says how much it has)
     */
    static void preallocate(Path pool, long from, long size) throws IOException {
        if (Libc.unavailableReason() == null) {
            int err = Libc.posixFallocate(pool, size);
            if (err == 0) {
                return;
            }
            truncate(pool, from);
            throw new KvCapacityException("cannot preallocate " + size + " bytes for " + pool + " (posix_fallocate errno "
                    + err + (err == 28 ? ", no space left" : err == 27 ? ", file too large" : "") + "; the file system has "
                    + usable(pool) + " bytes usable); lower deviceCapacityBytes or free space");
        }
        LOG.info("native access unavailable ({}); preallocating {} by writing zeros", Libc.unavailableReason(), pool);
        try (FileChannel ch = FileChannel.open(pool, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS)) {
            ByteBuffer zeros = ByteBuffer.allocateDirect(1 << 20);
            for (long at = from; at < size; ) {
                zeros.clear().limit((int) Math.min(zeros.capacity(), size - at));
                at += ch.write(zeros, at);
            }
            ch.force(true);
        } catch (IOException e) {
            truncate(pool, from);
            throw new KvCapacityException("cannot preallocate " + size + " bytes for " + pool + " (" + e.getMessage()
                    + "; the file system has " + usable(pool) + " bytes usable); lower deviceCapacityBytes or free space");
        }
    }

    private static void truncate(Path pool, long size) {
        try (FileChannel ch = FileChannel.open(pool, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS)) {
            if (ch.size() > size) {
                ch.truncate(size);
            }
        } catch (IOException e) {
            LOG.warn("could not truncate {} back to {} bytes: {}", pool, size, e.toString());
        }
    }

    private static long usable(Path p) {
        try {
            return Files.getFileStore(p.getParent()).getUsableSpace();
        } catch (IOException e) {
            return -1;
        }
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

    /**
     * Whether the file system under this pool refused a write for lack of space (ENOSPC) and no
     * write has succeeded since; allocation then prefers the other devices.
     */
    public boolean full() {
        return full;
    }

    void full(boolean f) {
        if (full != f) {
            full = f;
            if (f) {
                LOG.warn("device {} ({}) is full: a write failed with ENOSPC; new extents go to other devices until"
                        + " a write here succeeds again", index, directory);
            } else {
                LOG.info("device {} ({}) takes writes again", index, directory);
            }
        }
    }

    /** Why the device stopped serving, or null while it is healthy. */
    public String failure() {
        return failure;
    }

    /** Sets what is told the reason when the device fails. */
    public void onFailure(java.util.function.Consumer<String> listener) {
        this.onFailure = listener;
    }

    /** Marks the device failed (first reason wins); logged once. */
    public void fail(String reason) {
        synchronized (this) {
            if (failure != null) {
                return;
            }
            failure = reason;
        }
        LOG.error("device {} ({}, {}) failed: {}; it serves nothing more until the engine is reopened", index, uuid,
                directory, reason);
        io.kvoffload.internal.obs.Flight.deviceError(index, uuid, directory.toString(), reason);
        onFailure.accept(reason);
    }

    /**
     * Checks that the pool file is still the one opened (a deleted or replaced pool file keeps its
     * open descriptor working, so writes would "succeed" into a file nobody will find again); marks
     * the device failed and returns the reason when it is not.
     */
    public String checkPresent() {
        String f = failure;
        if (f != null) {
            return f;
        }
        try {
            Object key = Files.readAttributes(poolFile, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).fileKey();
            if (!Objects.equals(key, fileKey)) {
                fail("the pool file " + poolFile + " was replaced since the engine opened it");
            }
        } catch (IOException e) {
            fail("the pool file " + poolFile + " vanished since the engine opened it (" + e.getClass().getSimpleName()
                    + ")");
        }
        return failure;
    }
}
