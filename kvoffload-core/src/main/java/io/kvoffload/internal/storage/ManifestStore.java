package io.kvoffload.internal.storage;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The manifests of committed sequences, one file per sequence, kept in several directories (the
 * {@code manifests} folder of at least two devices, and the configured metadata directory if any)
 * so that one damaged or missing device loses no sequence. Each directory also keeps the previous
 * generation ({@code <id>.kvom.prev}) of each manifest; open takes the newest copy that verifies.
 *
 * <p>A commit is atomic per copy (write new, fsync, keep the old as {@code .prev}, rename, fsync
 * directory) and acknowledged once every copy is durable; a deletion removes every copy in every
 * directory it can reach (a stale copy left anywhere would bring the sequence back over reused
 * space; one on a device that is away is outvoted by a deletion tombstone, {@link Tombstones}).
 */
public final class ManifestStore {
    private static final Logger LOG = LoggerFactory.getLogger(ManifestStore.class);
    static final String SUFFIX = ".kvom";
    static final String PREV_SUFFIX = ".kvom.prev";
    static final String QUARANTINE_DIR = "quarantine";
    /** Ids are used as file names, so they are restricted to a safe alphabet. */
    public static final Pattern ID = Pattern.compile("[A-Za-z0-9._-]{1,128}");

    private final List<Path> readDirs;
    private final FileModes modes;
    private volatile List<Path> writeDirs;

    /**
     * @param readDirs every directory that may hold manifests (unreadable ones are skipped at load)
     * @param writeDirs where commits write their copies; a subset of {@code readDirs}
     */
    public ManifestStore(List<Path> readDirs, List<Path> writeDirs, FileModes modes) throws IOException {
        this.readDirs = List.copyOf(new LinkedHashSet<>(readDirs));
        this.modes = modes;
        setWriteDirs(writeDirs);
    }

    /** Changes where new commits go (a device failed); copies elsewhere are removed as sequences recommit. */
    public void setWriteDirs(List<Path> dirs) throws IOException {
        if (dirs.isEmpty()) {
            throw new IOException("no directory left to hold manifests");
        }
        for (Path d : dirs) {
            if (!readDirs.contains(d)) {
                throw new IllegalArgumentException("manifest directory " + d + " is not among " + readDirs);
            }
            modes.createDirectory(d);
            if (!Files.isWritable(d)) {
                throw new IllegalArgumentException("manifest directory " + d + " is not writable");
            }
        }
        this.writeDirs = List.copyOf(dirs);
    }

    public List<Path> writeDirs() {
        return writeDirs;
    }

    public List<Path> readDirs() {
        return readDirs;
    }

    /**
     * Makes {@code m} durable in every write directory and drops stale copies elsewhere. If a directory
     * fails, the directories this call already changed get their previous generation back before the
     * failure is thrown: a commit that fails leaves no copy of its number, so the retry that takes the
     * same number (the sequence's last commit is still the one before) is the only copy of it. Left in
     * place, the failed attempt's copy would become the retry's {@code .prev}, the two would disagree,
     * and recovery would fall back past the acknowledged retry ({@code CommitRetryTest}).
     */
    public void write(Manifest m) throws IOException {
        List<Path> dirs = writeDirs;
        writeTo(dirs, m.id(), ManifestCodec.encode(m));
        dropElsewhere(m.id(), dirs);
    }

