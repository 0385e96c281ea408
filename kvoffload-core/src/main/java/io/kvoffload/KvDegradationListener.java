package io.kvoffload;

/**
 * Told about every {@link KvDegradation} ({@link KvEngine#addDegradationListener}): called on the
 * engine's listener thread (the one {@link KvEvictionListener}s run on), in the order they
 * happened; a new listener first hears those found when the engine opened. It may call back into
 * the engine; an exception it throws is logged and ignored.
 */
@FunctionalInterface
public interface KvDegradationListener {
    void degraded(KvDegradation degradation);
}
