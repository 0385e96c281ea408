package io.kvoffload.redis;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.RemoteConfig;
import io.kvoffload.spi.RemoteTier;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** A Redis ACL user named through {@code remote.usernameEnv} authenticates against the real cluster. */
@ExtendWith(RedisClusterExtension.class)
class RemoteAclTest {
    static final String USER_ENV = "KVO_TEST_REDIS_USER";

    static Function<String, String> env(String user) {
        return k -> USER_ENV.equals(k) ? user : System.getenv(k);
    }

    @Test
    void theAclUserIsUsedForEveryNode(LoopbackCluster cluster) {
        RemoteConfig rc = RedisClusterExtension.remote(cluster).usernameEnv(USER_ENV).build();
        try (RemoteTier t = new RedisRemoteTierProvider().open(rc.resolve(env(LoopbackCluster.ACL_USER)))) {
            List<String> keys = List.of(rc.keyPrefix() + "a", rc.keyPrefix() + "b", rc.keyPrefix() + "c");
            List<byte[]> values = List.of(new byte[] {1}, new byte[] {2}, new byte[] {3});
            boolean[] stored = t.put(keys, values).join();
            assertTrue(stored[0] && stored[1] && stored[2]);
            byte[][] back = t.get(keys).join();
            for (int i = 0; i < keys.size(); i++) {
                assertArrayEquals(values.get(i), back[i]);
            }
            t.delete(keys).join();
        }
    }

    @Test
    void anUnknownUserIsRefusedAtConnect(LoopbackCluster cluster) {
        RemoteConfig rc = RedisClusterExtension.remote(cluster).usernameEnv(USER_ENV).build();
        assertThrows(IllegalStateException.class,
                () -> new RedisRemoteTierProvider().open(rc.resolve(env("nobody-" + System.nanoTime()))).close());
    }
}