    /**
     * Writes the bytes of {@code source}, a copy recovery verified and uses, to each write directory that
     * holds no current copy of its commit, and drops copies outside the write directories. The bytes are
     * the file's own, not a re-encoding, and a directory that has the commit already is left alone, so the
     * copies of the commit stay identical (a re-encoded copy differs in bytes, and copies of one commit
     * that differ are not trusted at the next open).
     *
     * @throws IOException if the source cannot be read, no longer holds what was verified, or a write fails
     */
    public void replicate(Copy source) throws IOException {
        Manifest m = source.manifest();
        byte[] bytes = AtomicFiles.readRegular(source.file());
        Manifest again;
        try {
            again = bytes == null ? null : ManifestCodec.decode(bytes);
        } catch (RuntimeException e) {
            again = null;
        }
        if (again == null || digest(bytes, again) != source.digest()) {
            throw new IOException(source.file() + " changed since it was verified");
        }
        List<Path> missing = new ArrayList<>();
        for (Path d : writeDirs) {
            Path f = d.resolve(m.id() + SUFFIX);
            Copy c = Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS) ? load(f, m.id()) : null;
            if (c == null || c.manifest() == null || c.manifest().commitNumber() != m.commitNumber()
                    || c.digest() != source.digest()) {
                missing.add(d);
            }
        }
        writeTo(missing, m.id(), bytes);
        dropElsewhere(m.id(), writeDirs);
    }

    /**
     * Makes {@code bytes} the current copy of {@code id} in each of {@code dirs}, the one there before
     * becoming its previous generation. If a directory fails, the directories this call already changed
     * get their previous generation back before the failure is thrown.
     */
    private void writeTo(List<Path> dirs, String id, byte[] bytes) throws IOException {
        boolean[] movedAside = new boolean[dirs.size()];
        boolean[] placed = new boolean[dirs.size()];
        int reached = 0;
        try {
            for (; reached < dirs.size(); reached++) {
                Path d = dirs.get(reached);
                Path target = d.resolve(id + SUFFIX);
                Path tmp = AtomicFiles.writeTemporary(target, bytes, modes);
                try {
                    if (Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
                        Files.move(target, d.resolve(id + PREV_SUFFIX), StandardCopyOption.ATOMIC_MOVE,
                                StandardCopyOption.REPLACE_EXISTING);
                        movedAside[reached] = true;
                    }
                    Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                    placed[reached] = true;
                } catch (IOException | RuntimeException e) {
                    Files.deleteIfExists(tmp);
                    throw e;
                }
                AtomicFiles.syncDirectory(d);
            }
        } catch (IOException | RuntimeException e) {
            restore(id, dirs, reached, movedAside, placed, e);
            throw e;
        }
    }

    /** Removes the copies of {@code id} in the read directories other than {@code kept}. */
    private void dropElsewhere(String id, List<Path> kept) throws IOException {
        for (String suffix : new String[] {PREV_SUFFIX, SUFFIX}) {
            for (Path d : readDirs) {
                if (!kept.contains(d)) {
                    deleteIn(d, id + suffix, false);
                }
            }
        }
    }

    /**
     * Undoes a failed {@link #writeTo} in directories {@code 0..reached}: the copy moved aside goes back
     * (over the new one, if it was placed), or the new copy is removed where there was none before.
     * What cannot be undone is added to {@code failure}.
     */
    private static void restore(String id, List<Path> dirs, int reached, boolean[] movedAside, boolean[] placed,
            Exception failure) {
        for (int i = Math.min(reached, dirs.size() - 1); i >= 0; i--) {
            if (!movedAside[i] && !placed[i]) {
                continue;
            }
            Path d = dirs.get(i);
            try {
                if (movedAside[i]) {
                    Files.move(d.resolve(id + PREV_SUFFIX), d.resolve(id + SUFFIX), StandardCopyOption.ATOMIC_MOVE,
                            StandardCopyOption.REPLACE_EXISTING);
                } else {
                    Files.deleteIfExists(d.resolve(id + SUFFIX));
                }
                AtomicFiles.syncDirectory(d);
            } catch (IOException | RuntimeException undo) {
                failure.addSuppressed(undo);
            }
        }
    }

    /**
     * Removes every copy of {@code id} in every directory that can be reached: first every previous
     * generation, then the current ones, so that a crash part-way leaves the last commit or nothing,
     * never an older generation brought back over space that may have been reused.
     */
    public void delete(String id) throws IOException {
        IOException failure = null;
        for (String suffix : new String[] {PREV_SUFFIX, SUFFIX}) {
            for (Path d : readDirs) {
                try {
                    deleteIn(d, id + suffix, writeDirs.contains(d));
                } catch (IOException e) {
                    failure = e;
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    /**
     * Removes, from every directory that can be reached, each copy of {@code id} that decodes and
     * is numbered {@code through} or lower (the copies a deletion tombstone buries; a newer sequence
     * of that id keeps its own); returns how many were removed.
     */
    int deleteThrough(String id, long through) throws IOException {
        int n = 0;
        for (String suffix : new String[] {PREV_SUFFIX, SUFFIX}) {
            for (Path d : readDirs) {
                Path f = d.resolve(id + suffix);
                if (Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)) {
                    Copy c = load(f, id);
                    if (c.manifest() != null && c.manifest().commitNumber() <= through) {
                        AtomicFiles.delete(f);
                        n++;
                    }
                }
            }
        }
        return n;
    }

    private static void deleteIn(Path d, String name, boolean mustReach) throws IOException {
        if (!mustReach && !Files.isDirectory(d)) {
            return;
        }
        if (Files.deleteIfExists(d.resolve(name))) {
            AtomicFiles.syncDirectory(d);
        }
    }

    /** Removes temporary files a crash left behind (half-written manifests are never visible). */
    public void removeLeftovers() {
        for (Path d : readDirs) {
            try {
                AtomicFiles.removeLeftovers(d);
            } catch (IOException e) {
                LOG.warn("could not clean {}: {}", d, e.toString());
            }
        }
    }

    /**
     * What copies of one commit are compared by ({@link Copy#digest}): CRC32C and length of the file
     * encoded again from {@code m}, its decoding, in the file's own format version. Two copies agree when
     * they decode to the same manifest, also where an earlier encoder left bytes that decoding ignores
     * (the table slots of blocks without an extent, before the encoding was canonical); a copy rewritten
     * to say something else still differs. The file's own bytes where it cannot be encoded again.
     */
    static long digest(byte[] file, Manifest m) {
        try {
            return digest(ManifestCodec.encode(m, java.nio.ByteBuffer.wrap(file).getInt(4)));
        } catch (RuntimeException e) {
            return digest(file);
        }
    }

    private static long digest(byte[] bytes) {
        java.util.zip.CRC32C c = new java.util.zip.CRC32C();
        c.update(bytes);
        return c.getValue() ^ ((long) bytes.length << 32);
    }

    /**
     * One copy of a manifest: decoded, or the reason it could not be.
     *
     * @param digest what copies of one generation are compared by ({@link #digest(byte[], Manifest)})
     */
    public record Copy(Path file, Manifest manifest, String error, long digest) {
        Copy(Path file, String error) {
            this(file, null, error, 0);
        }
    }

    /** Every copy of every manifest found, by sequence id (file name), ids in sorted order. */
    public Map<String, List<Copy>> loadAll() {
        Map<String, List<Copy>> out = new TreeMap<>();
        for (Path d : readDirs) {
            if (!Files.isDirectory(d, LinkOption.NOFOLLOW_LINKS)) {
                continue;
            }
            try (DirectoryStream<Path> ds = Files.newDirectoryStream(d, "*{" + SUFFIX + "," + PREV_SUFFIX + "}")) {
                for (Path p : ds) {
                    String name = p.getFileName().toString();
                    String id = name.endsWith(PREV_SUFFIX) ? name.substring(0, name.length() - PREV_SUFFIX.length())
                            : name.substring(0, name.length() - SUFFIX.length());
                    out.computeIfAbsent(id, k -> new ArrayList<>()).add(load(p, id));
                }
            } catch (IOException | RuntimeException e) {
                LOG.error("cannot list manifests in {}: {}", d, e.toString());
            }
        }
        return out;
    }

    private static Copy load(Path p, String id) {
        try {
            if (!ID.matcher(id).matches()) {
                return new Copy(p, "file name is not a valid sequence id");
            }
            byte[] bytes = AtomicFiles.readRegular(p);
            if (bytes == null) {
                return new Copy(p, "vanished while loading");
            }
            Manifest m = ManifestCodec.decode(bytes);
            if (!id.equals(m.id())) {
                return new Copy(p, "file name does not match sequence id " + m.id());
            }
            return new Copy(p, m, null, digest(bytes, m));
        } catch (IOException | RuntimeException e) { // a hostile file may fail in any way; it is only ever a bad copy
            return new Copy(p, String.valueOf(e.getMessage()));
        }
    }

    /**
     * Moves {@code files} into a {@code quarantine} folder beside them (kept for inspection, no
     * longer loaded); returns how many were moved.
     */
    public int quarantine(Set<Path> files) throws IOException {
        int n = 0;
        for (Path f : files) {
            if (!Files.exists(f, LinkOption.NOFOLLOW_LINKS)) {
                continue;
            }
            Path q = f.resolveSibling(QUARANTINE_DIR);
            modes.createDirectory(q);
            Files.move(f, q.resolve(f.getFileName() + "." + System.currentTimeMillis()),
                    StandardCopyOption.ATOMIC_MOVE);
            AtomicFiles.syncDirectory(f.getParent());
            n++;
        }
        return n;
    }
}
