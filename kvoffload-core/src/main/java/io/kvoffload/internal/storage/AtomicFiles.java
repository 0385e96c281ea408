package io.kvoffload.internal.storage;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * Durable file replacement: write a temporary file, fsync it, rename it over the target, fsync
 * the directory. After a crash at any point the target is either the old or the new content.
 */
public final class AtomicFiles {
    public static final String TMP_SUFFIX = ".tmp";

    private AtomicFiles() {}

    public static void write(Path target, byte[] content) throws IOException {
        Path tmp = target.resolveSibling(target.getFileName() + TMP_SUFFIX);
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer buf = ByteBuffer.wrap(content);
            while (buf.hasRemaining()) {
                ch.write(buf);
            }
            ch.force(true);
        }
        Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        syncDirectory(target.getParent());
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
}
