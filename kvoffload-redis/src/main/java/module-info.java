/**
 * The shared remote tier on Redis Cluster (or Valkey) through Lettuce's cluster client. Adding this
 * module (or jar) lets an engine whose configuration has a {@code remote} section publish and pull
 * prefix blocks; it is found through {@link io.kvoffload.spi.RemoteTierProvider}.
 */
module io.kvoffload.redis {
    requires transitive io.kvoffload.core;
    requires org.slf4j;
    requires lettuce.core;

    exports io.kvoffload.redis;

    provides io.kvoffload.spi.RemoteTierProvider with io.kvoffload.redis.RedisRemoteTierProvider;
}
