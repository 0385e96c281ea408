package io.kvoffload;

import io.kvoffload.testing.Layouts;
import io.kvoffload.strategy.swarm.Swarm;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.strategy.swarm.ClusterOptions;
import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.testing.Faults;
import io.kvoffload.testing.KvTestData;
import io.kvoffload.testing.KvViews;
import io.kvoffload.testing.TestEngines;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Failover and repair: a token stored in two clusters has its copies on distinct devices
 * ({@code ReplicaSpread}); when the copy a read or a decoder fetch chose is damaged or its device
 * errs, the other copy serves the same call, the bad copy is rewritten, and only when no copy is
 * good does the call fail, naming every copy tried.
 */
class ReplicaFailoverTest {
    static final KvShape SHAPE = new KvShape(2, 8, 2, 16, DType.BF16); // 128-byte entries
    static final int TOKENS = 600;
    static final long SEED = 42;
    /** Tokens in two clusters, none a sink or in the decoder's window. */
    static final int[] SHARED = {100, 150, 200, 250};

    @TempDir
    Path root;

    KvConfig.Builder config() {
        return TestEngines.config(TestEngines.deviceDirs(root, 2), "portable").blockTokens(16);
    }

    /** Layer 0 in clusters of 20 consecutive tokens plus one cluster holding a second copy of SHARED. */
    static void store(KvEngine e) {
        try (KvSequence s = e.createSequence("s", SHAPE)) {
            TestEngines.append(s, SEED, TOKENS, 64);
            Swarm.clusterLayer(s, 0, clustersOf20(TOKENS, SHARED), ClusterOptions.defaults());
            s.commit();
        }
    }

    /** Clusters of 20 consecutive tokens of {@code tokens}, plus one holding a second copy of {@code shared}. */
    static int[][] clustersOf20(int tokens, int[] shared) {
        List<int[]> clusters = new ArrayList<>();
        for (int t = 0; t < tokens; t += 20) {
            int[] c = new int[Math.min(20, tokens - t)];
            for (int i = 0; i < c.length; i++) {
                c[i] = t + i;
            }
            clusters.add(c);
        }
        clusters.add(shared.clone());
        return clusters.toArray(int[][]::new);
    }

    /** Pool file offset and device of copy {@code r} of {@code token} (copies in device order). */
    static long[] copy(KvEngine e, int token, int r) {
        try (KvSequence s = e.openSequence("s")) {
            ClusterLayout cl = Layouts.clusterLayout(s, 0);
            assertEquals(2, cl.count(token), "token " + token + " has two copies");
            int lo = cl.device(token, 0) <= cl.device(token, 1) ? 0 : 1;
            int pick = r == 0 ? lo : 1 - lo;
            return new long[] {cl.device(token, pick), cl.offset(token, pick)};
        }
    }

    void damage(KvConfig cfg, long[] where) throws Exception {
        try (FileChannel ch = FileChannel.open(cfg.ssdDirectories().get((int) where[0]).resolve("kvoffload.pool"),
                StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.allocate(1);
            ch.read(b, where[1] + 3);
            b.put(0, (byte) (b.get(0) ^ 0x10)).rewind();
            ch.write(b, where[1] + 3);
        }
    }

    static byte[][] expected() {
        byte[][] x = new byte[2][];
        try (Arena a = Arena.ofConfined()) {
            x[0] = KvTestData.tokens(a, SHAPE, SEED, 0, 0, TOKENS, false).toArray(ValueLayout.JAVA_BYTE);
            x[1] = KvTestData.tokens(a, SHAPE, SEED, 0, 0, TOKENS, true).toArray(ValueLayout.JAVA_BYTE);
        }
        return x;
    }

    @Test
    void aSequenceWhollyReplicatedIsServedThroughItsCopiesWhileADeviceIsMissing() throws Exception {
        List<java.nio.file.Path> dirs = TestEngines.deviceDirs(root, 2);
        KvConfig cfg = TestEngines.config(dirs, "portable").blockTokens(16).build();
        int tokens = 128;
        try (KvEngine e = KvEngine.open(cfg)) {
            try (KvSequence s = e.createSequence("r", SHAPE)) {
                TestEngines.append(s, SEED, tokens, 64);
                // Every token twice: consecutive groups of 8, and groups of 8 taken with a stride.
                List<int[]> clusters = new ArrayList<>();
                for (int t = 0; t < tokens; t += 8) {
                    int[] c = new int[8];
                    int[] d = new int[8];
                    for (int i = 0; i < 8; i++) {
                        c[i] = t + i;
                        d[i] = (t / 8) + i * (tokens / 8);
                    }
                    clusters.add(c);
                    clusters.add(d);
                }
                for (int l = 0; l < SHAPE.layers(); l++) {
                    Swarm.clusterLayer(s, l, clusters.toArray(int[][]::new), ClusterOptions.defaults());
                }
                s.commit();
            }
            try (KvSequence s = e.openSequence("r")) {
                for (int l = 0; l < SHAPE.layers(); l++) {
                    ClusterLayout cl = Layouts.clusterLayout(s, l);
                    for (int t = 0; t < tokens; t++) {
                        assertEquals(2, cl.count(t));
                        assertTrue(cl.device(t, 0) != cl.device(t, 1), "token " + t + " copies on one device");
                    }
                }
            }
            commit(e, "plain");
        }
        try (KvEngine e = KvEngine.open(TestEngines.config(dirs.subList(0, 1), "portable").blockTokens(16).build())) {
            KvStats st = e.stats();
            assertEquals(1, st.unavailableDevices().size());
            assertEquals(List.of("plain"), st.unavailableSequences(), "only the unreplicated sequence is out");
            try (KvSequence s = e.openSequence("r")) {
                assertNull(TestEngines.verify(s, SEED, TestEngines.all(tokens)));
            }
        }
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.openSequence("r")) { // back whole
            assertNull(TestEngines.verify(s, SEED, TestEngines.all(tokens)));
        }
    }

