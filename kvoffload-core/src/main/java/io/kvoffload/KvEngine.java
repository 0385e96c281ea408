package io.kvoffload;

import io.kvoffload.internal.obs.EngineMXBean;
import io.kvoffload.internal.remote.RemoteLink;
import io.kvoffload.internal.sequence.ExtentLedger;
import io.kvoffload.internal.sequence.SequenceFork;
import io.kvoffload.internal.storage.DevicePool;
import io.kvoffload.internal.storage.Manifest;
import io.kvoffload.internal.storage.ManifestStore;
import io.kvoffload.internal.storage.Quarantine;
import io.kvoffload.internal.storage.SequenceCatalog;
import io.kvoffload.internal.storage.Store;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.spi.DeviceTier;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The entry point: opens the SSD pools, the I/O backend and the DRAM tier, and hands out
 * {@link KvSequence}s. Committed sequences persist across process restarts; opening an engine on
 * the same directories finds them again.
 *
 * <pre>{@code
 * try (KvEngine engine = KvEngine.open(KvConfig.builder().ssdDirectories(ssd0, ssd1).build());
 *      KvSequence seq = engine.createSequence(KvShape.llama3_8b())) {
 *     seq.appendTokens(promptIds);
 *     for (int l = 0; l < 32; l++) seq.appendKv(l, keys[l], values[l]);
 *     seq.commit();
 * }
 * }</pre>
 *
 * <p>Thread-safe: different threads may create, open and use different sequences concurrently.
 */
