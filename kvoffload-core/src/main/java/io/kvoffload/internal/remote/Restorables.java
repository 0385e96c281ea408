package io.kvoffload.internal.remote;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.internal.storage.AtomicFiles;
import io.kvoffload.internal.storage.FileModes;
import io.kvoffload.internal.storage.Manifest;
import io.kvoffload.internal.storage.ManifestStore;
import io.kvoffload.internal.storage.PrefixIndex;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sequences this engine published whole (every block, no partial tail) and may therefore drop
 * locally first and pull back under their id. Every commit, creation or deletion of an id forgets
 * it, stamped with a logical clock; the publisher notes the clock before it reads a sequence and
 * remembers it only if the id was not forgotten since, so a restore never returns an older state
 * than the last commit. At most {@link #MAX} sequences and {@link #MAX} stamps (when a stamp is
 * dropped, remembering anything the publisher read before it is refused: conservative, never stale).
 *
 * <p>Each remembered sequence is also a small checksummed file ({@code <id>.published}: shape, block
 * size, token count and the last hash of its chain) in a folder of the store, written when it is
 * remembered and deleted when it is forgotten, so a restart keeps what it may pull back. At open a
 * file whose sequence is still local is kept only if the local manifest still ends at that chain
 * (a crash between a commit and the deletion cannot resurrect an older state); a damaged file is
 * dropped: the sequence is then only found by prefix lookup.
 */
final class Restorables {
    private static final Logger LOG = LoggerFactory.getLogger(Restorables.class);
    static final int MAX = 65536;
    static final String SUFFIX = ".published";
    private static final int MAGIC = 0x4B56_5052; // "KVPR"
    private static final int VERSION = 1;
    private static final int RECORD_BYTES = 4 * 9 + 32 + 4;

    record Published(KvShape shape, int blockTokens, int tokenCount, byte[] lastChain) {}

