package io.kvoffload.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvConfig;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.PrefixMatch;
import io.kvoffload.RemoteConfig;
import io.kvoffload.RemoteStatus;
import io.kvoffload.spi.RemoteTier;
import io.kvoffload.testing.KvTestData;
import io.kvoffload.testing.TestEngines;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The remote tier's faults against a real cluster: a master killed mid-publish and mid-fetch, a
 * corrupted or misplaced value, keys evicted by Redis's maxmemory policy, and a cluster that cannot
 * be reached at open. In every case a reader gets a whole, verified prefix (possibly shorter) or
 * none, never wrong data, and the local path works on.
 */
@ExtendWith(RedisClusterExtension.class)
class RemoteFaultTest {
    static final KvShape SHAPE = new KvShape(3, 4, 2, 64, DType.BF16); // 512-byte entries, 8 KiB blobs
    static final long SEED = 7;
    static final int BT = 16;

    @TempDir
    Path a;
    @TempDir
    Path b;
    @TempDir
    Path c;

    @AfterEach
    void resetHooks() {
        HookedRedisProvider.reset();
    }

    static void commit(KvEngine e, String id, int tokens) {
        try (KvSequence s = e.createSequence(id, SHAPE)) {
            TestEngines.append(s, SEED, tokens, 64);
            s.commit();
        }
    }

    /** Engine A (directory {@code a}) commits {@code tokens} tokens and publishes them. */
    void publish(RemoteConfig rc, int tokens) throws InterruptedException {
        try (KvEngine ea = KvEngine.open(RedisClusterExtension.config(a, 1, rc))) {
            commit(ea, "p", tokens);
            assertTrue(ea.awaitRemotePublished(Duration.ofSeconds(30)));
        }
    }

    /** The prefix {@code e} finds for the first {@code tokens} tokens: whole blocks, bit-exact; its length. */
    static int verifiedPrefix(KvEngine e, int tokens) {
        Optional<PrefixMatch> m = e.findLongestPrefix(SHAPE, KvTestData.tokenIds(SEED, 0, tokens));
        if (m.isEmpty()) {
            return 0;
        }
        int n = m.get().matchedTokens();
        assertEquals(0, n % BT, "a remote prefix is whole blocks");
        try (KvSequence s = e.openSequence(m.get().sequenceId())) {
            assertNull(TestEngines.verify(s, SEED, TestEngines.all(n)));
        }
        return n;
    }

