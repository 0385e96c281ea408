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

    @Test
    void anEvictedSequencePublishedWholeIsPulledBackWhenOpened(LoopbackCluster cluster) throws Exception {
        RemoteConfig rc = RedisClusterExtension.remote(cluster).build();
        KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(root, 1), "portable").blockTokens(16)
                .deviceCapacityBytes(1L << 20).remote(rc).build();
        try (KvEngine e = KvEngine.open(cfg)) {
            commit(e, "whole", 64);
            commit(e, "tail", 64 + 5);
            commit(e, "deleted", 32);
            assertTrue(e.awaitRemotePublished(Duration.ofSeconds(30)));
            assertTrue(e.deleteSequence("deleted"));
            for (int i = 0; listed(e, "whole") || listed(e, "tail"); i++) {
                assertTrue(i < 200, "the small pool evicts");
                commit(e, "filler" + i, 64);
            }
            assertTrue(e.stats().evictions() > 0);
            assertTrue(e.awaitRemotePublished(Duration.ofSeconds(30)));

            try (KvSequence s = e.openSequence("whole")) {
                assertEquals(64, s.tokenCount());
                assertEquals(java.util.Arrays.toString(KvTestData.tokenIds(seed("whole"), 0, 64)),
                        java.util.Arrays.toString(s.tokenIds()));
                assertNull(TestEngines.verify(s, seed("whole"), TestEngines.all(64)));
            }
            assertEquals(4, e.stats().remote().blocksFetched());
            // A partial last block was never published: the sequence cannot come back whole, so it does not.
            assertThrows(IllegalArgumentException.class, () -> e.openSequence("tail"));
            assertThrows(IllegalArgumentException.class, () -> e.openSequence("deleted"));
        }
    }
}
