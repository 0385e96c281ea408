package io.kvoffload.spi;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A remote store shared by several engines (a Redis Cluster, a Valkey cluster, ...): a flat map
 * from string keys to immutable byte blobs. Every call takes a batch and returns at once; the
 * future completes when the whole batch has, or exceptionally with the first failure (a batch may
 * then be partly applied: callers publish a block's data before the record that makes it visible,
 * so a partial batch is never seen by readers).
 *
 * <p>Blobs are opaque here: the engine frames each with its length and a CRC32C over key and
 * payload before {@link #put} and verifies it after {@link #get}, so a backend needs no checksums of
 * its own. Implementations are thread-safe.
 */
public interface RemoteTier extends AutoCloseable {
    /** What the tier is connected to, for logs (never credentials). */
    String describe();

    /** Per key, whether it is present now. */
    CompletableFuture<boolean[]> exists(List<String> keys);

    /**
     * Stores each blob under its key only if the key is absent (blobs are immutable: a present key
     * keeps its value), with the configured time to live. Per key: true if this call stored it,
     * false if it was present.
     *
     * @param keys keys, as many as {@code blobs}
     */
    CompletableFuture<boolean[]> put(List<String> keys, List<byte[]> blobs);

    /** Per key, its blob, or null where the key is absent (never stored, expired or evicted). */
    CompletableFuture<byte[][]> get(List<String> keys);

    /** Deletes the keys that are present; completes with how many were. */
    CompletableFuture<Long> delete(List<String> keys);

    /** Releases connections and threads; calls after it fail. */
    @Override
    void close();
}