    /**
     * The key of one layer of block {@code block}, computed from the scheme docs/remote.md states
     * (not from the library's code): h₀ = SHA-256(fingerprint), hᵢ₊₁ = SHA-256(hᵢ ‖ block i's token
     * ids, 32-bit little-endian), key = prefix + "blk:" + hex(h) + ":" + layer.
     */
    static String layerKey(RemoteConfig rc, int block, int layer) throws Exception {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        byte[] h = md.digest(SHAPE.fingerprint().getBytes(StandardCharsets.UTF_8));
        int[] tokens = KvTestData.tokenIds(SEED, 0, (block + 1) * BT);
        for (int b = 0; b <= block; b++) {
            ByteBuffer buf = ByteBuffer.allocate(BT * 4).order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < BT; i++) {
                buf.putInt(tokens[b * BT + i]);
            }
            md.update(h);
            md.update(buf.array());
            h = md.digest();
        }
        return rc.keyPrefix() + "blk:" + HexFormat.of().formatHex(h) + ":" + layer;
    }

    @Test
    void aMasterKilledMidPublishLeavesNoPartialBlockAndTheLocalPathWorks() throws Exception {
        try (LoopbackCluster cluster = RedisClusterExtension.privateCluster()) {
            RemoteConfig rc = RedisClusterExtension.remote(cluster).kind("redis-hooked").build();
            // A window of eight blocks (one run) is a put per layer, then one of the block records. The master
            // dies before the records' put.
            HookedRedisProvider.hookAtPut = SHAPE.layers();
            HookedRedisProvider.hook = () -> cluster.kill(1);
            try (KvEngine ea = KvEngine.open(RedisClusterExtension.config(a, 2, rc))) {
                commit(ea, "p", BT * 8);
                assertTrue(ea.awaitRemotePublished(Duration.ofSeconds(60)));
                RemoteStatus st = ea.stats().remote();
                // Commit and the writer's close both queue it: one pass, or two when the first began after the
                // close; each fails.
                assertTrue(st.publishFailures() >= 1, st.toString());
                assertEquals(0, st.blocksPublished(), "the records' put failed: no block counts as published");
                // The local path is unaffected: A reads its sequence and commits another.
                try (KvSequence s = ea.openSequence("p")) {
                    assertNull(TestEngines.verify(s, SEED, TestEngines.all(BT * 8)));
                }
                commit(ea, "q", BT * 2 + 1);
                assertEquals(BT * 2 + 1, ea.findLongestPrefix(SHAPE, KvTestData.tokenIds(SEED, 0, BT * 2 + 1))
                        .orElseThrow().matchedTokens(), "local prefix lookup still works");
                assertTrue(ea.awaitRemotePublished(Duration.ofSeconds(60)));

                // While the master is down, and after it returns empty, a reader sees whole blocks only: those
                // whose record reached a live master have every layer (stored before any record was sent).
                try (KvEngine eb = KvEngine.open(RedisClusterExtension.config(b, 1, RedisClusterExtension.remote(cluster)
                        .keyPrefix(rc.keyPrefix()).build()))) {
                    assertTrue(verifiedPrefix(eb, BT * 8) <= BT * 8);
                }
                cluster.restart(1);
                try (KvEngine eb = KvEngine.open(RedisClusterExtension.config(c, 1, RedisClusterExtension.remote(cluster)
                        .keyPrefix(rc.keyPrefix()).build()))) {
                    assertTrue(verifiedPrefix(eb, BT * 8) <= BT * 8);
                }
            }
        }
    }

    @Test
    void aMasterKilledMidFetchPullsNothingPartial() throws Exception {
        try (LoopbackCluster cluster = RedisClusterExtension.privateCluster()) {
            RemoteConfig rc = RedisClusterExtension.remote(cluster).build();
            try (KvEngine ea = KvEngine.open(RedisClusterExtension.config(a, 1, rc))) {
                commit(ea, "p", BT * 8);
                assertTrue(ea.awaitRemotePublished(Duration.ofSeconds(60)));
                assertEquals(8, ea.stats().remote().blocksPublished());
            }
            // B looks the prefix up (EXISTS, then the block records: get #0); the master dies before the data (get #1).
            HookedRedisProvider.hookAtGet = 1;
            HookedRedisProvider.hook = () -> cluster.kill(2);
            RemoteConfig hooked = RedisClusterExtension.remote(cluster).kind("redis-hooked").keyPrefix(rc.keyPrefix()).build();
            try (KvEngine eb = KvEngine.open(RedisClusterExtension.config(b, 1, hooked))) {
                assertEquals(0, verifiedPrefix(eb, BT * 8), "the fetch failed: nothing is pulled");
                RemoteStatus st = eb.stats().remote();
                assertEquals(1, st.fetchFailures(), st.toString());
                assertEquals(0, st.blocksFetched());
                assertTrue(eb.sequences().isEmpty(), "no partial sequence is left behind: " + eb.sequences());
                // Its local path is unaffected.
                commit(eb, "local", BT * 3);
                assertEquals(BT * 3, verifiedPrefix(eb, BT * 3));
                cluster.restart(2); // empty: the blocks it held are lost, so the prefix is shorter, never wrong
                assertTrue(verifiedPrefix(eb, BT * 8) <= BT * 8);
            }
        }
    }

    @Test
    void aCorruptedValueIsAMissAndIsDeleted(LoopbackCluster cluster) throws Exception {
        RemoteConfig rc = RedisClusterExtension.remote(cluster).build();
        publish(rc, BT * 6);
        String bad = layerKey(rc, 3, 1);
        try (RemoteTier t = new RedisRemoteTierProvider().open(rc.resolve(System::getenv))) {
            byte[] blob = t.get(List.of(bad)).join()[0];
            blob[blob.length / 2] ^= 0x10; // one bit of the payload
            t.delete(List.of(bad)).join();
            t.put(List.of(bad), List.of(blob)).join();
            try (KvEngine eb = KvEngine.open(RedisClusterExtension.config(b, 1, rc))) {
                assertEquals(BT * 3, verifiedPrefix(eb, BT * 6), "the prefix ends before the corrupt block");
                assertEquals(1, eb.stats().remote().checksumFailures());
                assertFalse(t.exists(List.of(bad)).join()[0], "the corrupt blob is deleted for republishing");
            }
        }
    }

    @Test
    void aValidBlobUnderAnotherKeyIsAMiss(LoopbackCluster cluster) throws Exception {
        RemoteConfig rc = RedisClusterExtension.remote(cluster).build();
        publish(rc, BT * 4);
        try (RemoteTier t = new RedisRemoteTierProvider().open(rc.resolve(System::getenv))) {
            byte[] other = t.get(List.of(layerKey(rc, 0, 2))).join()[0]; // same size, intact, but block 0's
            t.delete(List.of(layerKey(rc, 1, 2))).join();
            t.put(List.of(layerKey(rc, 1, 2)), List.of(other)).join();
            try (KvEngine eb = KvEngine.open(RedisClusterExtension.config(b, 1, rc))) {
                assertEquals(BT, verifiedPrefix(eb, BT * 4));
                assertEquals(1, eb.stats().remote().checksumFailures());
            }
        }
    }

    @Test
    void keysEvictedByMaxmemoryTruncateThePrefix() throws Exception {
        try (LoopbackCluster cluster = RedisClusterExtension.privateCluster()) {
            cluster.configSet("maxmemory-policy", "allkeys-random");
            cluster.configSet("maxmemory", String.valueOf(4 << 20));
            RemoteConfig rc = RedisClusterExtension.remote(cluster).build();
            int blocks = 240; // 240 × 3 layers × 8 KiB = 5.6 MiB of blobs against ~3 × 2.5 MiB of room
            try (KvEngine ea = KvEngine.open(RedisClusterExtension.config(a, 1, rc))) {
                commit(ea, "p", BT * blocks);
                assertTrue(ea.awaitRemotePublished(Duration.ofSeconds(60)));
                assertEquals(0, ea.stats().remote().publishFailures(), ea.stats().remote().toString());
            }
            long evicted = 0;
            for (int i = 0; i < cluster.masters(); i++) {
                for (String line : cluster.command(i, "info", "stats").split("\r?\n")) {
                    if (line.startsWith("evicted_keys:")) {
                        evicted += Long.parseLong(line.substring("evicted_keys:".length()).trim());
                    }
                }
            }
            assertTrue(evicted > 0, "the cluster evicted keys");
            try (KvEngine eb = KvEngine.open(RedisClusterExtension.config(b, 1, rc))) {
                int n = verifiedPrefix(eb, BT * blocks);
                assertTrue(n < BT * blocks, "evicted blocks end the prefix: " + n);
            }
        }
    }

    @Test
    void anUnreachableClusterAtOpenLeavesTheEngineLocalAndSaysSo() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort(); // closed again: nothing listens there
        }
        RedisClusterExtension.requireRedis();
        RemoteConfig rc = RemoteConfig.builder(List.of(URI.create("redis://127.0.0.1:" + port)))
                .passwordEnv(RedisClusterExtension.PASSWORD_ENV).connectTimeoutMillis(500).build();
        try (KvEngine e = KvEngine.open(RedisClusterExtension.config(a, 1, rc))) {
            RemoteStatus st = e.stats().remote();
            assertTrue(st.configured());
            assertFalse(st.connected());
            assertTrue(st.description().contains("cannot reach"), st.description());
            commit(e, "p", BT * 3);
            assertTrue(e.awaitRemotePublished(Duration.ofSeconds(1)));
            assertEquals(BT * 3, verifiedPrefix(e, BT * 3));
        }
    }

    /** Flips one bit of layer 0 block 0 of engine A's store: the first extent, offset 0 of its pool. */
    void corruptFirstLocalBlock() throws Exception {
        Path pool = a.resolve("ssd0").resolve("kvoffload.pool");
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(pool,
                java.nio.file.StandardOpenOption.READ, java.nio.file.StandardOpenOption.WRITE)) {
            ByteBuffer one = ByteBuffer.allocate(1);
            ch.read(one, 10);
            ch.write(ByteBuffer.wrap(new byte[] {(byte) (one.get(0) ^ 0x40)}), 10);
        }
    }

    @Test
    void aLocalBlockNoCopyOfWhichVerifiesIsServedFromTheClusterAndRepaired(LoopbackCluster cluster) throws Exception {
        RemoteConfig rc = RedisClusterExtension.remote(cluster).build();
        publish(rc, BT * 2);
        corruptFirstLocalBlock();
        assertServedFromTheClusterAndRepaired(rc, "p");
        assertWholeWithoutTheCluster("p"); // the local copy was rewritten
    }

    /** Reading {@code id} (its first 2 blocks) with the cluster: one block served from it, and repaired. */
    void assertServedFromTheClusterAndRepaired(RemoteConfig rc, String id) {
        try (KvEngine ea = KvEngine.open(RedisClusterExtension.config(a, 1, rc)); KvSequence s = ea.openSequence(id)) {
            assertNull(TestEngines.verify(s, SEED, TestEngines.all(BT * 2)));
            assertEquals(1, ea.stats().remoteFailovers());
            assertEquals(1, ea.stats().repairs());
        }
    }

    /** {@code id} reads whole from engine A's store alone, without one checksum failure. */
    void assertWholeWithoutTheCluster(String id) {
        KvConfig local = TestEngines.config(TestEngines.deviceDirs(a, 1), "portable").blockTokens(BT)
                .deviceCapacityBytes(64L << 20).build();
        try (KvEngine ea = KvEngine.open(local); KvSequence s = ea.openSequence(id)) {
            assertNull(TestEngines.verify(s, SEED, TestEngines.all(BT * 2)));
            assertEquals(0, ea.stats().checksumFailures());
        }
    }

    /**
     * A block a fork shares with its source is one extent: repairing it from the cluster through the
     * fork rewrites it in place, which serves the source too. The fork publishes under the same
     * content keys as its source (the prefix hash chain), so the cluster's copy is the same blob.
     */
    @Test
    void aRepairOfASharedBlockThroughAForkServesItsSourceToo(LoopbackCluster cluster) throws Exception {
        RemoteConfig rc = RedisClusterExtension.remote(cluster).build();
        publish(rc, BT * 2);
        try (KvEngine ea = KvEngine.open(RedisClusterExtension.config(a, 1, rc))) {
            try (KvSequence f = ea.fork("p", "f", BT * 2)) {
                f.commit();
            }
            assertTrue(ea.awaitRemotePublished(Duration.ofSeconds(30)));
            assertEquals(0, ea.stats().remote().publishFailures());
            // The fork's blocks are the source's keys: it sends nothing. How often the publisher looked
            // (the commit and the writer's close each offer it; a look at an unchanged state may be
            // skipped) is not the contract, so "already present" is at least the fork's 2 blocks.
            assertEquals(0, ea.stats().remote().blocksPublished(), "the fork publishes nothing new");
            assertTrue(ea.stats().remote().blocksAlreadyPresent() >= 2, "the fork's blocks are the source's keys: "
                    + ea.stats().remote().blocksAlreadyPresent());
        }
        corruptFirstLocalBlock(); // layer 0 block 0 of p, shared by f
        assertServedFromTheClusterAndRepaired(rc, "f");
        assertWholeWithoutTheCluster("p"); // the source reads the extent repaired through the fork
    }

    @Test
    void aLocalBlockWhoseRemoteCopyIsCorruptTooFailsTheReadClearly(LoopbackCluster cluster) throws Exception {
        RemoteConfig rc = RedisClusterExtension.remote(cluster).build();
        publish(rc, BT * 2);
        corruptFirstLocalBlock();
        String key = layerKey(rc, 0, 0);
        try (RemoteTier t = new RedisRemoteTierProvider().open(rc.resolve(System::getenv))) {
            byte[] blob = t.get(List.of(key)).join()[0];
            blob[blob.length / 2] ^= 0x10;
            t.delete(List.of(key)).join();
            t.put(List.of(key), List.of(blob)).join();
        }
        try (KvEngine ea = KvEngine.open(RedisClusterExtension.config(a, 1, rc)); KvSequence s = ea.openSequence("p")) {
            io.kvoffload.KvChecksumException ex = assertThrows(io.kvoffload.KvChecksumException.class,
                    () -> TestEngines.verify(s, SEED, TestEngines.all(BT * 2)));
            assertEquals(0, ex.layer());
            assertEquals(0, ex.fromToken());
            assertEquals(0, ea.stats().remoteFailovers());
            assertEquals(1, ea.stats().remote().checksumFailures(), "the remote copy failed its own checksum");
        }
    }

    @Test
    void aBlockMissingBetweenPublishedOnesIsPublishedAloneAndThePrefixIsWholeAgain(LoopbackCluster cluster)
            throws Exception {
        RemoteConfig rc = RedisClusterExtension.remote(cluster).build();
        publish(rc, BT * 4);
        String record1 = layerKey(rc, 1, 0).replaceAll(":0$", ":rec");
        try (RemoteTier t = new RedisRemoteTierProvider().open(rc.resolve(System::getenv))) {
            assertEquals(1L, t.delete(List.of(record1)).join(), record1);
        }
        try (KvEngine eb = KvEngine.open(RedisClusterExtension.config(b, 1, rc))) {
            assertEquals(BT, verifiedPrefix(eb, BT * 4), "the prefix stops at the missing record");
            commit(eb, "again", BT * 4);
            assertTrue(eb.awaitRemotePublished(Duration.ofSeconds(30)));
            assertEquals(1, eb.stats().remote().blocksPublished(), "only the missing block is sent");
        }
        try (KvEngine ec = KvEngine.open(RedisClusterExtension.config(c, 1, rc))) {
            assertEquals(BT * 4, verifiedPrefix(ec, BT * 4));
        }
    }
}
