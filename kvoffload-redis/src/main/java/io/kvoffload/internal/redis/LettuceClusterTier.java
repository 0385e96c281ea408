package io.kvoffload.internal.redis;

import io.kvoffload.spi.RemoteTier;
import io.kvoffload.spi.RemoteTierOptions;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SetArgs;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisAdvancedClusterAsyncCommands;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.codec.RedisCodec;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * {@link RemoteTier} on a Redis Cluster: one Lettuce cluster connection (slot routing to the
 * masters, pipelined over one socket per node, topology refreshed when the cluster moves slots or
 * a node fails). Every request of a batch is issued at once and the batch completes when all have.
 * Blobs are stored with {@code SET NX} (and {@code EX ttl}), so a present blob is never replaced.
 */
public final class LettuceClusterTier implements RemoteTier {
    private final ClientResources resources;
    private final RedisClusterClient client;
    private final StatefulRedisClusterConnection<String, byte[]> connection;
    private final RedisAdvancedClusterAsyncCommands<String, byte[]> commands;
    private final SetArgs setArgs;
    private final String description;

    private LettuceClusterTier(ClientResources resources, RedisClusterClient client,
            StatefulRedisClusterConnection<String, byte[]> connection, RemoteTierOptions options) {
        this.resources = resources;
        this.client = client;
        this.connection = connection;
        this.commands = connection.async();
        this.setArgs = options.ttl().isZero() ? SetArgs.Builder.nx() : SetArgs.Builder.nx().ex(options.ttl());
        long masters = connection.getPartitions().stream()
                .filter(n -> n.is(RedisClusterNode.NodeFlag.UPSTREAM)).count();
        this.description = "redis cluster " + options.seeds() + " (" + masters + " masters, tls " + options.tls()
                + ", key prefix '" + options.keyPrefix() + "') through Lettuce " + clientVersion();
    }

    /** The Lettuce version on the class path, from its jar manifest. */
    public static String clientVersion() {
        String v = RedisClusterClient.class.getPackage().getImplementationVersion();
        return v == null ? "(unknown version)" : v;
    }

    /**
     * Connects to the cluster through its seeds and reads its topology.
     *
     * @throws IllegalStateException naming the seeds and the cause when no seed answers in time
     */
    public static LettuceClusterTier connect(RemoteTierOptions options) {
        List<RedisURI> uris = uris(options);
        ClientResources resources = DefaultClientResources.create();
        RedisClusterClient client = RedisClusterClient.create(resources, uris);
        client.setOptions(ClusterClientOptions.builder()
                .socketOptions(SocketOptions.builder().connectTimeout(options.connectTimeout()).build())
                .timeoutOptions(TimeoutOptions.enabled(options.commandTimeout()))
                // A node that fails or a slot that moves refreshes the topology at once, not at the next period.
                .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder().enableAllAdaptiveRefreshTriggers()
                        .enablePeriodicRefresh(Duration.ofSeconds(30)).build())
                // Fail requests while a node is unreachable instead of queueing them without bound.
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .build());
        try {
            return new LettuceClusterTier(resources, client,
                    client.connect(RedisCodec.of(StringCodec.UTF8, ByteArrayCodec.INSTANCE)), options);
        } catch (RuntimeException e) {
            shutdown(client, resources);
            throw new IllegalStateException("no seed of " + options.seeds() + " answered within "
                    + options.connectTimeout().toMillis() + " ms: " + e.getMessage(), e);
        }
    }

    /**
     * The seeds as Lettuce connects to them: TLS (verifying the peer) when {@code options.tls()},
     * the ACL user and password when given, the command timeout.
     */
    public static List<RedisURI> uris(RemoteTierOptions options) {
        List<RedisURI> uris = new ArrayList<>();
        for (URI seed : options.seeds()) {
            RedisURI.Builder b = RedisURI.builder().withHost(seed.getHost()).withPort(seed.getPort())
                    .withSsl(options.tls()).withTimeout(options.commandTimeout());
            if (options.password() != null) {
                b = options.username() != null ? b.withAuthentication(options.username(), options.password())
                        : b.withPassword(options.password());
            }
            uris.add(b.build());
        }
        return uris;
    }

    @Override
    public String describe() {
        return description;
    }

    @Override
    public CompletableFuture<boolean[]> exists(List<String> keys) {
        List<CompletableFuture<Long>> fs = new ArrayList<>(keys.size());
        for (String k : keys) {
            fs.add(commands.exists(k).toCompletableFuture());
        }
        return all(fs).thenApply(x -> {
            boolean[] out = new boolean[fs.size()];
            for (int i = 0; i < out.length; i++) {
                out[i] = fs.get(i).join() > 0;
            }
            return out;
        });
    }

    @Override
    public CompletableFuture<boolean[]> put(List<String> keys, List<byte[]> blobs) {
        if (keys.size() != blobs.size()) {
            throw new IllegalArgumentException("keys has " + keys.size() + " entries and blobs " + blobs.size()
                    + "; allowed: as many blobs as keys");
        }
        List<CompletableFuture<String>> fs = new ArrayList<>(keys.size());
        for (int i = 0; i < keys.size(); i++) {
            fs.add(commands.set(keys.get(i), blobs.get(i), setArgs).toCompletableFuture());
        }
        return all(fs).thenApply(x -> {
            boolean[] out = new boolean[fs.size()];
            for (int i = 0; i < out.length; i++) {
                out[i] = "OK".equals(fs.get(i).join()); // SET NX answers nil when the key was present
            }
            return out;
        });
    }

    @Override
    public CompletableFuture<byte[][]> get(List<String> keys) {
        List<CompletableFuture<byte[]>> fs = new ArrayList<>(keys.size());
        for (String k : keys) {
            fs.add(commands.get(k).toCompletableFuture());
        }
        return all(fs).thenApply(x -> {
            byte[][] out = new byte[fs.size()][];
            for (int i = 0; i < out.length; i++) {
                out[i] = fs.get(i).join();
            }
            return out;
        });
    }

    @Override
    public CompletableFuture<Long> delete(List<String> keys) {
        List<CompletableFuture<Long>> fs = new ArrayList<>(keys.size());
        for (String k : keys) {
            fs.add(commands.del(k).toCompletableFuture());
        }
        return all(fs).thenApply(x -> fs.stream().mapToLong(CompletableFuture::join).sum());
    }

    private static <T> CompletableFuture<Void> all(List<CompletableFuture<T>> fs) {
        return CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new));
    }

    @Override
    public void close() {
        try {
            connection.close();
        } finally {
            shutdown(client, resources);
        }
    }

    private static void shutdown(RedisClusterClient client, ClientResources resources) {
        client.shutdown(0, 2, TimeUnit.SECONDS);
        resources.shutdown(0, 2, TimeUnit.SECONDS);
    }

    /** The raw asynchronous commands, for the benchmark's plain-Lettuce baseline on the same connection. */
    public RedisAdvancedClusterAsyncCommands<String, byte[]> commands() {
        return commands;
    }

}
