package io.kvoffload.internal.storage;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deletion tombstones: the durable record that sequence {@code id} was deleted (or evicted) with
 * its commits up to number {@code through}, kept as {@code <id>.kvot} beside the manifests while
 * some member device, which may still hold a copy of the deleted manifest, cannot be reached.
 *
 * <p>A deletion removes every manifest copy it can reach; a copy on a missing device survives it.
 * When that device returns, the tombstone outvotes the copy: recovery ignores every copy of
 * {@code id} numbered {@code through} or lower, so the sequence does not come back (nor claim space
 * that was reused since). A sequence created again under the same id numbers its commits past
 * {@code through}, so its copies are never taken for the dead one's. Once every member device is
 * reachable at open, the buried copies are removed and the tombstones with them ({@link #collect}):
 * there are never more tombstones than ids deleted while the store was degraded.
 */
final class Tombstones {
    private static final Logger LOG = LoggerFactory.getLogger(Tombstones.class);
    static final String SUFFIX = ".kvot";
    private static final int FORMAT = 1;

    private final ManifestStore manifests;
    private final FileModes modes;
    /** Per deleted id, the newest commit number the deletion buried. */
    private final Map<String, Long> through = new TreeMap<>();
    /**
     * Per id with a manifest copy at open, the highest commit number decoded (buried or not): the
     * sequences a device away since then may hold a copy of. An id leaves when it is deleted, so
     * this never outgrows what the store held at open.
     */
    private final Map<String, Long> foundAtOpen = new HashMap<>();
    /** Tombstone files that could not be read (collected with the others). */
    private final List<Path> damaged = new ArrayList<>();

    Tombstones(ManifestStore manifests, FileModes modes) {
        this.manifests = manifests;
        this.modes = modes;
    }

    /** Reads the tombstones in every manifest directory that can be reached; a damaged one is logged and skipped. */
    void load() {
        for (Path d : manifests.readDirs()) {
            if (!Files.isDirectory(d, LinkOption.NOFOLLOW_LINKS)) {
                continue;
            }
            try (DirectoryStream<Path> ds = Files.newDirectoryStream(d, "*" + SUFFIX)) {
                for (Path p : ds) {
                    try {
                        Map<String, Object> m = CheckedJson.decode(AtomicFiles.readRegular(p), true);
                        long format = CheckedJson.number(m, "format", 1, Integer.MAX_VALUE);
                        if (format != FORMAT) {
                            throw new IOException("format " + format + " is not supported (this version reads "
                                    + FORMAT + ")");
                        }
                        String id = CheckedJson.string(m, "id");
                        if (!p.getFileName().toString().equals(id + SUFFIX)) {
                            throw new IOException("file name does not match sequence id " + id);
                        }
                        through.merge(id, CheckedJson.number(m, "through", 0, Long.MAX_VALUE), Math::max);
                    } catch (IOException | RuntimeException e) { // a hostile file may fail in any way
                        LOG.warn("ignoring deletion tombstone {}: {}", p, e.getMessage());
                        damaged.add(p);
                    }
                }
            } catch (IOException e) {
                LOG.error("cannot list deletion tombstones in {}: {}", d, e.toString());
            }
        }
        if (!through.isEmpty()) {
            LOG.info("{} deletion tombstone(s) found: {}", through.size(), through);
        }
    }

    /** Records, at open, that a copy of {@code id} numbered {@code commitNumber} exists. */
    void noteCopy(String id, long commitNumber) {
        foundAtOpen.merge(id, commitNumber, Math::max);
    }

    /**
     * Whether a device unreachable since this store opened may hold a copy of {@code id}'s manifest:
     * only a sequence that had copies at open can (a later one's copies went only where commits
     * could write), unless deleted since (its tombstone then covers those copies).
     */
    boolean mayBeHeldAway(String id) {
        return foundAtOpen.containsKey(id);
    }

    /** {@code id} is deleted durably: what it left on unreachable devices is covered (or there is none). */
    void deleted(String id) {
        foundAtOpen.remove(id);
    }

    /** Whether {@code m} is a commit of a sequence deleted after it (a stale copy to ignore). */
    boolean buries(Manifest m) {
        Long t = through.get(m.id());
        return t != null && m.commitNumber() <= t;
    }

    /**
     * The number a new sequence named {@code id} counts its commits from: past every commit of an
     * earlier sequence of that id that a tombstone buries or that had a copy when the store opened.
     */
    long numberingBase(String id) {
        return Math.max(through.getOrDefault(id, 0L), foundAtOpen.getOrDefault(id, 0L));
    }

    /**
     * Makes durable that {@code id} is deleted through commit {@code commitNumber}: in every
     * directory commits write to (a failure there throws, nothing is deleted yet), and in every
     * other directory that can be reached (best effort: more copies outlive more missing devices).
     */
    void bury(String id, long commitNumber) throws IOException {
        long n = Math.max(commitNumber, numberingBase(id));
        List<Path> written = writeEverywhere(id, n, through.get(id));
        Long before = through.put(id, n);
        LOG.info("sequence {} deleted through commit {} while a device is unreachable: tombstone kept in {}{}", id, n,
                written, before == null ? "" : " (replacing one through " + before + ")");
    }

    /**
     * Writes the tombstone {@code (id, n)} to every write directory (all or none: a failure puts
     * back what those written held, the {@code previous} tombstone of an earlier sequence of that id
     * or nothing, and throws) and then to every other reachable directory (best effort).
     */
    private List<Path> writeEverywhere(String id, long n, Long previous) throws IOException {
        byte[] bytes = encode(id, n);
        List<Path> written = new ArrayList<>();
        try {
            for (Path d : manifests.writeDirs()) {
                AtomicFiles.write(d.resolve(id + SUFFIX), bytes, modes);
                written.add(d);
            }
        } catch (IOException | RuntimeException e) {
            for (Path d : written) {
                try {
                    if (previous == null) {
                        AtomicFiles.delete(d.resolve(id + SUFFIX));
                    } else {
                        AtomicFiles.write(d.resolve(id + SUFFIX), encode(id, previous), modes);
                    }
                } catch (IOException undo) {
                    e.addSuppressed(undo);
                    LOG.warn("could not take back the deletion tombstone of {} in {}: {}", id, d, undo.toString());
                }
            }
            throw e;
        }
        for (Path d : manifests.readDirs()) {
            if (!written.contains(d) && Files.isDirectory(d, LinkOption.NOFOLLOW_LINKS)) {
                try {
                    AtomicFiles.write(d.resolve(id + SUFFIX), bytes, modes);
                } catch (IOException e) {
                    LOG.warn("could not write the deletion tombstone of {} in {} (it is in {}): {}", id, d,
                            written, e.toString());
                }
            }
        }
        return written;
    }

    private static byte[] encode(String id, long n) throws IOException {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("format", FORMAT);
        body.put("id", id);
        body.put("through", n);
        return CheckedJson.encode(body);
    }

    /**
     * Every member device is reachable: removes the copies each tombstone buries from every
     * directory, then the tombstones themselves (and damaged tombstone files). A failure leaves that
     * tombstone for the next open; the store opens either way.
     */
    void collect() {
        for (String id : List.copyOf(through.keySet())) {
            try {
                int removed = manifests.deleteThrough(id, through.get(id));
                for (Path d : manifests.readDirs()) {
                    AtomicFiles.delete(d.resolve(id + SUFFIX));
                }
                through.remove(id);
                LOG.info("every device has seen the deletion of {}: {} stale manifest copies and its tombstone removed",
                        id, removed);
            } catch (IOException e) {
                LOG.warn("could not collect the deletion tombstone of {} (kept for the next open): {}", id,
                        e.toString());
            }
        }
        for (Path p : damaged) {
            removeQuietly(p);
        }
        damaged.clear();
    }

    /** Whether any tombstone file (readable or damaged) waits to be collected. */
    boolean pending() {
        return !through.isEmpty() || !damaged.isEmpty();
    }

    private static void removeQuietly(Path p) {
        try {
            AtomicFiles.delete(p);
        } catch (IOException e) {
            LOG.warn("could not remove {}: {}", p, e.toString());
        }
    }
}