    static void commit(KvEngine e, String id) {
        try (KvSequence s = e.createSequence(id, SHAPE)) {
            TestEngines.append(s, 5, 64, 16);
            s.commit();
        }
    }

    static int loneTokenOn(KvSequence s, int device) {
        ClusterLayout cl = Layouts.clusterLayout(s, 0);
        for (int t = 0; t < TOKENS; t++) {
            if (cl.count(t) == 1 && cl.device(t, 0) == device) {
                return t;
            }
        }
        throw new IllegalStateException("no single-copy token on device " + device);
    }

    @Test
    void copiesOfATokenLiveOnDistinctDevices() throws Exception {
        try (KvEngine e = KvEngine.open(config().build())) {
            store(e);
            for (int t : SHARED) {
                long[] a = copy(e, t, 0);
                long[] b = copy(e, t, 1);
                assertTrue(a[0] != b[0], "token " + t + " has both copies on device " + a[0]);
            }
        }
    }

    @Test
    void aDamagedCopyIsServedFromTheOtherAndRewritten() throws Exception {
        KvConfig cfg = config().build();
        try (KvEngine e = KvEngine.open(cfg)) {
            store(e);
            long[] first = copy(e, SHARED[0], 0); // a lone entry's read goes to the lowest device holding it
            damage(cfg, first);
            try (KvSequence s = e.openSequence("s")) {
                assertNull(TestEngines.verifySingleLayer(s, SEED, 0, new int[] {SHARED[0]}));
                assertEquals(1, e.stats().failovers());
                assertEquals(1, e.stats().repairs());
                assertNull(TestEngines.verifySingleLayer(s, SEED, 0, new int[] {SHARED[0]}));
                assertEquals(1, e.stats().failovers(), "the copy was repaired: no second failover");
            }
        }
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.openSequence("s")) {
            assertNull(TestEngines.verify(s, SEED, new int[] {SHARED[0], 3, 599}));
            assertEquals(0, e.stats().failovers());
        }
    }

    @Test
    void aDecoderFetchFailsOverWithinTheSameFetch() throws Exception {
        KvConfig cfg = config().build();
        byte[][] expected = expected();
        try (KvEngine e = KvEngine.open(cfg)) {
            store(e);
            damage(cfg, copy(e, SHARED[1], 0));
            try (KvSequence s = e.openSequence("s");
                    KvDecoder d = s.decoder(DecodeOptions.builder().strategy(Swarm.defaults()).cacheBytes(0).build())) {
                try (KvView v = d.prefetch(0, new int[] {SHARED[1]}, 1)) {
                    v.await();
                    assertTrue(KvViews.assertBitExact(v, expected).get(SHARED[1]));
                }
                assertEquals(1, e.stats().failovers());
                assertEquals(1, e.stats().repairs());
            }
        }
    }

    @Test
    void aFailingDeviceIsReadAroundAndNoGoodCopyFailsNamingEveryCopy() throws Exception {
        KvConfig cfg = config().build();
        byte[][] expected = expected();
        long[] a;
        long[] b;
        try (KvEngine e = KvEngine.open(cfg)) {
            store(e);
            a = copy(e, SHARED[2], 0);
            b = copy(e, SHARED[2], 1);
        }
        // The device of the first copy fails every request once the decoder is set up (its medoid
        // index is read when it opens): the fault is armed right there, not after a count of requests.
        DecodeOptions o = DecodeOptions.builder().strategy(Swarm.defaults()).cacheBytes(0).sinkTokens(0).localWindow(0).build();
        KvConfig faulty = config()
                .faultInjection(FaultInjection.builder(3).vanishingDevice((int) a[0], Long.MAX_VALUE).build()).build();
        try (KvEngine e = KvEngine.open(faulty); KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(o)) {
            d.prefetch(0, new int[0], 0).close();
            assertEquals(0, e.stats().failovers(), "the setup is healthy");
            Faults.vanishNow(s);
            try (KvView v = d.prefetch(0, new int[] {SHARED[2]}, 1)) {
                v.await();
                assertTrue(KvViews.assertBitExact(v, expected).get(SHARED[2]));
            }
            assertEquals(1, e.stats().failovers(), "the fetch's failed read was served from the other copy");
            assertNull(TestEngines.verifySingleLayer(s, SEED, 0, new int[] {SHARED[2]}));
            assertEquals(2, e.stats().failovers());
            assertEquals(0, e.stats().repairs(), "nothing can be written to the failing device");
            // A token with its only copy there fails cleanly, naming the error.
            int lone = loneTokenOn(s, (int) a[0]);
            KvChecksumException lost = assertThrows(KvChecksumException.class,
                    () -> TestEngines.verifySingleLayer(s, SEED, 0, new int[] {lone}));
            assertTrue(lost.getMessage().contains("no good copy") && lost.getMessage().contains("errno 5"),
                    lost.getMessage());
        }
        try (KvEngine e = KvEngine.open(cfg)) {
            damage(cfg, a);
            damage(cfg, b);
            try (KvSequence s = e.openSequence("s")) {
                KvChecksumException ex = assertThrows(KvChecksumException.class,
                        () -> TestEngines.verifySingleLayer(s, SEED, 0, new int[] {SHARED[2]}));
                assertTrue(ex.getMessage().contains("no good copy") && ex.getMessage().contains("device " + a[0])
                        && ex.getMessage().contains("device " + b[0]), ex.getMessage());
            }
        }
    }
}
