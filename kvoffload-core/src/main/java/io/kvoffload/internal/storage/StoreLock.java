package io.kvoffload.internal.storage;

import io.kvoffload.KvStoreLockedException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Exclusive ownership of a store: one {@code kvoffload.lock} per directory (every SSD directory,
 * and the metadata directory), locked for as long as the engine is open. A second engine, in this
 * process or another, fails to open with a {@link KvStoreLockedException} naming the holder
 * instead of sharing the allocator and losing committed data.
 *
 * <p>The kernel lock ({@code fcntl}, through {@link FileChannel#tryLock()}) excludes other
 * processes. Inside one process POSIX locks do not exclude and, worse, closing <em>any</em>
 * descriptor of the file drops them; so this process's holders are also kept in a map, checked
 * before the file is opened at all.
 */
public final class StoreLock implements AutoCloseable {
    public static final String LOCK_FILE = "kvoffload.lock";
    private static final Map<Path, String> HELD_HERE = new ConcurrentHashMap<>();

    private final List<Held> held = new ArrayList<>();

    private record Held(Path key, FileChannel channel, FileLock lock) {}

    private StoreLock() {}

    /**
     * Locks every directory in {@code dirs} (which must exist), or none.
     *
     * @param role what opens the store, for the holder line other openers see
     */
    public static StoreLock acquire(List<Path> dirs, String role, FileModes modes) throws IOException {
        StoreLock s = new StoreLock();
        try {
            for (Path d : dirs) {
                s.lockOne(d, role, modes);
            }
            return s;
        } catch (IOException | RuntimeException e) {
            s.close();
            throw e;
        }
    }

    private void lockOne(Path dir, String role, FileModes modes) throws IOException {
        if (!Files.isDirectory(dir) || !Files.isWritable(dir)) {
            return; // DeviceSet reports a missing or read-only directory with the argument's name
        }
        Path key = dir.toRealPath();
        for (Held h : held) {
            if (h.key.equals(key)) {
                return; // listed twice (metadata directory inside an SSD directory): one lock covers both
            }
        }
        String holder = ProcessHandle.current().pid() + "@" + hostName() + " (" + role + ", since " + Instant.now()
                + ", thread " + Thread.currentThread().getName() + ")";
        String previous = HELD_HERE.putIfAbsent(key, holder);
        if (previous != null) {
            throw new KvStoreLockedException(dir, "an engine in this process: " + previous);
        }
        FileChannel ch = null;
        try {
            Path file = key.resolve(LOCK_FILE);
            ch = FileChannel.open(file, java.util.Set.of(StandardOpenOption.CREATE, StandardOpenOption.READ,
                    StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS), modes.fileAttribute());
            FileLock lock;
            try {
                lock = ch.tryLock();
            } catch (OverlappingFileLockException e) {
                lock = null; // another channel of this JVM holds it: treat as held
            }
            if (lock == null) {
                String other = readHolder(ch);
                throw new KvStoreLockedException(dir, other.isEmpty() ? "another process" : "process " + other);
            }
            ch.truncate(0);
            ch.write(ByteBuffer.wrap((holder + "\n").getBytes(StandardCharsets.UTF_8)), 0);
            held.add(new Held(key, ch, lock));
        } catch (IOException | RuntimeException e) {
            HELD_HERE.remove(key, holder);
            if (ch != null) {
                ch.close();
            }
            throw e;
        }
    }

    private static String readHolder(FileChannel ch) {
        try {
            ByteBuffer b = ByteBuffer.allocate(512);
            ch.read(b, 0);
            return new String(b.array(), 0, b.position(), StandardCharsets.UTF_8).trim();
        } catch (IOException e) {
            return "";
        }
    }

    private static String hostName() {
        // No DNS look-up: opening an engine must not wait on the network.
        try {
            return Files.readString(Path.of("/etc/hostname")).trim();
        } catch (IOException | RuntimeException e) {
            String env = System.getenv("HOSTNAME");
            return env != null ? env : "localhost";
        }
    }

    /** Whether {@code dir} is locked by an engine of this process. */
    static boolean heldHere(Path dir) throws IOException {
        return Files.isDirectory(dir) && HELD_HERE.containsKey(dir.toRealPath());
    }

    @Override
    public void close() {
        for (int i = held.size() - 1; i >= 0; i--) {
            Held h = held.get(i);
            try {
                h.lock.release();
            } catch (IOException ignored) {
                // closing the channel releases it too
            }
            try {
                h.channel.close();
            } catch (IOException ignored) {
                // nothing to do: the process lock goes with the descriptor
            }
            HELD_HERE.remove(h.key);
        }
        held.clear();
    }
}
