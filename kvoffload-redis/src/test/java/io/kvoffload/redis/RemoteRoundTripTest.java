package io.kvoffload.redis;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.PrefixMatch;
import io.kvoffload.RemoteConfig;
import io.kvoffload.RemoteStatus;
import io.kvoffload.spi.RemoteTier;
import io.kvoffload.testing.KvTestData;
import io.kvoffload.testing.TestEngines;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** Publish and fetch against the real cluster: bit-exact, shared by content, skipped when present. */
@ExtendWith(RedisClusterExtension.class)
class RemoteRoundTripTest {
    static final KvShape SHAPE = new KvShape(3, 4, 2, 64, DType.BF16); // 512-byte entries, 8 KiB blobs
    static final long SEED = 1414;

    @TempDir
    Path a;
    @TempDir
    Path b;

    @Test
    void theTierStoresImmutableBlobsAndSaysWhatIsPresent(LoopbackCluster cluster) {
        RemoteConfig rc = RedisClusterExtension.remote(cluster).build();
        try (RemoteTier t = new RedisRemoteTierProvider().open(rc.resolve(System::getenv))) {
            String k1 = rc.keyPrefix() + "x1";
            String k2 = rc.keyPrefix() + "x2";
            assertArrayEquals(new boolean[] {true, true},
                    t.put(List.of(k1, k2), List.of(new byte[] {1, 2}, new byte[1 << 20])).join());
            assertArrayEquals(new boolean[] {false}, t.put(List.of(k1), List.of(new byte[] {9})).join(),
                    "a present blob is never replaced");
            byte[][] got = t.get(List.of(k1, k2, rc.keyPrefix() + "absent")).join();
            assertArrayEquals(new byte[] {1, 2}, got[0]);
            assertEquals(1 << 20, got[1].length);
            assertNull(got[2]);
            assertArrayEquals(new boolean[] {true, false}, t.exists(List.of(k2, rc.keyPrefix() + "absent")).join());
            assertEquals(2L, t.delete(List.of(k1, k2, rc.keyPrefix() + "absent")).join());
            assertArrayEquals(new boolean[] {false, false}, t.exists(List.of(k1, k2)).join());
            assertTrue(t.describe().contains("3 masters"), t.describe());
        }
    }

    @Test
    void aSecondEngineFindsThePrefixThroughTheClusterBitExact(LoopbackCluster cluster) throws Exception {
        RemoteConfig rc = RedisClusterExtension.remote(cluster).build();
        int tokens = 16 * 6 + 5; // six full blocks and a tail, which stays local
        try (KvEngine ea = KvEngine.open(RedisClusterExtension.config(a, 2, rc))) {
            try (KvSequence s = ea.createSequence("prompt", SHAPE)) {
                TestEngines.append(s, SEED, tokens, 40);
                s.commit();
            }
            assertTrue(ea.awaitRemotePublished(Duration.ofSeconds(30)));
            RemoteStatus st = ea.stats().remote();
            assertTrue(st.connected(), st.description());
            assertEquals(6, st.blocksPublished());
            assertEquals(6L * 16 * SHAPE.entryBytes() * SHAPE.layers(), st.bytesPublished());
        }
        try (KvEngine eb = KvEngine.open(RedisClusterExtension.config(b, 1, rc))) {
            // The prompt shares four blocks and two tokens with what A committed, then differs.
            int[] prompt = KvTestData.tokenIds(SEED, 0, 16 * 8);
            prompt[16 * 4 + 2] ^= 1;
            Optional<PrefixMatch> m = eb.findLongestPrefix(SHAPE, prompt);
            assertTrue(m.isPresent());
            assertEquals(16 * 4, m.get().matchedTokens(), "whole blocks up to the first that differs");
            try (KvSequence s = eb.openSequence(m.get().sequenceId())) {
                assertEquals(16 * 4, s.tokenCount());
                assertArrayEquals(KvTestData.tokenIds(SEED, 0, 16 * 4), s.tokenIds());
                assertNull(TestEngines.verify(s, SEED, TestEngines.all(16 * 4)));
            }
            RemoteStatus st = eb.stats().remote();
            assertEquals(4, st.blocksFetched());
            assertEquals(0, st.checksumFailures());
            // Asked again, the pulled copy is local: nothing more is fetched.
            assertEquals(m, eb.findLongestPrefix(SHAPE, prompt));
            assertEquals(4, eb.stats().remote().blocksFetched());
            // The full prompt of A: six blocks, more than the local four, so the rest is pulled.
            Optional<PrefixMatch> all = eb.findLongestPrefix(SHAPE, KvTestData.tokenIds(SEED, 0, tokens));
            assertEquals(16 * 6, all.orElseThrow().matchedTokens());
            assertEquals(6, eb.stats().remote().blocksFetched(), "the four blocks held locally are copied, not fetched");
            try (KvSequence s = eb.openSequence(all.get().sequenceId())) {
                assertNull(TestEngines.verify(s, SEED, TestEngines.all(16 * 6)));
            }
            // Another shape (dtype) never matches these blocks.
            KvShape f16 = new KvShape(3, 4, 2, 64, DType.F16);
            assertFalse(eb.findLongestPrefix(f16, KvTestData.tokenIds(SEED, 0, tokens)).isPresent());
        }
    }

