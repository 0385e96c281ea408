package io.kvoffload.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * The temporary directories the benchmarks make for their devices: where the root goes, the
 * {@code ssd<i>} directory of each device below it, and deleting it all afterwards.
 */
public final class TempDirs {
    private TempDirs() {}

    /**
     * A new, empty directory named {@code prefix} plus a random suffix under {@code base}, or under
     * {@code java.io.tmpdir} when {@code base} is null. {@code base} must exist.
     */
    public static Path createUnder(Path base, String prefix) throws IOException {
        return Files.createTempDirectory(base == null ? Path.of(System.getProperty("java.io.tmpdir")) : base, prefix);
    }

    /**
     * {@code dir} (created with its parents if missing) when the user named one, else a new
     * temporary directory as {@link #createUnder createUnder(null, prefix)}; the caller deletes the
     * root only in the second case, so a directory the user named keeps what the run left.
     */
    public static Path givenOrTemp(Path dir, String prefix) throws IOException {
        return dir != null ? Files.createDirectories(dir) : createUnder(null, prefix);
    }

    /**
     * The device directories {@code root/ssd0} to {@code root/ssd<count-1>}, created if missing
     * (with {@code root}); a mutable list in device order.
     */
    public static List<Path> ssdDirectories(Path root, int count) throws IOException {
        List<Path> dirs = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            dirs.add(Files.createDirectories(root.resolve("ssd" + i)));
        }
        return dirs;
    }

    /** Deletes {@code root} and everything below it; nothing when it does not exist. */
    public static void deleteRecursively(Path root) throws IOException {
        if (root == null || !Files.exists(root)) {
            return;
        }
        try (Stream<Path> files = Files.walk(root)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
