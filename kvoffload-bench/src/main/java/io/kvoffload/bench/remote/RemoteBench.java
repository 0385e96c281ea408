package io.kvoffload.bench.remote;

import io.kvoffload.DType;
import io.kvoffload.KvConfig;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.PrefixMatch;
import io.kvoffload.RemoteConfig;
import io.kvoffload.bench.TempDirs;
import io.kvoffload.bench.cli.PrefixOptions;
import io.kvoffload.bench.report.Medians;
import io.kvoffload.internal.remote.RemoteBlob;
import io.kvoffload.internal.storage.PrefixIndex;
import io.kvoffload.redis.LoopbackCluster;
import io.kvoffload.redis.RedisRemoteTierProvider;
import io.kvoffload.spi.Availability;
import io.kvoffload.spi.RemoteTier;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisAdvancedClusterAsyncCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.codec.RedisCodec;
import io.lettuce.core.codec.StringCodec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The shared remote tier on a loopback Redis Cluster this command starts itself (3 masters, needs
 * redis-server): publish and fetch throughput of the tier (framing, CRC32C and verification
 * included) against a plain Lettuce SET/GET loop on the same cluster in the same run, per block
 * size; then the time to publish a long prompt prefix from one engine and to pull it into another,
 * against plain GETs of the same bytes (the I/O alone).
 */
@Command(name = "remote", mixinStandardHelpOptions = true,
        description = "Remote tier on a loopback Redis Cluster: tier put/get vs plain Lettuce SET/GET, and a prefix pull.")
public final class RemoteBench implements Callable<Integer> {
    @Option(names = "--block-kib", split = ",", defaultValue = "64,256,1024",
            description = "Blob sizes in KiB (default: ${DEFAULT-VALUE}).")
    int[] blockKib;

    @Option(names = "--mib-per-run", defaultValue = "96", description = "MiB moved per timed run (default: ${DEFAULT-VALUE}).")
    int mibPerRun;

    @Option(names = "--batch-mib", defaultValue = "16",
            description = "MiB per batch, i.e. requests in flight at once (default: ${DEFAULT-VALUE}).")
    int batchMib;

    @Mixin
    PrefixOptions reuse = new PrefixOptions();

    @Option(names = "--prefix-layers", defaultValue = "2",
            description = "Layers of the prefix's shape (8 KV heads × 128, BF16: 4 KiB entries) (default: ${DEFAULT-VALUE}).")
    int prefixLayers;

    @Option(names = "--dir", description = "Where the two engines' local directories go (default: a temporary folder).")
    Path dir;

    @Override
    public Integer call() throws Exception {
        Availability a = LoopbackCluster.probe();
        if (!a.available()) {
            throw new IllegalStateException("bench remote needs a local Redis: " + a.reason());
        }
        if (mibPerRun < 1 || batchMib < 1 || reuse.reps < 1 || reuse.prefixTokens < reuse.blockTokens || prefixLayers < 1) {
            throw new IllegalArgumentException("--mib-per-run, --batch-mib, --reps and --prefix-layers must be at least 1"
                    + " and --prefix-tokens at least --block-tokens; got " + mibPerRun + ", " + batchMib + ", " + reuse.reps
                    + ", " + prefixLayers + ", " + reuse.prefixTokens);
        }
        Path root = TempDirs.givenOrTemp(dir, "kvo-bench-remote-");
        byte[] secret = new byte[16];
        new java.security.SecureRandom().nextBytes(secret);
        String password = HexFormat.of().formatHex(secret);
        Path pwFile = Files.writeString(root.resolve("redis-password"), password);
        Files.setPosixFilePermissions(pwFile, PosixFilePermissions.fromString("rw-------"));
        System.out.println("starting a 3-master Redis Cluster on 127.0.0.1 (" + a.reason() + ") ...");
        try (LoopbackCluster cluster = LoopbackCluster.start(3, password)) {
            RemoteConfig rc = RemoteConfig.builder(cluster.seeds()).passwordFile(pwFile).keyPrefix("bench:")
                    .commandTimeoutMillis(30_000).connectTimeoutMillis(5000).build();
            List<RedisURI> uris = new ArrayList<>();
            for (URI u : cluster.seeds()) {
                uris.add(RedisURI.builder().withHost(u.getHost()).withPort(u.getPort()).withPassword(password.toCharArray())
                        .withTimeout(Duration.ofSeconds(30)).build());
            }
            RedisClusterClient plainClient = RedisClusterClient.create(uris);
            try (RemoteTier tier = new RedisRemoteTierProvider().open(rc.resolve(System::getenv));
                    StatefulRedisClusterConnection<String, byte[]> plain =
                            plainClient.connect(RedisCodec.of(StringCodec.UTF8, ByteArrayCodec.INSTANCE))) {
                System.out.println(tier.describe());
                throughput(cluster, tier, plain.async());
                prefix(cluster, rc, root, plain.async());
            } finally {
                plainClient.shutdown();
            }
        } finally {
            TempDirs.deleteRecursively(root);
        }
        return 0;
    }

