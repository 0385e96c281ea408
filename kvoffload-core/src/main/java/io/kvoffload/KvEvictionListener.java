package io.kvoffload;

/**
 * Told about every committed sequence the engine evicts to make room ({@link KvEngine#addEvictionListener}).
 * Eviction takes the least recently used sequence no handle holds, when a device is full; the
 * sequence's KV is gone afterwards, so an engine that relies on it (a prompt cache index, say)
 * learns here to forget it. Called on a dedicated thread, in eviction order, after the eviction is
 * durable; it may call back into the engine.
 */
@FunctionalInterface
public interface KvEvictionListener {
    /** {@code sequence} was evicted; {@link SequenceInfo#openHandles()} is 0. */
    void evicted(SequenceInfo sequence);
}