    private final Path dir; // null: memory only
    private final FileModes mode;
    private long clock;
    private long droppedUpTo = Long.MIN_VALUE; // stamps up to this may have been dropped
    private final LinkedHashMap<String, Published> entries = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Published> eldest) {
            if (size() > MAX) {
                deleteFile(eldest.getKey());
                return true;
            }
            return false;
        }
    };
    private final LinkedHashMap<String, Long> forgotten = new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
            if (size() > MAX) {
                droppedUpTo = Math.max(droppedUpTo, eldest.getValue());
                return true;
            }
            return false;
        }
    };

    /** Memory only (the link is down: nothing is published). */
    Restorables() {
        this.dir = null;
        this.mode = FileModes.PRIVATE;
    }

    /**
     * Loads the records in {@code dir} (created if missing).
     *
     * @param local the committed local manifest of an id, or null when it is absent
     */
    Restorables(Path dir, FileModes mode, Function<String, Manifest> local) throws IOException {
        this.dir = dir;
        this.mode = mode;
        mode.createDirectory(dir);
        AtomicFiles.removeLeftovers(dir);
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "*" + SUFFIX)) {
            for (Path f : files) {
                String name = f.getFileName().toString();
                String id = name.substring(0, name.length() - SUFFIX.length());
                Published p = ManifestStore.ID.matcher(id).matches() ? decode(AtomicFiles.readRegular(f)) : null;
                Manifest m = p == null ? null : local.apply(id);
                if (p == null || (m != null && !endsAt(m, p))) {
                    LOG.warn("dropping {}: {}", f, p == null ? "damaged or not a record" : "the local sequence changed since");
                    Files.deleteIfExists(f);
                } else if (entries.size() < MAX) {
                    entries.put(id, p);
                }
            }
        }
    }

    /** Whether the local manifest is exactly what was published. */
    private static boolean endsAt(Manifest m, Published p) {
        if (!m.shape().equals(p.shape()) || m.blockTokens() != p.blockTokens() || m.tokenCount() != p.tokenCount()) {
            return false;
        }
        byte[][] chain = PrefixIndex.chainHashes(m.shape().fingerprint(), m.tokenIds(), m.tokenCount(), m.blockTokens());
        return chain.length > 0 && chain.length * p.blockTokens() == p.tokenCount()
                && Arrays.equals(chain[chain.length - 1], p.lastChain());
    }

    /** A commit, a new sequence or a delete of {@code id}: what was published of it is stale. */
    synchronized void forget(String id) {
        if (entries.remove(id) != null) {
            deleteFile(id);
        }
        forgotten.remove(id); // re-inserted last, so the map stays in stamp order
        forgotten.put(id, ++clock);
    }

    /** The clock, noted by the publisher before it reads a sequence. */
    synchronized long now() {
        return clock;
    }

    /** Remembers {@code id} as published whole, unless it was forgotten after {@code readAt}. */
    synchronized void remember(String id, long readAt, Published e) {
        if (readAt >= droppedUpTo && forgotten.getOrDefault(id, Long.MIN_VALUE) <= readAt) {
            put(id, e);
        }
    }

    /** Remembers {@code id} again after a pull-back that failed (it is still absent locally). */
    synchronized void reinstate(String id, Published e) {
        put(id, e);
    }

    private void put(String id, Published e) {
        if (dir != null) {
            try {
                AtomicFiles.write(dir.resolve(id + SUFFIX), encode(e), mode);
            } catch (IOException x) {
                // Without its file a restart would not know it: keep it out of memory too (never preferred
                // for eviction on a promise that does not survive).
                LOG.warn("recording that sequence {} was published failed; it is not dropped first: {}", id, x.toString());
                return;
            }
        }
        entries.put(id, e);
    }

    synchronized Published get(String id) {
        return entries.get(id);
    }

    /** Whether {@code id} was published whole as it is now (eviction drops such sequences first). */
    synchronized boolean contains(String id) {
        return entries.containsKey(id);
    }

    private void deleteFile(String id) {
        if (dir == null) {
            return;
        }
        try {
            AtomicFiles.delete(dir.resolve(id + SUFFIX));
        } catch (IOException x) {
            // A stale file of a local sequence is dropped at open (its manifest no longer matches).
            LOG.warn("deleting the publish record of sequence {} failed: {}", id, x.toString());
        }
    }

    static byte[] encode(Published p) {
        ByteBuffer b = ByteBuffer.allocate(RECORD_BYTES);
        KvShape s = p.shape();
        b.putInt(MAGIC).putInt(VERSION).putInt(s.layers()).putInt(s.queryHeads()).putInt(s.kvHeads())
                .putInt(s.headDim()).putInt(s.dtype().ordinal()).putInt(p.blockTokens()).putInt(p.tokenCount())
                .put(p.lastChain());
        CRC32C c = new CRC32C();
        c.update(b.array(), 0, RECORD_BYTES - 4);
        b.putInt((int) c.getValue());
        return b.array();
    }

    /** The record, or null if {@code bytes} is not a whole, valid one. */
    static Published decode(byte[] bytes) {
        if (bytes.length != RECORD_BYTES) {
            return null;
        }
        CRC32C c = new CRC32C();
        c.update(bytes, 0, RECORD_BYTES - 4);
        ByteBuffer b = ByteBuffer.wrap(bytes);
        if (b.getInt(RECORD_BYTES - 4) != (int) c.getValue() || b.getInt() != MAGIC || b.getInt() != VERSION) {
            return null;
        }
        try {
            int layers = b.getInt();
            int qh = b.getInt();
            int kvh = b.getInt();
            int hd = b.getInt();
            int dt = b.getInt();
            int bt = b.getInt();
            int tokens = b.getInt();
            byte[] chain = new byte[32];
            b.get(chain);
            if (dt < 0 || dt >= DType.values().length || bt <= 0 || tokens <= 0) {
                return null;
            }
            return new Published(new KvShape(layers, qh, kvh, hd, DType.values()[dt]), bt, tokens, chain);
        } catch (IllegalArgumentException e) {
            return null; // a shape the constructor refuses
        }
    }
}