    private void throughput(LoopbackCluster cluster, RemoteTier tier, RedisAdvancedClusterAsyncCommands<String, byte[]> plain) {
        System.out.printf("%n| blob | plain SET MB/s | tier put MB/s | put ratio | plain GET MB/s | tier get MB/s | get ratio |%n");
        System.out.println("|---|---|---|---|---|---|---|");
        Random rnd = new Random(14);
        for (int kib : blockKib) {
            int size = kib << 10;
            int n = Math.max(1, (int) (((long) mibPerRun << 20) / size));
            int batch = Math.max(1, (int) (((long) batchMib << 20) / size));
            byte[][] payloads = new byte[8][size];
            for (byte[] p : payloads) {
                rnd.nextBytes(p);
            }
            double[][] mbps = new double[4][reuse.reps];
            for (int r = -1; r < reuse.reps; r++) { // run -1 warms both paths up and is not counted
                flush(cluster);
                // Batches of the two sides alternate (and which goes first alternates), so both meet the
                // same cluster state and the same machine noise.
                long[] nanos = new long[4];
                String pk = "plain:" + kib + ":" + r + ":";
                String tk = "tier:" + kib + ":" + r + ":";
                for (int op = 0; op < 2; op++) {
                    for (int i = 0, bi = 0; i < n; i += batch, bi++) {
                        int m = Math.min(batch, n - i);
                        for (int side = 0; side < 2; side++) {
                            boolean isPlain = (side == 0) == (bi % 2 == 0);
                            long t0 = System.nanoTime();
                            if (op == 0 && isPlain) {
                                plainSet(plain, pk, i, m, payloads);
                            } else if (op == 0) {
                                tierPut(tier, tk, i, m, payloads, size);
                            } else if (isPlain) {
                                plainGet(plain, pk, i, m, size);
                            } else {
                                tierGet(tier, tk, i, m, size);
                            }
                            nanos[op * 2 + (isPlain ? 0 : 1)] += System.nanoTime() - t0;
                        }
                    }
                }
                if (r >= 0) {
                    double mb = (double) n * size / 1e6;
                    for (int x = 0; x < 4; x++) {
                        mbps[x][r] = mb / (nanos[x] / 1e9);
                    }
                }
            }
            double ps = Medians.of(mbps[0]);
            double ts = Medians.of(mbps[1]);
            double pg = Medians.of(mbps[2]);
            double tg = Medians.of(mbps[3]);
            System.out.printf("| %d KiB | %.0f | %.0f | %.2f | %.0f | %.0f | %.2f |%n", kib, ps, ts, ts / ps, pg, tg, tg / pg);
        }
        flush(cluster);
    }

