package io.kvoffload.internal.remote;

import io.kvoffload.KvEngine;
import io.kvoffload.KvException;
import io.kvoffload.KvShape;
import io.kvoffload.PrefixMatch;
import io.kvoffload.RemoteConfig;
import io.kvoffload.RemoteStatus;
import io.kvoffload.spi.Availability;
import io.kvoffload.spi.RemoteTier;
import io.kvoffload.spi.RemoteTierOptions;
import io.kvoffload.spi.RemoteTierProvider;
import io.kvoffload.internal.storage.FileModes;
import io.kvoffload.internal.storage.Manifest;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An engine's link to the shared remote tier: the tier found through {@link RemoteTierProvider},
 * the {@link RemotePublisher} and the {@link RemoteFetch}. When the tier cannot be reached at open
 * the link is down for the engine's life: the engine runs on its local tiers, logs why once, and
 * {@link #status()} says so.
 */
public final class RemoteLink implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RemoteLink.class);

    private final RemoteTier tier; // null when down
    private final String description;
    private final RemoteCounters counters = new RemoteCounters();
    private final Restorables restorables;
    private final RemotePublisher publisher;
    private final RemoteFetch fetch;
    private final Function<String, Manifest> local;

    private RemoteLink(KvEngine engine, RemoteConfig config, RemoteTier tier, String description,
            Restorables restorables, Function<String, Manifest> local) {
        this.tier = tier;
        this.description = description;
        this.restorables = restorables;
        this.local = local;
        long timeout = 3L * config.commandTimeoutMillis() + config.connectTimeoutMillis();
        RemoteKeys keys = new RemoteKeys(config.keyPrefix());
        this.publisher = tier == null ? null
                : new RemotePublisher(engine, tier, keys, counters, restorables, timeout, config.budgetBytes(),
                        config.publishQueue());
        this.fetch = tier == null ? null : new RemoteFetch(engine, tier, keys, counters, timeout);
    }

    /**
     * Connects to the tier {@code config} names. A configuration error (a credential variable that
     * is not set, no provider of that kind) throws; a tier that cannot be reached does not.
     *
     * @param env the environment credentials are read from
     * @param published where the sequences this engine published whole are recorded (see {@link Restorables})
     * @param local the committed local manifest of an id, or null when there is none
     * @throws IOException if the records in {@code published} cannot be listed or read
     */
    public static RemoteLink open(KvEngine engine, RemoteConfig config, Function<String, String> env, Path published,
            FileModes mode, Function<String, Manifest> local) throws IOException {
        RemoteTierOptions options = config.resolve(env);
        // Loaded even when the tier is down: forgetting a deleted or recommitted id must delete its record.
        Restorables restorables = new Restorables(published, mode, local);
        List<String> kinds = new ArrayList<>();
        for (RemoteTierProvider p : ServiceLoader.load(RemoteTierProvider.class)) {
            kinds.add(p.name());
            if (!p.name().equals(config.kind())) {
                continue;
            }
            Availability a = p.probe();
            if (!a.available()) {
                return down(engine, config, p.name() + " is not available here: " + a.reason(), restorables, local);
            }
            try {
                RemoteTier t = p.open(options);
                LOG.info("remote tier {}", t.describe());
                return new RemoteLink(engine, config, t, t.describe(), restorables, local);
            } catch (RuntimeException e) {
                return down(engine, config, "cannot reach " + config.seeds() + ": " + e.getMessage(), restorables, local);
            }
        }
        throw new IllegalArgumentException("remote.kind = '" + config.kind() + "' has no provider on the class path;"
                + " allowed: one of " + kinds + (kinds.isEmpty() ? " (add kvoffload-redis)" : ""));
    }

    private static RemoteLink down(KvEngine engine, RemoteConfig config, String why, Restorables restorables,
            Function<String, Manifest> local) {
        LOG.warn("remote tier unavailable, running on local tiers only: {}", why);
        return new RemoteLink(engine, config, null, why, restorables, local);
    }

    public boolean connected() {
        return tier != null;
    }

    /** Queues a committed sequence for publishing; never blocks. What was published of it before is stale. */
    public void committed(String id) {
        restorables.forget(id);
        if (publisher != null) {
            publisher.offer(id);
        }
    }

    /** {@code id} was deleted or is being created anew: never pull an older sequence back under it. */
    public void forget(String id) {
        restorables.forget(id);
    }

    /**
     * Pulls back {@code id}, absent locally, if this engine published all of it before it was evicted
     * and every block is still in the tier and verifies; otherwise does nothing.
     */
    public void restore(String id) {
        Restorables.Published e = restorables.get(id);
        if (e == null || fetch == null) {
            return;
        }
        if (fetch.restore(id, e.shape(), e.blockTokens(), e.lastChain())) {
            LOG.info("sequence {} pulled back from the remote tier", id);
        } else if (local.apply(id) == null) {
            restorables.reinstate(id, e); // creating it forgot it; a later open may find the tier back
        }
    }

    /**
     * Whether local eviction should drop {@code id} before sequences that are not published: it was
     * published whole as it is now, and the tier is connected to pull it back. Called under the store lock.
     */
    public boolean evictFirst(String id) {
        return tier != null && restorables.contains(id);
    }

    /** See {@link RemoteFetch#block}; null when the link is down. */
    public java.lang.foreign.MemorySegment block(Manifest m, int layer, int block) {
        return fetch == null ? null : fetch.block(m, layer, block);
    }

    /** See {@link RemoteFetch#pull}; empty when the link is down. */
    public Optional<PrefixMatch> pull(KvShape shape, int blockTokens, int[] prompt, int localMatched, String localId) {
        return fetch == null ? Optional.empty() : fetch.pull(shape, blockTokens, prompt, localMatched, localId);
    }

    /** Waits until every queued sequence is published (or failed); false if {@code millis} passed first. */
    public boolean awaitPublished(long millis) throws InterruptedException {
        return publisher == null || publisher.awaitIdle(millis);
    }

    public RemoteStatus status() {
        RemoteCounters c = counters;
        return new RemoteStatus(true, tier != null, description, c.blocksPublished.sum(), c.blocksAlreadyPresent.sum(),
                c.bytesPublished.sum(), c.publishFailures.sum(), c.publishesDropped.sum(), c.blocksFetched.sum(),
                c.bytesFetched.sum(), c.fetchFailures.sum(), c.checksumFailures.sum());
    }

    /** Completes {@code f} within {@code millis}, unwrapping the tier's failure into a {@link KvException}. */
    static <T> T await(CompletableFuture<T> f, long millis) {
        try {
            return f.get(millis, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            Throwable c = e.getCause() != null ? e.getCause() : e;
            throw new KvException("remote tier request failed: " + c, c);
        } catch (TimeoutException e) {
            f.cancel(true);
            throw new KvException("remote tier request took more than " + millis + " ms", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new KvException("interrupted while waiting for the remote tier", e);
        }
    }

    @Override
    public void close() {
        try {
            if (publisher != null) {
                publisher.close();
            }
        } finally {
            if (tier != null) {
                tier.close();
            }
        }
    }
}
