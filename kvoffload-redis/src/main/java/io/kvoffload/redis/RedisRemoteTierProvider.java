package io.kvoffload.redis;

import io.kvoffload.internal.redis.LettuceClusterTier;
import io.kvoffload.spi.Availability;
import io.kvoffload.spi.RemoteTier;
import io.kvoffload.spi.RemoteTierOptions;
import io.kvoffload.spi.RemoteTierProvider;

/**
 * The {@code redis} remote tier: a Redis Cluster (or Valkey cluster) through Lettuce's cluster
 * client. Found through {@link java.util.ServiceLoader}; an engine selects it with
 * {@code remote.kind = "redis"} (the default).
 */
public final class RedisRemoteTierProvider implements RemoteTierProvider {
    @Override
    public String name() {
        return "redis";
    }

    @Override
    public Availability probe() {
        return Availability.yes("Lettuce " + LettuceClusterTier.clientVersion());
    }

    @Override
    public RemoteTier open(RemoteTierOptions options) {
        return LettuceClusterTier.connect(options);
    }
}
