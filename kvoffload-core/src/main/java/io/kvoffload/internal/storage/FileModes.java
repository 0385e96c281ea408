package io.kvoffload.internal.storage;

import java.io.IOException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.Set;

/**
 * The permissions of the files and directories the store creates. The KV cache is derived from
 * prompts, so the default is private to the owner: files {@code 0600}, directories {@code 0700}.
 * A directory gets the execute bit wherever the file mode has the read bit.
 */
public final class FileModes {
    public static final FileModes PRIVATE = new FileModes(0600);
    private static final boolean POSIX = FileSystems.getDefault().supportedFileAttributeViews().contains("posix");

    private final int mode;
    private final Set<PosixFilePermission> file;
    private final Set<PosixFilePermission> dir;

    private FileModes(int mode) {
        this.mode = mode;
        this.file = toSet(mode);
        int dirMode = mode | ((mode & 0444) >> 2);
        this.dir = toSet(dirMode);
    }

    /**
     * Parses an octal mode such as {@code "600"} or {@code "0640"}.
     *
     * @throws IllegalArgumentException if it is not octal, has bits outside {@code 0666}, or lacks
     *     the owner's read and write bits (the engine must read and write its own files)
     */
    public static FileModes parse(String name, String value) {
        int m;
        try {
            m = Integer.parseInt(value.trim(), 8);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " = '" + value + "' is not an octal file mode; allowed: e.g."
                    + " '600' (default, owner only), '640' (group may read)");
        }
        if ((m & ~0666) != 0 || (m & 0600) != 0600) {
            throw new IllegalArgumentException(name + " = '" + value + "' is not allowed; allowed: an octal mode of"
                    + " read/write bits only (no execute, setuid or sticky bits) that includes the owner's read and"
                    + " write, e.g. '600' or '640'");
        }
        return m == 0600 ? PRIVATE : new FileModes(m);
    }

    public int mode() {
        return mode;
    }

    /** The mode as three octal digits, e.g. {@code 600}. */
    public String octal() {
        return String.format("%03o", mode);
    }

    /** An attribute for {@code Files.createFile}/{@code FileChannel.open}; none where POSIX permissions don't exist. */
    public FileAttribute<?>[] fileAttribute() {
        return POSIX ? new FileAttribute<?>[] {PosixFilePermissions.asFileAttribute(file)} : new FileAttribute<?>[0];
    }

    /** Sets the file mode exactly (the creation attribute is narrowed by the umask). */
    public void applyToFile(Path p) throws IOException {
        if (POSIX) {
            Files.setPosixFilePermissions(p, file);
        }
    }

    /** Creates {@code dir} (and missing parents) and gives it the directory mode when this call created it. */
    public void createDirectory(Path dir) throws IOException {
        if (Files.isDirectory(dir)) {
            return;
        }
        Path parent = dir.getParent();
        if (parent != null && !Files.exists(parent)) {
            createDirectory(parent);
        }
        try {
            Files.createDirectory(dir);
        } catch (java.nio.file.FileAlreadyExistsException e) {
            if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
                throw e;
            }
            return;
        }
        if (POSIX) {
            Files.setPosixFilePermissions(dir, this.dir);
        }
    }

    private static Set<PosixFilePermission> toSet(int m) {
        Set<PosixFilePermission> s = EnumSet.noneOf(PosixFilePermission.class);
        PosixFilePermission[] order = {PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
            PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.GROUP_WRITE,
            PosixFilePermission.GROUP_READ, PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
            PosixFilePermission.OWNER_READ};
        for (int i = 0; i < order.length; i++) {
            if ((m & (1 << i)) != 0) {
                s.add(order[i]);
            }
        }
        return s;
    }

    @Override
    public String toString() {
        return octal();
    }
}
