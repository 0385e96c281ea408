package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.spi.RemoteTierOptions;
import io.kvoffload.testing.TestEngines;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The {@code remote} configuration: JSON, defaults, credentials by reference, and messages for bad values. */
class RemoteConfigTest {
    @TempDir
    Path root;

    static final List<URI> SEEDS = List.of(URI.create("redis://10.0.0.1:6379"));

    @Test
    void jsonSetsEveryKey() throws Exception {
        Files.writeString(root.resolve("pw"), "s3cret\nignored\n");
        Path file = Files.writeString(root.resolve("kvo.json"), """
                {"ssdDirectories": ["a"],
                 "remote": {"kind": "redis", "seeds": ["rediss://10.0.0.1:6379", "rediss://10.0.0.2:6379"],
                   "usernameEnv": "KVO_USER", "passwordFile": "pw", "tls": true, "connectTimeoutMillis": 300,
                   "commandTimeoutMillis": 400, "keyPrefix": "prod:", "ttlSeconds": 3600, "budget": "2GiB",
                   "publishQueue": 8}}
                """);
        RemoteConfig r = KvConfig.load(file).remote();
        assertEquals(List.of(URI.create("rediss://10.0.0.1:6379"), URI.create("rediss://10.0.0.2:6379")), r.seeds());
        assertEquals(root.resolve("pw"), r.passwordFile());
        assertEquals(2L << 30, r.budgetBytes());
        assertEquals(8, r.publishQueue());
        RemoteTierOptions o = r.resolve(Map.of("KVO_USER", "kv")::get);
        assertEquals("kv", o.username());
        assertArrayEquals("s3cret".toCharArray(), o.password());
        assertTrue(o.tls());
        assertEquals(Duration.ofMillis(300), o.connectTimeout());
        assertEquals(Duration.ofMillis(400), o.commandTimeout());
        assertEquals(Duration.ofHours(1), o.ttl());
        assertEquals("prod:", o.keyPrefix());
        assertFalse(o.toString().contains("s3cret"), o.toString());
        assertFalse(r.toString().contains("s3cret"), r.toString());
        assertNull(ConfigFile.fromMap(Map.of("ssdDirectories", List.of("a"), "remote", "none"), root).remote());
    }

    @Test
    void defaults() {
        RemoteConfig r = RemoteConfig.builder(SEEDS).build();
        assertEquals("redis", r.kind());
        assertEquals("kvo:", r.keyPrefix());
        assertEquals(0, r.ttlSeconds());
        assertEquals(0, r.budgetBytes());
        assertEquals(2000, r.commandTimeoutMillis());
        RemoteTierOptions o = r.resolve(k -> null);
        assertNull(o.password());
        assertNull(o.username());
        assertEquals(Duration.ZERO, o.ttl());
    }

    @Test
    void credentialsComeByReferenceOnly() {
        IllegalArgumentException inUri = assertThrows(IllegalArgumentException.class,
                () -> RemoteConfig.builder(List.of(URI.create("redis://user:pw@10.0.0.1:6379"))).build());
        assertTrue(inUri.getMessage().contains("no credentials in it"), inUri.getMessage());
        IllegalArgumentException value = assertThrows(IllegalArgumentException.class,
                () -> RemoteConfig.builder(SEEDS).passwordEnv("hunter2!").build());
        assertTrue(value.getMessage().contains("remote.passwordEnv = 'hunter2!'")
                && value.getMessage().contains("not a credential"), value.getMessage());
        IllegalArgumentException unset = assertThrows(IllegalArgumentException.class,
                () -> RemoteConfig.builder(SEEDS).passwordEnv("KVO_NOT_SET").build().resolve(k -> null));
        assertTrue(unset.getMessage().contains("remote.passwordEnv = 'KVO_NOT_SET'"), unset.getMessage());
        IllegalArgumentException both = assertThrows(IllegalArgumentException.class,
                () -> RemoteConfig.builder(SEEDS).passwordEnv("A").passwordFile(root.resolve("pw")).build());
        assertTrue(both.getMessage().contains("at most one"), both.getMessage());
        IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
                () -> RemoteConfig.builder(SEEDS).passwordFile(root.resolve("none")).build().resolve(k -> null));
        assertTrue(missing.getMessage().contains("remote.passwordFile"), missing.getMessage());
    }

    @Test
    void badValuesNameTheKeyTheValueAndWhatIsAllowed() {
        String[][] cases = {
            {"seeds", "remote.seeds has 0 entries", "1..64"},
            {"scheme", "remote.seeds entry 'http://h:1'", "redis://host:port"},
            {"tls", "asks for TLS but remote.tls = false", "set tls to true"},
            {"timeout", "remote.commandTimeoutMillis = 0", "1..600000"},
            {"prefix", "remote.keyPrefix = 'a b'", "printable ASCII"},
            {"ttl", "remote.ttlSeconds = -1", "0..2147483647"},
            {"queue", "remote.publishQueue = 0", "1..65536"},
        };
        for (String[] c : cases) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> {
                switch (c[0]) {
                    case "seeds" -> RemoteConfig.builder(List.of()).build();
                    case "scheme" -> RemoteConfig.builder(List.of(URI.create("http://h:1"))).build();
                    case "tls" -> RemoteConfig.builder(List.of(URI.create("rediss://h:1"))).build();
                    case "timeout" -> RemoteConfig.builder(SEEDS).commandTimeoutMillis(0).build();
                    case "prefix" -> RemoteConfig.builder(SEEDS).keyPrefix("a b").build();
                    case "ttl" -> RemoteConfig.builder(SEEDS).ttlSeconds(-1).build();
                    default -> RemoteConfig.builder(SEEDS).publishQueue(0).build();
                }
            });
            assertTrue(e.getMessage().contains(c[1]) && e.getMessage().contains(c[2]), c[0] + ": " + e.getMessage());
        }
        IllegalArgumentException key = assertThrows(IllegalArgumentException.class, () -> ConfigFile.fromMap(
                Map.of("ssdDirectories", List.of("a"), "remote", Map.of("seeds", List.of("redis://h:1"), "ttl", 5)), root));
        assertTrue(key.getMessage().contains("remote.ttl") && key.getMessage().contains("ttlSeconds"), key.getMessage());
        IllegalArgumentException notList = assertThrows(IllegalArgumentException.class, () -> ConfigFile.fromMap(
                Map.of("ssdDirectories", List.of("a"), "remote", Map.of("seeds", "redis://h:1")), root));
        assertTrue(notList.getMessage().contains("remote.seeds = 'redis://h:1'"), notList.getMessage());
    }

    @Test
    void aKindWithoutProviderFailsTheOpenAndReleasesTheStore() {
        // kvoffload-core alone has no remote tier provider (kvoffload-redis adds one).
        List<Path> dirs = TestEngines.deviceDirs(root, 1);
        KvConfig cfg = TestEngines.config(dirs, "portable").remote(RemoteConfig.builder(SEEDS).build()).build();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> KvEngine.open(cfg));
        assertTrue(e.getMessage().contains("remote.kind = 'redis'") && e.getMessage().contains("add kvoffload-redis"),
                e.getMessage());
        try (KvEngine engine = KvEngine.open(TestEngines.config(dirs, "portable").build())) {
            assertFalse(engine.stats().remote().configured());
        }
    }
}