    @Test
    void theBudgetStopsPublishing(LoopbackCluster cluster) throws Exception {
        long block = 16L * SHAPE.entryBytes() * SHAPE.layers();
        RemoteConfig rc = RedisClusterExtension.remote(cluster).budgetBytes(2 * block + block / 2).build();
        try (KvEngine ea = KvEngine.open(RedisClusterExtension.config(a, 1, rc))) {
            try (KvSequence s = ea.createSequence("x", SHAPE)) {
                TestEngines.append(s, SEED, 16 * 4, 16);
                s.commit();
            }
            assertTrue(ea.awaitRemotePublished(Duration.ofSeconds(30)));
            RemoteStatus st = ea.stats().remote();
            assertEquals(2, st.blocksPublished(), st.toString());
            // Committing and closing the writer both queue it: each attempt that meets the spent budget counts.
            assertTrue(st.publishesDropped() >= 1, st.toString());
        }
        try (KvEngine eb = KvEngine.open(RedisClusterExtension.config(b, 1, rc))) {
            assertEquals(32, eb.findLongestPrefix(SHAPE, KvTestData.tokenIds(SEED, 0, 64)).orElseThrow().matchedTokens());
        }
    }

    @Test
    void blocksAlreadyPresentAreNotPublishedAgain(LoopbackCluster cluster) throws Exception {
        RemoteConfig rc = RedisClusterExtension.remote(cluster).build();
        try (KvEngine ea = KvEngine.open(RedisClusterExtension.config(a, 1, rc));
                KvEngine eb = KvEngine.open(RedisClusterExtension.config(b, 1, rc))) {
            try (KvSequence s = ea.createSequence("x", SHAPE)) {
                TestEngines.append(s, SEED, 16 * 3, 16);
                s.commit();
            }
            assertTrue(ea.awaitRemotePublished(Duration.ofSeconds(30)));
            try (KvSequence s = eb.createSequence("y", SHAPE)) { // same prompt, computed again
                TestEngines.append(s, SEED, 16 * 4, 16);
                s.commit();
            }
            assertTrue(eb.awaitRemotePublished(Duration.ofSeconds(30)));
            // Commit and the writer's close both queue it; each pass finds A's three blocks present.
            assertTrue(eb.stats().remote().blocksAlreadyPresent() >= 3, eb.stats().remote().toString());
            assertEquals(1, eb.stats().remote().blocksPublished(), "only the fourth block is new");
        }
    }
}
