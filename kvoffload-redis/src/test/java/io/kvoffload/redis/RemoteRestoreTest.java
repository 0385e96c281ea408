package io.kvoffload.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvConfig;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.RemoteConfig;
import io.kvoffload.SequenceInfo;
import io.kvoffload.testing.KvTestData;
import io.kvoffload.testing.TestEngines;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Local eviction may drop a sequence that was published whole; opening it later pulls it back from
 * the cluster under its id, bit-exact. A sequence with a partial last block, or one deleted, is not
 * pulled back.
 */
@ExtendWith(RedisClusterExtension.class)
class RemoteRestoreTest {
    static final KvShape SHAPE = new KvShape(3, 4, 2, 64, DType.BF16); // 512-byte entries: 8 KiB per block and layer

    @TempDir
    Path root;

    static void commit(KvEngine e, String id, int tokens) {
        try (KvSequence s = e.createSequence(id, SHAPE)) {
            TestEngines.append(s, seed(id), tokens, 64);
            s.commit();
        }
    }

    static long seed(String id) {
        return id.hashCode();
    }

    static boolean listed(KvEngine e, String id) {
        return e.sequences().stream().map(SequenceInfo::id).anyMatch(id::equals);
    }

    /** One device of 1 MiB (a few sequences fill it), 16-token blocks, on {@code cluster} under a fresh prefix. */
    KvConfig smallPool(LoopbackCluster cluster) {
        return TestEngines.config(TestEngines.deviceDirs(root, 1), "portable").blockTokens(16)
                .deviceCapacityBytes(1L << 20).remote(RedisClusterExtension.remote(cluster).build()).build();
    }

    /** Opening {@code id} (absent locally) gives its {@code tokens} tokens and their KV, bit-exact. */
    static void assertPulledBackBitExact(KvEngine e, String id, int tokens) {
        try (KvSequence s = e.openSequence(id)) {
            assertEquals(tokens, s.tokenCount());
            assertEquals(java.util.Arrays.toString(KvTestData.tokenIds(seed(id), 0, tokens)),
                    java.util.Arrays.toString(s.tokenIds()));
            assertNull(TestEngines.verify(s, seed(id), TestEngines.all(tokens)));
        }
    }

    @Test
    void anEvictedSequencePublishedWholeIsPulledBackWhenOpened(LoopbackCluster cluster) throws Exception {
        KvConfig cfg = smallPool(cluster);
        try (KvEngine e = KvEngine.open(cfg)) {
            commit(e, "whole", 64);
            commit(e, "tail", 64 + 5);
            commit(e, "deleted", 32);
            assertTrue(e.awaitRemotePublished(Duration.ofSeconds(30)));
            assertTrue(e.deleteSequence("deleted"));
            for (int i = 0; listed(e, "whole") || listed(e, "tail"); i++) {
                assertTrue(i < 200, "the small pool evicts");
                // Partial tails: never preferred, so once "whole" is gone the least recent ("tail") goes
                // next, however far the publisher is behind (whole fillers, once published, would be
                // preferred over "tail" forever).
                commit(e, "filler" + i, 60);
            }
            assertTrue(e.stats().evictions() > 0);
            assertTrue(e.awaitRemotePublished(Duration.ofSeconds(30)));

            assertPulledBackBitExact(e, "whole", 64);
            assertEquals(4, e.stats().remote().blocksFetched());
            // A partial last block was never published: the sequence cannot come back whole, so it does not.
            assertThrows(IllegalArgumentException.class, () -> e.openSequence("tail"));
            assertThrows(IllegalArgumentException.class, () -> e.openSequence("deleted"));
        }
    }

    @Test
    void evictionDropsPublishedSequencesFirstAndThePullBackSurvivesARestart(LoopbackCluster cluster) throws Exception {
        KvConfig cfg = smallPool(cluster);
        try (KvEngine e = KvEngine.open(cfg)) {
            commit(e, "older-unpublished", 64 + 5); // least recently used, but its tail is local only
            commit(e, "kept", 48);
            assertTrue(e.awaitRemotePublished(Duration.ofSeconds(30)));
        }
        // Restart: what was published whole is known from the store's records, not from memory.
        try (KvEngine e = KvEngine.open(cfg)) {
            for (int i = 0; listed(e, "kept"); i++) {
                assertTrue(i < 200, "the small pool evicts");
                commit(e, "filler" + i, 60); // partial tails: never preferred
            }
            assertTrue(listed(e, "older-unpublished"), "the published sequence goes first although it is newer");
        }
        // Restart again after the eviction: opening it pulls it back, bit-exact.
        try (KvEngine e = KvEngine.open(cfg)) {
            assertTrue(!listed(e, "kept"));
            assertPulledBackBitExact(e, "kept", 48);
            assertEquals(3, e.stats().remote().blocksFetched());
        }
    }

    @Test
    void aRecordOfASequenceCommittedAgainIsNotUsedAfterARestart(LoopbackCluster cluster) throws Exception {
        RemoteConfig rc = RedisClusterExtension.remote(cluster).build();
        KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(root, 1), "portable").blockTokens(16)
                .remote(rc).build();
        Path records = root.resolve("ssd0").resolve("remote-published");
        byte[] stale;
        try (KvEngine e = KvEngine.open(cfg)) {
            commit(e, "grown", 32);
            assertTrue(e.awaitRemotePublished(Duration.ofSeconds(30)));
            stale = java.nio.file.Files.readAllBytes(records.resolve("grown.published"));
            try (KvSequence s = e.openSequenceForAppend("grown")) {
                TestEngines.append(s, seed("grown"), 16, 64); // one more block
                s.commit();
            }
        }
        // As after a crash between the second commit and the deletion of the first record.
        java.nio.file.Files.write(records.resolve("grown.published"), stale);
        java.nio.file.Files.write(records.resolve("junk.published"), new byte[] {1, 2, 3});
        try (KvEngine e = KvEngine.open(cfg)) {
            assertTrue(!java.nio.file.Files.exists(records.resolve("junk.published")), "a damaged record is dropped");
            // The local sequence no longer ends where the record says: the record is dropped, not trusted.
            assertTrue(!java.nio.file.Files.exists(records.resolve("grown.published")));
            try (KvSequence s = e.openSequence("grown")) {
                assertEquals(48, s.tokenCount());
                assertNull(TestEngines.verify(s, seed("grown"), TestEngines.all(48)));
            }
        }
    }
}
