package io.kvoffload.internal.redis;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.RemoteConfig;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SslVerifyMode;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a remote configuration becomes in Lettuce's hands: TLS with peer verification, the ACL user
 * and password read from where the configuration names them, the timeout. No server is needed.
 */
class LettuceUrisTest {
    @Test
    void tlsAndAnAclUserFromTheEnvironmentReachEverySeed() {
        RemoteConfig rc = RemoteConfig.builder(List.of(URI.create("rediss://cache-1.example:6380"),
                URI.create("rediss://cache-2.example:6381"))).tls(true).usernameEnv("KVO_U").passwordEnv("KVO_P")
                .commandTimeoutMillis(1500).build();
        List<RedisURI> uris = LettuceClusterTier.uris(rc.resolve(Map.of("KVO_U", "app", "KVO_P", "s3cret")::get));
        assertEquals(2, uris.size());
        assertEquals("cache-1.example", uris.get(0).getHost());
        assertEquals(6380, uris.get(0).getPort());
        assertEquals("cache-2.example", uris.get(1).getHost());
        assertEquals(6381, uris.get(1).getPort());
        for (RedisURI u : uris) {
            assertTrue(u.isSsl(), u.toString());
            assertEquals(SslVerifyMode.FULL, u.getVerifyMode(), "the server's certificate and name are verified");
            assertEquals("app", u.getUsername());
            assertArrayEquals("s3cret".toCharArray(), u.getPassword());
            assertEquals(Duration.ofMillis(1500), u.getTimeout());
        }
    }

    @Test
    void aPasswordFileWithoutAUserAuthenticatesTheDefaultUserInPlainText(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("redis-password");
        Files.writeString(file, "from-file\nsecond line ignored\n");
        RemoteConfig rc = RemoteConfig.builder(List.of(URI.create("redis://10.0.0.1:6379"))).passwordFile(file).build();
        RedisURI u = LettuceClusterTier.uris(rc.resolve(k -> null)).get(0);
        assertFalse(u.isSsl());
        assertNull(u.getUsername());
        assertArrayEquals("from-file".toCharArray(), u.getPassword());
    }

    @Test
    void noCredentialsMeansNoAuthentication() {
        RemoteConfig rc = RemoteConfig.builder(List.of(URI.create("redis://10.0.0.1:6379"))).build();
        RedisURI u = LettuceClusterTier.uris(rc.resolve(k -> null)).get(0);
        assertNull(u.getUsername());
        assertNull(u.getPassword());
    }
}