    private static void plainSet(RedisAdvancedClusterAsyncCommands<String, byte[]> plain, String k, int from, int m,
            byte[][] payloads) {
        List<CompletableFuture<String>> fs = new ArrayList<>(m);
        for (int j = from; j < from + m; j++) {
            // Each block's bytes are copied out of their source into a value of its own, as the tier's are.
            fs.add(plain.set(k + j, payloads[j % payloads.length].clone()).toCompletableFuture());
        }
        CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)).join();
    }

    /**
     * What the publisher does per blob: the payload is copied into a frame (the publisher reads it from
     * the local store there), checksummed with the key, and stored with SET NX.
     */
    private static void tierPut(RemoteTier tier, String k, int from, int m, byte[][] payloads, int size) {
        // As the publisher does: each blob is sent as soon as it is framed, the batch awaited as a whole.
        List<CompletableFuture<boolean[]>> fs = new ArrayList<>(m);
        for (int j = from; j < from + m; j++) {
            byte[] blob = RemoteBlob.allocate(size);
            System.arraycopy(payloads[j % payloads.length], 0, blob, RemoteBlob.HEADER, size);
            fs.add(tier.put(List.of(k + j), List.of(RemoteBlob.seal(k + j, blob))));
        }
        CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)).join();
    }

    private static void plainGet(RedisAdvancedClusterAsyncCommands<String, byte[]> plain, String k, int from, int m,
            int size) {
        List<CompletableFuture<byte[]>> fs = new ArrayList<>(m);
        for (int j = from; j < from + m; j++) {
            fs.add(plain.get(k + j).toCompletableFuture());
        }
        CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)).join();
        for (CompletableFuture<byte[]> f : fs) {
            check(f.join() != null && f.join().length == size, "plain GET");
        }
    }

    /**
     * What the fetch does per blob: GET, then verify length and CRC32C; verification overlaps the
     * transfers still in flight (the fetch verifies one window while the next is in flight).
     */
    private static void tierGet(RemoteTier tier, String k, int from, int m, int size) {
        List<CompletableFuture<Boolean>> fs = new ArrayList<>(m);
        for (int j = from; j < from + m; j++) {
            String key = k + j;
            fs.add(tier.get(List.of(key)).thenApply(got -> RemoteBlob.verify(key, got[0], size)));
        }
        CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)).join();
        for (CompletableFuture<Boolean> f : fs) {
            check(f.join(), "tier get verification");
        }
    }

    private void prefix(LoopbackCluster cluster, RemoteConfig rc, Path root,
            RedisAdvancedClusterAsyncCommands<String, byte[]> plain) throws Exception {
        KvShape shape = new KvShape(prefixLayers, 32, 8, 128, DType.BF16);
        long bytes = (long) reuse.prefixTokens / reuse.blockTokens * reuse.blockTokens * shape.entryBytes() * prefixLayers;
        long capacity = Math.max(64L << 20, (bytes / 2 + (64L << 20)) & ~((1L << 20) - 1));
        int[] tokens = new Random(1).ints(reuse.prefixTokens, 0, 128_000).toArray();
        KvConfig.Builder base = KvConfig.builder().blockTokens(reuse.blockTokens).deviceCapacityBytes(capacity).remote(rc);
        long publishNanos;
        long commitNanos;
        try (KvEngine ea = KvEngine.open(base.ssdDirectories(TempDirs.ssdDirectories(root.resolve("a"), 2)).build())) {
            try (KvSequence s = ea.createSequence("prompt", shape)) {
                fill(s, shape, tokens, reuse.prefixTokens);
                long c0 = System.nanoTime();
                s.commit();
                commitNanos = System.nanoTime() - c0;
            }
            long t0 = System.nanoTime();
            check(ea.awaitRemotePublished(Duration.ofMinutes(5)), "publishing finished");
            publishNanos = System.nanoTime() - t0;
            check(ea.stats().remote().publishFailures() == 0, "publishing succeeded: " + ea.stats().remote());
        }
        long pullNanos;
        int matched;
        try (KvEngine eb = KvEngine.open(base.ssdDirectories(TempDirs.ssdDirectories(root.resolve("b"), 2)).build())) {
            long t0 = System.nanoTime();
            PrefixMatch m = eb.findLongestPrefix(shape, tokens).orElseThrow();
            pullNanos = System.nanoTime() - t0;
            matched = m.matchedTokens();
            check(eb.stats().remote().checksumFailures() == 0, "no checksum failures");
        }
        // Engine C holds the first half of the prefix already: only the second half is fetched.
        long halfPullNanos;
        int half = reuse.prefixTokens / 2 / reuse.blockTokens * reuse.blockTokens;
        try (KvEngine ec = KvEngine.open(base.ssdDirectories(TempDirs.ssdDirectories(root.resolve("c"), 2)).build())) {
            try (KvSequence s = ec.createSequence("half", shape)) {
                fill(s, shape, tokens, half);
                s.commit();
            }
            check(ec.awaitRemotePublished(Duration.ofMinutes(5)), "publishing finished");
            long t0 = System.nanoTime();
            PrefixMatch m = ec.findLongestPrefix(shape, tokens).orElseThrow();
            halfPullNanos = System.nanoTime() - t0;
            check(m.matchedTokens() == matched, "the pull with half the prefix local reaches as far: " + m);
        }
        // The I/O alone: plain GETs of the same blobs, windows of the same size as the pull's.
        byte[][] chain = PrefixIndex.chainHashes(shape.fingerprint(), tokens, reuse.prefixTokens, reuse.blockTokens);
        List<String> keys = new ArrayList<>();
        for (byte[] h : chain) {
            for (int l = 0; l < prefixLayers; l++) {
                keys.add(rc.keyPrefix() + "blk:" + HexFormat.of().formatHex(h) + ":" + l);
            }
        }
        int window = Math.max(1, (int) ((64L << 20) / (2L * reuse.blockTokens * shape.halfEntryBytes())));
        long t0 = System.nanoTime();
        long got = 0;
        for (int i = 0; i < keys.size(); i += window) {
            List<CompletableFuture<byte[]>> fs = new ArrayList<>();
            for (String k : keys.subList(i, Math.min(keys.size(), i + window))) {
                fs.add(plain.get(k).toCompletableFuture());
            }
            CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)).join();
            for (CompletableFuture<byte[]> f : fs) {
                got += f.join().length;
            }
        }
        long rawNanos = System.nanoTime() - t0;
        System.out.printf("%nprefix of %d tokens (%d layers × %d B entries, %d-token blocks, %.0f MiB):%n", matched,
                prefixLayers, shape.entryBytes(), reuse.blockTokens, bytes / 1048576.0);
        System.out.printf("| step | ms | MB/s |%n|---|---|---|%n");
        System.out.printf("| local commit of the prefix in engine A (its SSD write, for scale) | %.0f | %.0f |%n",
                commitNanos / 1e6, bytes / 1e6 / (commitNanos / 1e9));
        System.out.printf("| publish (engine A, after commit, read from its SSDs) | %.0f | %.0f |%n", publishNanos / 1e6,
                bytes / 1e6 / (publishNanos / 1e9));
        System.out.printf("| pull into engine B (findLongestPrefix: fetch, verify, write to its SSDs, commit) | %.0f | %.0f |%n",
                pullNanos / 1e6, bytes / 1e6 / (pullNanos / 1e9));
        System.out.printf("| plain Lettuce GET of the same %d blobs (the I/O alone) | %.0f | %.0f |%n", keys.size(),
                rawNanos / 1e6, got / 1e6 / (rawNanos / 1e9));
        System.out.printf("| pull into engine C, which holds the first %d tokens locally | %.0f | %.0f |%n", half,
                halfPullNanos / 1e6, bytes / 1e6 / (halfPullNanos / 1e9));
        System.out.printf("pull / plain GET time: %.2f%n", (double) pullNanos / rawNanos);
        System.out.printf("pull with half local / pull: %.2f%n", (double) halfPullNanos / pullNanos);
    }

    /** Appends {@code n} tokens of {@code tokens} with random K and V to every layer of {@code s}. */
    private static void fill(KvSequence s, KvShape shape, int[] tokens, int n) {
        try (Arena arena = Arena.ofConfined()) {
            s.appendTokens(java.util.Arrays.copyOf(tokens, n));
            int chunk = 4096;
            MemorySegment k = arena.allocate((long) chunk * shape.halfEntryBytes());
            MemorySegment v = arena.allocate((long) chunk * shape.halfEntryBytes());
            Random rnd = new Random(2);
            byte[] bytes = new byte[(int) k.byteSize()];
            for (int l = 0; l < shape.layers(); l++) {
                for (int t = 0; t < n; t += chunk) {
                    int c = Math.min(chunk, n - t);
                    rnd.nextBytes(bytes);
                    MemorySegment.copy(MemorySegment.ofArray(bytes), 0, k, 0, k.byteSize());
                    rnd.nextBytes(bytes);
                    MemorySegment.copy(MemorySegment.ofArray(bytes), 0, v, 0, v.byteSize());
                    s.appendKv(l, k.asSlice(0, (long) c * shape.halfEntryBytes()), v.asSlice(0, (long) c * shape.halfEntryBytes()));
                }
            }
        }
    }

    private static void flush(LoopbackCluster cluster) {
        for (int i = 0; i < cluster.masters(); i++) {
            cluster.command(i, "flushall");
        }
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException("bench remote: " + what + " failed");
        }
    }
}
