package io.kvoffload.redis;

import io.kvoffload.KvConfig;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.RemoteConfig;
import io.kvoffload.testing.TestEngines;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;

/**
 * Engine A of {@link CrossEngineTest}, in a JVM of its own: commits a prompt in its own directory,
 * waits until it is published to the cluster, prints the decode outputs of its local copy, and exits.
 *
 * <p>Arguments: device directory, comma-separated seed URIs, key prefix, token count.
 */
public final class CrossEngineChild {
    private CrossEngineChild() {}

    public static void main(String[] args) throws Exception {
        List<URI> seeds = Arrays.stream(args[1].split(",")).map(URI::create).toList();
        RemoteConfig rc = RemoteConfig.builder(seeds).passwordEnv(RedisClusterExtension.PASSWORD_ENV)
                .keyPrefix(args[2]).build();
        KvConfig cfg = TestEngines.config(List.of(Path.of(args[0])), "portable").blockTokens(16).remote(rc).build();
        int tokens = Integer.parseInt(args[3]);
        try (KvEngine e = KvEngine.open(cfg)) {
            try (KvSequence s = e.createSequence("a-prompt", CrossEngineTest.SHAPE)) {
                TestEngines.append(s, CrossEngineTest.SEED, tokens, 64);
                s.commit();
            }
            if (!e.awaitRemotePublished(Duration.ofSeconds(60))) {
                System.out.println("TIMEOUT");
                System.exit(2);
            }
            try (KvSequence s = e.openSequence("a-prompt")) {
                for (int l = 0; l < CrossEngineTest.SHAPE.layers(); l++) {
                    System.out.println("DECODE " + l + " " + CrossEngineTest.decode(s, l, tokens / 16 * 16));
                }
            }
            System.out.println("PUBLISHED " + e.stats().remote().blocksPublished());
        }
    }
}
