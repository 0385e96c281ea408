package io.kvoffload.spi;

/**
 * Factory for a {@link RemoteTier}, found through {@link java.util.ServiceLoader} like
 * {@link IoBackendProvider} (kvoffload-redis provides {@code redis}). An engine whose configuration
 * names a remote tier but whose class path holds no provider, or whose provider cannot connect,
 * runs on its local tiers alone and says so ({@code KvStats.remote()}).
 */
public interface RemoteTierProvider {
    /** Short name, e.g. {@code "redis"}: what {@code remote.kind} in the configuration selects. */
    String name();

    /** Whether the provider can run here (its client library is present) and if not why; never throws. */
    Availability probe();

    /**
     * Connects. Throws (any runtime exception, with a message saying why) when the remote store
     * cannot be reached within the connect timeout; the engine then runs without it.
     */
    RemoteTier open(RemoteTierOptions options);
}
