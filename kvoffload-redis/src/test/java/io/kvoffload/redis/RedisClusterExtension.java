package io.kvoffload.redis;

import static org.junit.jupiter.api.Assertions.fail;

import io.kvoffload.KvConfig;
import io.kvoffload.RemoteConfig;
import io.kvoffload.spi.Availability;
import io.kvoffload.testing.TestEngines;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * Gives tests a real 3-master Redis Cluster on 127.0.0.1 ({@link LoopbackCluster}): one per test
 * JVM, started by the first class that needs it and stopped (every process killed, its folder
 * deleted) when the JVM's tests end. Without {@code redis-server} the tests are skipped and say
 * what to install; with {@code KVO_REQUIRE_REDIS=1} (CI) they fail instead.
 *
 * <p>Tests that kill nodes start a private cluster with {@link #privateCluster()} so the shared one
 * stays whole.
 */
public final class RedisClusterExtension implements BeforeAllCallback, ParameterResolver {
    /** Set to 1 where the Redis tests must run (CI): a missing server then fails them. */
    public static final String REQUIRE_ENV = "KVO_REQUIRE_REDIS";
    /** The variable the test password is passed in, as production passes credentials (remote.passwordEnv). */
    public static final String PASSWORD_ENV = "KVO_TEST_REDIS_PASSWORD";

    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(RedisClusterExtension.class);

    @Override
    public void beforeAll(ExtensionContext context) {
        requireRedis();
    }

    /** Skips the caller without redis-server, or fails with {@code KVO_REQUIRE_REDIS=1}. */
    public static void requireRedis() {
        Availability a = LoopbackCluster.probe();
        String why = !a.available() ? a.reason()
                : System.getenv(PASSWORD_ENV) == null ? PASSWORD_ENV + " is not set (the module's surefire sets it)" : null;
        if (why != null) {
            String message = "Redis Cluster tests need redis-server and redis-cli: " + why;
            if ("1".equals(System.getenv(REQUIRE_ENV))) {
                fail(REQUIRE_ENV + "=1 but " + message);
            }
            Assumptions.abort(message);
        }
    }

    /** A cluster of the caller's own; close it. */
    public static LoopbackCluster privateCluster() {
        requireRedis();
        return LoopbackCluster.start(3, System.getenv(PASSWORD_ENV));
    }

    @Override
    public boolean supportsParameter(ParameterContext p, ExtensionContext c) {
        return p.getParameter().getType() == LoopbackCluster.class;
    }

    @Override
    public Object resolveParameter(ParameterContext p, ExtensionContext c) {
        // Stored in the root context: shared by every class, closed (AutoCloseable) when the JVM's tests end.
        return c.getRoot().getStore(NS).getOrComputeIfAbsent("cluster",
                k -> LoopbackCluster.start(3, System.getenv(PASSWORD_ENV)), LoopbackCluster.class);
    }

    /** Remote settings for {@code cluster} under a fresh key prefix, so tests sharing a cluster never see each other's keys. */
    public static RemoteConfig.Builder remote(LoopbackCluster cluster) {
        return RemoteConfig.builder(cluster.seeds()).passwordEnv(PASSWORD_ENV).keyPrefix("t" + UUID.randomUUID() + ":")
                .connectTimeoutMillis(2000).commandTimeoutMillis(1000);
    }

    /** An engine configuration over {@code n} device folders under {@code root}, with {@code remote}. */
    public static KvConfig config(Path root, int n, RemoteConfig remote) {
        List<Path> dirs = TestEngines.deviceDirs(root, n);
        return TestEngines.config(dirs, "portable").blockTokens(16).deviceCapacityBytes(64L << 20).remote(remote).build();
    }
}
