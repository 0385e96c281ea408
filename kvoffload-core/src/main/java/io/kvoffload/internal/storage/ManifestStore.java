package io.kvoffload.internal.storage;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The directory of manifests, one file per committed sequence. A commit is atomic (write new,
 * fsync, rename, fsync directory); a deletion is durable before the sequence's extents are reused.
 */
public final class ManifestStore {
    private static final Logger LOG = LoggerFactory.getLogger(ManifestStore.class);
    private static final String SUFFIX = ".kvom";
    /** Ids are used as file names, so they are restricted to a safe alphabet. */
    public static final Pattern ID = Pattern.compile("[A-Za-z0-9._-]{1,128}");

    private final Path dir;

    public ManifestStore(Path dir) throws IOException {
        this.dir = dir;
        Files.createDirectories(dir);
        if (!Files.isWritable(dir)) {
            throw new IllegalArgumentException("metadataDirectory = " + dir + " is not writable");
        }
    }

    public Path directory() {
        return dir;
    }

    public Path pathOf(String id) {
        return dir.resolve(id + SUFFIX);
    }

    public void write(Manifest m) throws IOException {
        AtomicFiles.write(pathOf(m.id()), ManifestCodec.encode(m));
    }

    public void delete(String id) throws IOException {
        AtomicFiles.delete(pathOf(id));
    }

    /** Removes temporary files a crash left behind (half-written manifests are never visible). */
    public void removeLeftovers() throws IOException {
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, "*" + AtomicFiles.TMP_SUFFIX)) {
            for (Path p : ds) {
                LOG.info("removing {} left by an interrupted commit", p.getFileName());
                Files.deleteIfExists(p);
            }
        }
    }

    /** A manifest file that could be read, or the reason it could not. */
    public record Loaded(Path file, Manifest manifest, String error) {}

    public List<Loaded> loadAll() throws IOException {
        List<Loaded> out = new ArrayList<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, "*" + SUFFIX)) {
            for (Path p : ds) {
                try {
                    Manifest m = ManifestCodec.decode(Files.readAllBytes(p));
                    String expected = p.getFileName().toString();
                    if (!expected.equals(m.id() + SUFFIX)) {
                        out.add(new Loaded(p, null, "file name does not match sequence id " + m.id()));
                    } else {
                        out.add(new Loaded(p, m, null));
                    }
                } catch (IllegalArgumentException | IOException e) {
                    out.add(new Loaded(p, null, e.getMessage()));
                }
            }
        }
        return out;
    }
}
