package io.kvoffload.internal.storage;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Durable file replacement: write a fresh temporary file, fsync it, rename it over the target,
 * fsync the directory. After a crash at any point the target is either the old or the new content.
 *
 * <p>The temporary file has a random name and is created with {@code CREATE_NEW} and
 * {@code NOFOLLOW_LINKS}: a link or directory planted under a predictable name can neither redirect
 * the write nor block it.
 */
public final class AtomicFiles {
    private static final Logger LOG = LoggerFactory.getLogger(AtomicFiles.class);
    public static final String TMP_SUFFIX = ".tmp";
    private static final Set<OpenOption> CREATE_TMP = Set.of(StandardOpenOption.CREATE_NEW,
            StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS);

    private AtomicFiles() {}

    /** Writes {@code content} to {@code target} atomically and durably, the new file with {@code mode}. */
    public static void write(Path target, byte[] content, FileModes mode) throws IOException {
        Path tmp = writeTemporary(target, content, mode);
        try {
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(tmp);
            throw e;
        }
        syncDirectory(target.getParent());
    }

    /**
     * Writes {@code content} durably to a new temporary file beside {@code target} and returns it;
     * the caller renames it into place.
     */
    public static Path writeTemporary(Path target, byte[] content, FileModes mode) throws IOException {
        Path tmp = target.resolveSibling(target.getFileName() + "." + Long.toHexString(
                ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE) + TMP_SUFFIX);
        try (FileChannel ch = FileChannel.open(tmp, CREATE_TMP, mode.fileAttribute())) {
            ByteBuffer buf = ByteBuffer.wrap(content);
            while (buf.hasRemaining()) {
                ch.write(buf);
            }
            ch.force(true);
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(tmp);
            throw e;
        }
        mode.applyToFile(tmp);
        return tmp;
    }

    /** Deletes a file durably: once this returns, the deletion survives a crash. */
    public static void delete(Path target) throws IOException {
        if (Files.deleteIfExists(target)) {
            syncDirectory(target.getParent());
        }
    }

    public static void syncDirectory(Path dir) throws IOException {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        }
    }

    /**
     * Removes temporary files an interrupted write left in {@code dir} (they are never visible as
     * data). Links are removed, not followed; a directory under such a name is left alone with a
     * warning, since it is not ours to delete.
     */
    public static void removeLeftovers(Path dir) throws IOException {
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, "*" + TMP_SUFFIX)) {
            for (Path p : ds) {
                if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                    LOG.warn("leaving {} alone: a directory where only temporary files are expected", p);
                    continue;
                }
                LOG.info("removing {} left by an interrupted write", p.getFileName());
                Files.deleteIfExists(p);
            }
        }
    }

    /** Reads a regular file without following a link; null if there is none. */
    public static byte[] readRegular(Path file) throws IOException {
        if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
            if (Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
                throw new IOException(file + " is not a regular file");
            }
            return null;
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
            long size = ch.size();
            if (size > Integer.MAX_VALUE - 16) {
                throw new IOException(file + " is too large (" + size + " bytes)");
            }
            ByteBuffer buf = ByteBuffer.allocate((int) size);
            while (buf.hasRemaining() && ch.read(buf) >= 0) {
                // read to the end
            }
            return buf.position() == buf.capacity() ? buf.array() : Arrays.copyOf(buf.array(), buf.position());
        }
    }
}