public final class KvEngine implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(KvEngine.class);

    private final Store store;
    private final Map<KvSequence, Boolean> open = new IdentityHashMap<>();
    /** This engine's {@link KvEngineMXBean}, registered while it is open. */
    private final EngineMXBean mxBean;
    private volatile boolean closed;
    private final RemoteLink remote; // null when no remote tier is configured

    private KvEngine(Store store) {
        this.store = store;
        RemoteConfig rc = store.config().remote();
        try {
            // The link's threads call back into this engine only once a sequence is committed.
            this.remote = rc == null ? null : RemoteLink.open(this, rc, System::getenv,
                    store.metadataHome().resolve(PUBLISHED_DIR), store.modes(), store::committedManifest);
        } catch (IOException e) {
            store.close();
            throw KvIoException.of("reading the remote tier's records in " + store.metadataHome().resolve(PUBLISHED_DIR)
                    + " failed", e);
        } catch (RuntimeException | Error e) {
            store.close();
            throw e;
        }
        if (remote != null) {
            store.evictFirst(remote::evictFirst); // published whole: can be pulled back, so dropped first
            store.remoteCopy(remote::block); // the last resort of a read no local copy of which verifies
        }
        this.mxBean = EngineMXBean.register(store.storeUuid(), this::stats, () -> {
            synchronized (store) {
                return store.catalog().all().size();
            }
        });
    }

    /** Folder (in the metadata directory, else the first SSD directory) of the sequences published whole. */
    static final String PUBLISHED_DIR = "remote-published";


    /**
     * Opens (creating on first use) the pools in the configured SSD directories and finds the
     * sequences committed there before.
     *
     * <p>With a {@link KvConfig#remote() remote tier} configured, an unreachable tier does not fail
     * the open: the engine runs on its local tiers, logs why, and {@link KvStats#remote()} says so.
     * A remote configuration that names an unset credential variable or a kind with no provider throws
     * {@link IllegalArgumentException}.
     *
     * @throws IllegalArgumentException if a directory is missing or not writable, or the
     *     configuration contradicts what is on disk
     * @throws KvException if the configured I/O backend is unavailable (the message says why)
     * @throws KvStoreLockedException if another engine holds one of the directories
     * @throws KvIoException if reading or creating the store's files (lock, pool, device and manifest
     *     files) fails; nothing stays open
     */
    public static KvEngine open(KvConfig config) {
        Checks.notNull("config", config);
        try {
            return new KvEngine(new Store(config));
        } catch (IOException e) {
            throw KvIoException.of("opening the store in " + config.ssdDirectories() + " failed", e);
        }
    }

    public KvConfig config() {
        return store.config();
    }

    /** Name of the I/O backend in use ({@code portable}, {@code io_uring}, …). */
    public String ioBackend() {
        return store.backend().name();
    }

    /**
     * The GPU (HBM) tier, when the configuration allows one and a provider (kvoffload-cuda) found a
     * working GPU; empty otherwise. Reach the provider's API with {@link DeviceTier#unwrap}.
     */
    public Optional<DeviceTier> deviceTier() {
        return Optional.ofNullable(store.deviceTier());
    }

    /** A new, empty, writable sequence with a generated id. */
    public KvSequence createSequence(KvShape shape) {
        return createSequence(UUID.randomUUID().toString(), shape);
    }

    /**
     * A new, empty, writable sequence.
     *
     * @param id 1..128 characters of {@code [A-Za-z0-9._-]}, not used by another sequence
     */
    public KvSequence createSequence(String id, KvShape shape) {
        checkOpen();
        checkNewId("id", id);
        Checks.notNull("shape", shape);
        long extent = (long) store.config().blockTokens() * shape.entryBytes();
        long max = KvSequence.maxExtentBytes(store);
        if (extent > max) {
            throw new IllegalArgumentException("blockTokens " + store.config().blockTokens() + " × entry "
                    + shape.entryBytes() + " bytes = " + extent + " bytes per block exceeds " + max
                    + " (a quarter of dramBudgetBytes, at most 1 GiB); lower blockTokens or raise dramBudgetBytes");
        }
        synchronized (store) {
            if (store.catalog().contains(id)) {
                throw new IllegalArgumentException("id = '" + id + "' is already used by another sequence");
            }
            store.catalog().reserve(id);
        }
        if (remote != null) {
            remote.forget(id); // a new sequence of that id supersedes an evicted one's remote copy
        }
        return register(new KvSequence(this, store, id, shape));
    }

    private static void checkNewId(String name, String id) {
        Checks.notNull(name, id);
        if (!ManifestStore.ID.matcher(id).matches()) {
            throw new IllegalArgumentException(name + " = '" + id + "' is not allowed; allowed: 1..128 characters of"
                    + " letters, digits, '.', '_' and '-'");
        }
    }

    /**
     * A new sequence {@code newId} that starts as the first {@code prefixTokens} tokens of committed
     * sequence {@code sourceId} (its token ids and every layer's KV), without copying them: the
     * prefix's blocks are shared with the source, reference counted, the way vLLM and SGLang share
     * a prompt prefix between requests. Typical use: {@link #findLongestPrefix} matched part of a
     * prompt; fork the match at {@link PrefixMatch#matchedTokens()}, append the rest of the prompt
     * and decode.
     *
     * <p>The fork is an ordinary new sequence: writable, uncommitted (closing it without {@link
     * KvSequence#commit} discards it), with the source's shape and block size. It reads back exactly
     * what the source held for those tokens, and whatever is appended after them. A block the fork
     * appends to (a partial last block) gets an extent of its own first (copy-on-write); the shared
     * extents stay until the last sequence naming them is deleted or evicted, so deleting the source
     * leaves the fork intact and the space returns when the fork goes too. Tokens the source keeps only
     * in a strategy layout (it was laid out with {@code layOut}) have no block to share: they are read
     * back, verified, and written as the fork's own blocks. The fork has no layout of its own: lay it
     * out as any sequence before decoding selectively. A fork shares the source's last commit; a source
     * open for append meanwhile is not disturbed.
     *
     * @param sourceId a committed sequence (not quarantined, not on an unavailable device; with a
     *     remote tier, one this engine evicted after publishing it whole is pulled back first, as
     *     {@link #openSequence(String)} does)
     * @param newId the fork's id: 1..128 characters of {@code [A-Za-z0-9._-]}, not used by another sequence
     * @param prefixTokens how many leading tokens to take: 1..the source's committed token count
     * @return the fork's handle, writable and uncommitted
     * @throws IllegalArgumentException naming the argument, its value and what is allowed
     * @throws KvChecksumException if copying laid-out tokens read back a record that does not verify
     *     (the fork is then discarded; the source is untouched)
     */
    public KvSequence fork(String sourceId, String newId, int prefixTokens) {
        checkOpen();
        Checks.notNull("sourceId", sourceId);
        checkNewId("newId", newId);
        restoreIfEvicted(sourceId);
        Manifest source;
        KvSequence fork;
        List<long[]> pinned = new ArrayList<>();
        synchronized (store) {
            SequenceCatalog.Entry e = committedEntry("sourceId", sourceId);
            source = e.manifest();
            if (prefixTokens < 1 || prefixTokens > source.tokenCount()) {
                throw new IllegalArgumentException("prefixTokens = " + prefixTokens + " is out of range; allowed: 1.."
                        + source.tokenCount() + " (the tokens sequence '" + sourceId + "' has committed)");
            }
            if (store.catalog().contains(newId)) {
                throw new IllegalArgumentException("newId = '" + newId + "' is already used by another sequence");
            }
            ExtentLedger ledger = SequenceFork.ledger(store, source, prefixTokens);
            if (SequenceFork.needsCopy(ledger)) {
                // Laid-out tokens are read back off this lock: hold every source extent till then.
                source.forEachExtent((d, off, len) -> {
                    store.share(d, off);
                    pinned.add(new long[] {d, off, len});
                });
            }
            store.catalog().reserve(newId);
            store.catalog().touch(e);
            fork = new KvSequence(this, store, newId, source, prefixTokens, ledger);
        }
        if (remote != null) {
            remote.forget(newId); // a new sequence of that id supersedes an evicted one's remote copy
        }
        try {
            register(fork); // closes the fork itself if the engine closed meanwhile
            if (!pinned.isEmpty()) {
                try {
                    fork.copyLaidOut(source);
                } catch (RuntimeException | Error x) {
                    fork.close(); // lets its shared and copied extents go
                    throw x;
                }
            }
        } finally {
            for (long[] p : pinned) {
                store.free((int) p[0], p[1], p[2]);
            }
        }
        return fork;
    }

    /**
     * {@link #fork(String, String, int)} for a model of {@code expectedShape}: refuses a source stored
     * by another model, as {@link #openSequence(String, KvShape)} does.
     */
    public KvSequence fork(String sourceId, String newId, int prefixTokens, KvShape expectedShape) {
        Checks.notNull("expectedShape", expectedShape);
        checkOpen();
        Checks.notNull("sourceId", sourceId);
        Manifest m = store.committedManifest(sourceId);
        if (m != null && !expectedShape.equals(m.shape())) {
            throw new IllegalArgumentException("expectedShape = " + expectedShape + " does not match sequence '"
                    + sourceId + "', stored with " + m.shape() + "; allowed: the shape it was stored with");
        }
        return expecting(fork(sourceId, newId, prefixTokens), expectedShape);
    }

    /**
     * The catalog entry of committed sequence {@code id}, servable now; called under the store's lock.
     *
     * @throws KvException if it is quarantined
     * @throws KvDeviceUnavailableException if it has data on an unavailable device
     * @throws IllegalArgumentException if there is none (argument {@code name})
     */
    private SequenceCatalog.Entry committedEntry(String name, String id) {
        SequenceCatalog.Entry e = store.catalog().get(id);
        if (e == null) {
            for (Quarantine.Reason q : store.quarantined()) {
                if (id.equals(q.id())) {
                    throw new KvException("sequence " + id + " is quarantined: no copy of its manifest could be"
                            + " used (" + q.reason() + "); restore a copy and reopen the engine, or give its space up"
                            + " with releaseQuarantine()");
                }
            }
            throw new IllegalArgumentException(name + " = '" + id + "' names no committed sequence"
                    + (store.catalog().contains(id) ? " (it is being written and not yet committed)" : "")
                    + "; see KvEngine.sequences()");
        }
        if (e.unavailable() != null) {
            throw new KvDeviceUnavailableException(null, e.unavailable());
        }
        return e;
    }

    /**
     * Opens a committed sequence for reading. Any number of readers may hold it. With a remote tier,
     * a sequence this engine evicted after publishing all of it (whole blocks, no partial tail) is
     * pulled back from the tier first, if every block is still there and verifies.
     */
    public KvSequence openSequence(String id) {
        return openCommitted(id, false);
    }

    /**
     * Opens a committed sequence to extend it (decode tokens) and commit again. No other handle
     * may hold it meanwhile.
     */
    public KvSequence openSequenceForAppend(String id) {
        return openCommitted(id, true);
    }

    /**
     * {@link #openSequence(String)} for a model of {@code expectedShape}: refuses a sequence stored
     * by another model (layers, heads, head dim or dtype differ) instead of handing its KV to the
     * wrong attention.
     *
     * @throws IllegalArgumentException if the sequence's shape is not {@code expectedShape} (both are named)
     */
    public KvSequence openSequence(String id, KvShape expectedShape) {
        Checks.notNull("expectedShape", expectedShape);
        return expecting(openCommitted(id, false), expectedShape);
    }

    /** {@link #openSequenceForAppend(String)} refusing a shape other than {@code expectedShape}, as {@link #openSequence(String, KvShape)}. */
    public KvSequence openSequenceForAppend(String id, KvShape expectedShape) {
        Checks.notNull("expectedShape", expectedShape);
        return expecting(openCommitted(id, true), expectedShape);
    }

    private static KvSequence expecting(KvSequence s, KvShape expectedShape) {
        if (!expectedShape.equals(s.shape())) {
            s.close();
            throw new IllegalArgumentException("expectedShape = " + expectedShape + " does not match sequence '" + s.id()
                    + "', stored with " + s.shape() + "; allowed: the shape it was stored with (open it with that"
                    + " model, or look up prefixes with findLongestPrefix, which matches on the shape)");
        }
        return s;
    }

    /** With a remote tier, pulls back sequence {@code id} if this engine evicted it after publishing it whole. */
    private void restoreIfEvicted(String id) {
        if (remote != null) {
            boolean absent;
            synchronized (store) {
                absent = !store.catalog().contains(id);
            }
            if (absent) {
                remote.restore(id); // evicted after it was published whole: pulled back under its id
            }
        }
    }

    private KvSequence openCommitted(String id, boolean writable) {
        checkOpen();
        Checks.notNull("id", id);
        restoreIfEvicted(id);
        Manifest m;
        synchronized (store) {
            SequenceCatalog.Entry e = committedEntry("id", id);
            // Checked and recorded in the entry under the store lock: two openers cannot both pass.
            store.catalog().acquire(e, writable);
            m = e.manifest();
        }
        return register(new KvSequence(this, store, m, writable));
    }

    private KvSequence register(KvSequence s) {
        synchronized (open) {
            if (!closed) {
                open.put(s, Boolean.TRUE);
                return s;
            }
        }
        // close() began after this handle was granted: it would never see it, so give it back.
        s.close();
        throw new IllegalStateException("engine is closed");
    }

    /** Called by a closing handle. */
    void released(KvSequence s, boolean committed) {
        synchronized (open) {
            open.remove(s);
        }
        synchronized (store) {
            SequenceCatalog.Entry e = store.catalog().get(s.id());
            if (committed && e != null) {
                store.catalog().release(e, s.isWritable());
            } else if (!committed) {
                store.catalog().unreserve(s.id());
            }
        }
        if (committed && s.isWritable()) {
            committed(s); // its commits could not be read while the writer held it
        }
    }

    /** Called after a successful commit: queues the sequence for the remote tier; never blocks. */
    void committed(KvSequence s) {
        if (remote != null && !closed) {
            remote.committed(s.id());
        }
    }

    /**
     * Waits until every committed sequence queued for the remote tier is published (or its
     * publishing failed, see {@link RemoteStatus#publishFailures()}); returns at once without one.
     *
     * @return false if {@code timeout} passed first
     */
    public boolean awaitRemotePublished(Duration timeout) throws InterruptedException {
        Checks.notNull("timeout", timeout);
        return remote == null || remote.awaitPublished(timeout.toMillis());
    }

    /**
     * The committed sequence sharing the longest prefix with {@code promptTokens} under the same
     * model fingerprint (shape, dtype, layout version), matched on whole blocks by a hash chain and
     * then token by token. Empty if none shares even the first block.
     *
     * <p>With a remote tier, a remote prefix of more whole blocks than the local match is pulled into
     * a new local sequence (every blob's checksum verified; the prefix ends at the first block that is
     * missing or fails verification) and that sequence is returned. A failing tier costs the lookup
     * its remote part only.
     */
    public Optional<PrefixMatch> findLongestPrefix(KvShape shape, int[] promptTokens) {
        checkOpen();
        Checks.notNull("shape", shape);
        Checks.notNull("promptTokens", promptTokens);
        PrefixMatch best = null;
        synchronized (store) {
            for (String id : store.catalog().prefixCandidates(shape.fingerprint(), promptTokens)) {
                SequenceCatalog.Entry e = store.catalog().get(id);
                if (e == null || e.unavailable() != null) {
                    continue;
                }
                int[] cached = e.manifest().tokenIds();
                int n = 0;
                int max = Math.min(cached.length, promptTokens.length);
                while (n < max && cached[n] == promptTokens[n]) {
                    n++;
                }
                if (n > 0 && (best == null || n > best.matchedTokens())) {
                    best = new PrefixMatch(id, n, cached.length);
                }
            }
        }
        if (remote != null) {
            Optional<PrefixMatch> pulled = remote.pull(shape, store.config().blockTokens(), promptTokens,
                    best == null ? 0 : best.matchedTokens(), best == null ? null : best.sequenceId());
            if (pulled.isPresent()) {
                return pulled;
            }
        }
        return Optional.ofNullable(best);
    }

    /**
     * Deletes a committed sequence that no handle holds; returns false if there is none.
     *
     * @throws IllegalStateException if a handle holds it
     * @throws KvIoException if a copy of its manifest could not be deleted: it stays listed and its
     *     space stays allocated; deleting it again retries
     */
    public boolean deleteSequence(String id) {
        checkOpen();
        Checks.notNull("id", id);
        if (remote != null) {
            remote.forget(id); // deleted means gone: never pulled back
        }
        try {
            return store.delete(id);
        } catch (IOException e) {
            throw KvIoException.of("deleting sequence " + id + " failed; it stays listed and keeps its space", e);
        }
    }

    /** The committed sequences, least recently committed first. */
    public List<SequenceInfo> sequences() {
        checkOpen();
        List<SequenceInfo> out = new ArrayList<>();
        synchronized (store) {
            for (SequenceCatalog.Entry e : store.catalog().all()) {
                Manifest m = e.manifest();
                out.add(new SequenceInfo(m.id(), m.shape(), m.tokenCount(), m.storedBytes(), m.commitNumber(),
                        m.commitMillis(), e.refs()));
            }
        }
        out.sort(Comparator.comparingLong(SequenceInfo::commitMillis).thenComparing(SequenceInfo::id));
        return out;
    }

    /** Counters: bytes per device, checksum results, evictions, DRAM use. */
    public KvStats stats() {
        List<KvStats.Device> devs = new ArrayList<>();
        for (DevicePool d : store.devices()) {
            int i = d.index();
            long free;
            synchronized (store) {
                free = d.allocator().freeBytes();
            }
            devs.add(new KvStats.Device(i, d.directory(), d.sizeBytes(), free, store.backend().directIo(i),
                    store.stats().bytesWritten[i].sum(), store.stats().bytesRead[i].sum(),
                    store.stats().writes[i].sum(), store.stats().reads[i].sum(), d.full()));
        }
        List<KvStats.UnavailableDevice> out = store.unavailableDevices().stream()
                .map(u -> new KvStats.UnavailableDevice(u.uuid(), u.directory(), u.reason())).toList();
        List<String> unavailableIds = new ArrayList<>();
        synchronized (store) {
            for (SequenceCatalog.Entry e : store.catalog().all()) {
                if (e.unavailable() != null) {
                    unavailableIds.add(e.manifest().id());
                }
            }
        }
        unavailableIds.sort(null);
        List<String> quarantine = store.quarantined().stream()
                .map(q -> (q.id() != null ? "sequence " + q.id() + ": " : "") + q.reason()).toList();
        return new KvStats(store.backend().name(), List.copyOf(devs), store.stats().checksumsVerified.sum(),
                store.stats().checksumFailures.sum(), store.stats().evictions.sum(), store.dram().budgetBytes(),
                store.dram().reservedBytes(), store.dram().inUseBytes() + store.elastic().usedBytes(), out,
                List.copyOf(unavailableIds), quarantine,
                store.quarantinedBytes(), store.stats().failovers.sum(), store.stats().repairs.sum(),
                store.stats().rereads.sum(), store.stats().remoteFailovers.sum(),
                java.util.Collections.unmodifiableMap(store.injectedFaults()),
                remote == null ? RemoteStatus.none() : remote.status());
    }

    /**
     * Caps the elastic pool that decoders' caches (hot caches, reuse buffers: see
     * {@link KvDecoder#setCacheBytes}) grow into. Caches and windows take block-major units from that
     * pool, whose chunks count against {@link KvConfig#dramBudgetBytes()} like every other DRAM; this
     * cap, initially that budget, bounds the chunks a cache may add, so an engine keeps DRAM for
     * views and staging while it moves cache budget between decoders. Windows are not bounded by it
     * (they hold what attention always reads).
     *
     * @param bytes 0 or more, and at least the chunks the pool holds now
     * @throws IllegalArgumentException when {@code bytes} is below the chunks held now: the engine never
     *     takes units from a live decoder; shrink decoders' caches first ({@link KvDecoder#setCacheBytes})
     */
    public void setElasticDramBytes(long bytes) {
        checkOpen();
        store.elastic().setBudget(bytes);
    }

    /** The cap set by {@link #setElasticDramBytes} (initially {@link KvConfig#dramBudgetBytes()}). */
    public long elasticDramBytes() {
        return store.elastic().budgetBytes();
    }

    /** Bytes of chunks the elastic pool holds now (part of {@link KvStats#dramReservedBytes()}). */
    public long elasticDramReservedBytes() {
        return store.elastic().reservedBytes();
    }

    /**
     * Adds a listener told about every committed sequence evicted to make room, after the eviction
     * is durable, on a dedicated thread (see {@link KvEvictionListener}). {@link KvStats#evictions()}
     * counts them too.
     */
    public void addEvictionListener(KvEvictionListener listener) {
        checkOpen();
        Checks.notNull("listener", listener);
        store.addEvictionListener(listener::evicted);
    }

    /**
     * Adds a listener told about every {@link KvDegradation} — a layer attended in full from DRAM
     * because it was never laid out, a manifest ignored or quarantined at open, a device unavailable
     * or failed — on the listener thread, in order; it first hears those found when this engine
     * opened. They are logged (WARN/ERROR) and emitted as JFR events whether or not a listener is added.
     */
    public void addDegradationListener(KvDegradationListener listener) {
        checkOpen();
        Checks.notNull("listener", listener);
        store.degradations().add(listener);
    }

    /** The name under which this engine's {@link KvEngineMXBean} is registered on the platform MBean server. */
    public javax.management.ObjectName mxBeanName() {
        return mxBean.name();
    }

    /**
     * Gives back space quarantined at open ({@link KvStats#quarantine()}): the manifest copies that
     * could not be used move to a {@code quarantine} folder beside them and are never loaded again,
     * and the space they might have referenced becomes free. This is the only way quarantined space is
     * reused; call it once the unreadable sequences are known to be lost (or after restoring their
     * manifests, reopen instead). Returns the bytes freed.
     *
     * @throws KvIoException if a manifest copy could not be moved aside: no space was freed
     */
    public long releaseQuarantine() {
        checkOpen();
        try {
            return store.releaseQuarantine();
        } catch (IOException e) {
            throw KvIoException.of("releasing the quarantine failed; no space was freed", e);
        }
    }

    void checkOpen() {
        if (closed) {
            throw new IllegalStateException("engine is closed");
        }
    }

    boolean isClosed() {
        return closed;
    }

    /**
     * Closes every handle still open (discarding uncommitted appends), drains I/O, and frees the
     * DRAM tier. Committed sequences stay on the SSDs. May be called from any thread: a handle in
     * use by another thread is closed once its current call returns (fetches in flight finish
     * first), and that thread's next call fails with an {@link IllegalStateException} saying the
     * engine was closed.
     */
    @Override
    public void close() {
        List<KvSequence> handles;
        synchronized (open) {
            if (closed) {
                return;
            }
            // Set under the lock register() takes: no handle can be granted after the snapshot.
            closed = true;
            handles = new ArrayList<>(open.keySet());
        }
        if (remote != null) {
            try {
                remote.close(); // the publisher may hold a handle: stop it before closing handles
            } catch (RuntimeException e) {
                LOG.warn("closing the remote tier failed", e);
            }
        }
        for (KvSequence s : handles) {
            try {
                s.close();
            } catch (RuntimeException e) {
                LOG.warn("closing {} failed", s, e);
            }
        }
        mxBean.close();
        store.close();
    }
}
