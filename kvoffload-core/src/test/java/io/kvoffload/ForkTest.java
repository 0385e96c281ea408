package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.strategy.Strategies;
import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.testing.KvViews;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Arrays;
import java.util.BitSet;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link KvEngine#fork}: a fork shares its source's prefix blocks (no bytes written), reads back
 * bit-exact through every read path, copies a partial last block only when it appends to it,
 * survives the deletion of its source and a restart, and gives its space back exactly when the last
 * sequence naming a shared extent goes.
 */
class ForkTest {
    static final KvShape SHAPE = new KvShape(2, 8, 2, 64, DType.BF16);
    static final long S = 11;
    static final long F = 23;

    @TempDir
    Path root;

    KvConfig cfg() {
        return TestEngines.config(TestEngines.deviceDirs(root, 2), "portable").blockTokens(16).build();
    }

    static void write(KvEngine e, String id, long seed, int tokens) {
        try (KvSequence s = e.createSequence(id, SHAPE)) {
            TestEngines.append(s, seed, tokens, 7);
            s.commit();
        }
    }

    static long free(KvEngine e) {
        return e.stats().devices().stream().mapToLong(KvStats.Device::freeBytes).sum();
    }

    static long written(KvEngine e) {
        return e.stats().devices().stream().mapToLong(KvStats.Device::bytesWritten).sum();
    }

    static int[] range(int from, int to) {
        return IntStream.range(from, to).toArray();
    }

    /** The fork reads the source's tokens below {@code prefix} and its own from there to {@code end}. */
    static void assertFork(KvSequence fork, int prefix, int end) {
        assertEquals(end, fork.tokenCount());
        assertNull(TestEngines.verify(fork, S, range(0, prefix)));
        if (end > prefix) {
            assertNull(TestEngines.verify(fork, F, range(prefix, end)));
        }
    }

    @Test
    void aForkSharesThePrefixWithoutWritingAndCopiesThePartialBlockOnlyWhenItAppends() {
        try (KvEngine e = KvEngine.open(cfg())) {
            write(e, "src", S, 100);
            long free0 = free(e);
            long written0 = written(e);
            try (KvSequence f = e.fork("src", "f", 40)) {
                assertTrue(f.isWritable());
                assertFalse(f.isCommitted());
                assertEquals(free0, free(e), "sharing allocates nothing");
                assertFork(f, 40, 40);
                int[] shuffled = TestEngines.shuffled(new java.util.Random(3), 40);
                assertNull(TestEngines.verify(f, S, shuffled), "gathered in any order");
                assertArrayEqualsPrefix(e, f, 40);
                f.commit();
            }
            assertEquals(free0, free(e), "a committed fork of shared blocks holds no space of its own");
            assertEquals(written0, written(e), "no KV byte was written (only the manifest, outside the pools)");
            try (KvSequence f = e.openSequenceForAppend("f")) {
                TestEngines.append(f, F, 30, 5); // extends the shared partial block 2: copy-on-write
                f.commit();
                assertFork(f, 40, 70);
            }
            try (KvSequence src = e.openSequence("src")) {
                assertNull(TestEngines.verify(src, S, range(0, 100)), "the source is untouched");
            }
            // The fork owns blocks 2..4 of each layer (block 2 copied, 3 and 4 appended): 3 × 2 layers.
            long extent = (free0 - free(e)) / 6;
            assertEquals(6 * extent, free0 - free(e));
            assertEquals(8192, extent);
        }
    }

    private static void assertArrayEqualsPrefix(KvEngine e, KvSequence f, int prefix) {
        try (KvSequence src = e.openSequence("src")) {
            assertEquals(Arrays.toString(Arrays.copyOf(src.tokenIds(), prefix)), Arrays.toString(f.tokenIds()));
        }
    }

    @Test
    void deletingTheSourceKeepsTheForkAndDeletingTheForkFreesEverything() {
        try (KvEngine e = KvEngine.open(cfg())) {
            long empty = free(e);
            write(e, "src", S, 100);
            try (KvSequence f = e.fork("src", "f", 48)) { // whole blocks 0..2
                TestEngines.append(f, F, 20, 20);
                f.commit();
            }
            long both = free(e);
            assertTrue(e.deleteSequence("src"));
            long afterSource = free(e);
            // The source's own blocks 3..6 go (4 per layer); blocks 0..2 stay for the fork.
            assertEquals(8 * 8192, afterSource - both);
            try (KvSequence f = e.openSequence("f")) {
                assertFork(f, 48, 68);
            }
            assertTrue(e.deleteSequence("f"));
            assertEquals(empty, free(e), "the last holder gives the shared extents back");
        }
    }

    @Test
    void aRestartRebuildsTheHoldersFromTheManifests() {
        long empty;
        try (KvEngine e = KvEngine.open(cfg())) {
            empty = free(e);
            write(e, "src", S, 90);
            try (KvSequence f = e.fork("src", "f", 37)) {
                f.commit();
            }
            try (KvSequence g = e.fork("f", "g", 21)) { // a fork of a fork: blocks written by src
                TestEngines.append(g, F, 9, 9);
                g.commit();
            }
        }
        try (KvEngine e = KvEngine.open(cfg())) {
            try (KvSequence f = e.openSequence("f"); KvSequence g = e.openSequence("g")) {
                assertFork(f, 37, 37);
                assertFork(g, 21, 30);
            }
            assertTrue(e.deleteSequence("src"));
            assertTrue(e.deleteSequence("f"));
            try (KvSequence g = e.openSequence("g")) {
                assertFork(g, 21, 30);
            }
        }
        try (KvEngine e = KvEngine.open(cfg())) {
            try (KvSequence g = e.openSequence("g")) {
                assertFork(g, 21, 30);
            }
            assertTrue(e.deleteSequence("g"));
            assertEquals(empty, free(e));
        }
    }

    @Test
    void aLostSourceManifestQuarantinesOnlyWhatTheForkDoesNotHold() throws Exception {
        long empty;
        List<Path> dirs;
        try (KvEngine e = KvEngine.open(cfg())) {
            empty = free(e);
            write(e, "src", S, 100);
            try (KvSequence f = e.fork("src", "f", 48)) {
                TestEngines.append(f, F, 20, 20);
                f.commit();
            }
            dirs = e.config().ssdDirectories();
        }
        for (Path m : StoreSafetyTest.manifestCopies(dirs, "src")) {
            byte[] bad = Files.readAllBytes(m);
            bad[bad.length / 2] ^= 0x40;
            Files.write(m, bad);
        }
        try (KvEngine e = KvEngine.open(cfg())) {
            assertEquals(1, e.stats().quarantine().size(), e.stats().toString());
            try (KvSequence f = e.openSequence("f")) {
                assertFork(f, 48, 68);
            }
            assertTrue(e.releaseQuarantine() > 0);
            try (KvSequence f = e.openSequence("f")) {
                assertFork(f, 48, 68);
            }
            assertTrue(e.deleteSequence("f"));
            assertEquals(empty, free(e), "the fork's shared blocks were its own to free once the source was lost");
        }
    }

    @Test
    void aMissingDeviceMakesSourceAndForkUnavailableAndBothReturnWithIt() {
        List<Path> dirs = TestEngines.deviceDirs(root, 3);
        KvConfig all = TestEngines.config(dirs, "portable").blockTokens(16).build();
        KvConfig two = TestEngines.config(dirs.subList(0, 2), "portable").blockTokens(16).build();
        long empty;
        try (KvEngine e = KvEngine.open(all)) {
            empty = free(e);
            write(e, "src", S, 100); // blocks striped over the three devices
            try (KvSequence f = e.fork("src", "f", 48)) {
                TestEngines.append(f, F, 20, 20);
                f.commit();
            }
        }
        try (KvEngine e = KvEngine.open(two)) {
            assertEquals(List.of("f", "src"), e.stats().unavailableSequences());
            assertThrows(KvDeviceUnavailableException.class, () -> e.fork("src", "g", 10));
            write(e, "other", 3, 100); // written around both reservations
        }
        try (KvEngine e = KvEngine.open(all)) {
            assertTrue(e.deleteSequence("other"));
            assertTrue(e.deleteSequence("src"));
            try (KvSequence f = e.openSequence("f")) {
                assertFork(f, 48, 68);
            }
            assertTrue(e.deleteSequence("f"));
            assertEquals(empty, free(e));
        }
    }

    @Test
    void aForkClosedWithoutCommitGivesBackItsReferencesAndItsCopies() {
        try (KvEngine e = KvEngine.open(cfg())) {
            write(e, "src", S, 64);
            long free0 = free(e);
            try (KvSequence f = e.fork("src", "f", 40)) {
                TestEngines.append(f, F, 30, 30);
            }
            assertEquals(free0, free(e));
            assertTrue(e.sequences().stream().noneMatch(i -> i.id().equals("f")));
            assertTrue(e.deleteSequence("src"));
            assertEquals(free0 + 8 * 8192, free(e));
        }
    }

    @Test
    void evictingTheSourceKeepsTheFork() {
        // 1 layer of 4 KiB entries in 16-token blocks: 64 KiB extents, 16 in a 1 MiB pool.
        KvShape big = new KvShape(1, 16, 8, 128, DType.BF16);
        KvConfig small = TestEngines.config(TestEngines.deviceDirs(root, 1), "portable").blockTokens(16)
                .deviceCapacityBytes(1L << 20).build();
        try (KvEngine e = KvEngine.open(small)) {
            try (KvSequence s = e.createSequence("src", big)) { // 6 extents
                TestEngines.append(s, S, 96, 16);
                s.commit();
            }
            try (KvSequence f = e.fork("src", "f", 64)) { // shares 4 of them
                f.commit();
            }
            try (KvSequence f = e.openSequence("f")) { // held: never evicted
                try (KvSequence b = e.createSequence("b", big)) {
                    TestEngines.append(b, 5, 128, 16); // 8 more extents: 14 used, 2 free
                    b.commit();
                }
                try (KvSequence m = e.createSequence("m", big)) {
                    // 4 extents: evicts src, which gives back only its 2 own extents.
                    TestEngines.append(m, 6, 64, 16);
                    m.commit();
                }
                assertTrue(e.sequences().stream().noneMatch(i -> i.id().equals("src")));
                assertEquals(1, e.stats().evictions());
                assertNull(TestEngines.verify(f, S, range(0, 64)));
            }
            assertEquals(0, free(e));
        }
    }

    @Test
    void aForkOfALaidOutSourceCopiesTheLaidOutTokensAndDecodesAsAFreshSequence() {
        KvShape shape = new KvShape(2, 8, 2, 64, DType.F32);
        int tokens = 1024;
        int prefix = 600;
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(shape, tokens).seed(5).build());
        SelectionStrategy quest = Strategies.named("quest");
        KvConfig config = TestEngines.config(TestEngines.deviceDirs(root, 2), "portable").blockTokens(64).build();
        try (KvEngine e = KvEngine.open(config); Arena a = Arena.ofConfined()) {
            MemorySegment k = a.allocate((long) tokens * shape.halfEntryBytes());
            MemorySegment v = a.allocate((long) tokens * shape.halfEntryBytes());
            byte[][][] expected = new byte[shape.layers()][2][];
            int[] ids = range(0, tokens);
            try (KvSequence s = e.createSequence("src", shape); KvSequence fresh = e.createSequence("fresh", shape)) {
                s.appendTokens(ids);
                fresh.appendTokens(Arrays.copyOf(ids, prefix));
                for (int l = 0; l < shape.layers(); l++) {
                    w.writeKv(l, 0, tokens, shape.dtype(), k, v);
                    expected[l][0] = k.toArray(ValueLayout.JAVA_BYTE);
                    expected[l][1] = v.toArray(ValueLayout.JAVA_BYTE);
                    s.appendKv(l, k, v);
                    fresh.appendKv(l, k.asSlice(0, (long) prefix * shape.halfEntryBytes()),
                            v.asSlice(0, (long) prefix * shape.halfEntryBytes()));
                    quest.layOut(fresh, l);
                }
                Swarm.clusterLayerFromQueries(s, 0, java.util.List.of(w.query(0, 1), w.query(0, 2)),
                        io.kvoffload.strategy.swarm.ClusterOptions.defaults());
                quest.layOut(s, 1);
                s.commit();
                fresh.commit();
            }
            long before = written(e);
            try (KvSequence f = e.fork("src", "f", prefix)) {
                // The source's layouts cover its first tokens (their blocks are gone): those are copied.
                assertTrue(written(e) - before >= (long) (prefix / 64) * 64 * shape.entryBytes(),
                        "laid-out tokens are copied into blocks of the fork's own");
                for (int l = 0; l < shape.layers(); l++) {
                    MemorySegment kk = a.allocate((long) prefix * shape.halfEntryBytes());
                    MemorySegment vv = a.allocate((long) prefix * shape.halfEntryBytes());
                    f.read(l, 0, prefix, kk, vv);
                    assertEquals(-1, kk.mismatch(MemorySegment.ofArray(expected[l][0]).asSlice(0, kk.byteSize())));
                    assertEquals(-1, vv.mismatch(MemorySegment.ofArray(expected[l][1]).asSlice(0, vv.byteSize())));
                    quest.layOut(f, l);
                }
                f.commit();
            }
            DecodeOptions o = DecodeOptions.builder().strategy(quest).sparsity(0.5).localWindow(64).build();
            try (KvSequence f = e.openSequence("f"); KvSequence fresh = e.openSequence("fresh");
                    KvDecoder df = f.decoder(o); KvDecoder dn = fresh.decoder(o)) {
                for (int l = 0; l < shape.layers(); l++) {
                    float[] q = w.query(l, 7);
                    try (KvView vf = df.prefetch(l, q).await(); KvView vn = dn.prefetch(l, q).await()) {
                        BitSet got = KvViews.assertBitExact(vf, expected[l]);
                        BitSet want = KvViews.assertBitExact(vn, expected[l]);
                        assertEquals(want, got, "layer " + l + ": the fork selects what a fresh sequence selects");
                        assertTrue(got.length() <= prefix);
                    }
                }
            }
        }
    }

    /**
     * Forks (of a laid-out source, so each one reads the source back while copying) race deletions
     * and rewrites of their source: every fork that succeeds is bit-exact, and once everything is
     * deleted all the space is free (the source's extents are held while a fork copies from them).
     */
    @Test
    void forksRacingDeletionsOfTheirSourceStayExactAndLeakNothing() throws Exception {
        SelectionStrategy quest = Strategies.named("quest");
        try (KvEngine e = KvEngine.open(cfg())) {
            long empty = free(e);
            java.util.function.Consumer<String> writeLaidOut = id -> {
                try (KvSequence s = e.createSequence(id, SHAPE)) {
                    TestEngines.append(s, S, 96, 32);
                    quest.layOut(s, 0);
                    s.commit();
                }
            };
            writeLaidOut.accept("src");
            java.util.concurrent.atomic.AtomicInteger forked = new java.util.concurrent.atomic.AtomicInteger();
            Thread deleter = new Thread(() -> {
                for (int i = 0; i < 12; i++) {
                    if (e.deleteSequence("src")) {
                        writeLaidOut.accept("src");
                    }
                    try {
                        Thread.sleep(3); // leaves the source committed some of the time
                    } catch (InterruptedException x) {
                        return;
                    }
                }
            });
            deleter.start();
            for (int i = 0; deleter.isAlive(); i++) {
                String id = "f" + i;
                try (KvSequence f = e.fork("src", id, 50)) {
                    f.commit();
                    assertNull(TestEngines.verify(f, S, range(0, 50)), id);
                    forked.incrementAndGet();
                } catch (IllegalArgumentException absent) {
                    assertTrue(absent.getMessage().startsWith("sourceId = 'src' names no committed sequence"),
                            absent.getMessage()); // between its deletion and its rewrite
                    continue;
                }
                assertTrue(e.deleteSequence(id));
            }
            deleter.join();
            assertTrue(forked.get() > 0, "no fork succeeded");
            e.deleteSequence("src");
            assertEquals(empty, free(e));
        }
    }

    @Test
    void badArgumentsAreNamedWithTheirValueAndWhatIsAllowed() {
        try (KvEngine e = KvEngine.open(cfg())) {
            write(e, "src", S, 50);
            IllegalArgumentException x = assertThrows(IllegalArgumentException.class, () -> e.fork("src", "f", 0));
            assertEquals("prefixTokens = 0 is out of range; allowed: 1..50 (the tokens sequence 'src' has committed)",
                    x.getMessage());
            x = assertThrows(IllegalArgumentException.class, () -> e.fork("src", "f", 51));
            assertTrue(x.getMessage().startsWith("prefixTokens = 51 is out of range; allowed: 1..50"), x.getMessage());
            x = assertThrows(IllegalArgumentException.class, () -> e.fork("nope", "f", 1));
            assertTrue(x.getMessage().startsWith("sourceId = 'nope' names no committed sequence"), x.getMessage());
            x = assertThrows(IllegalArgumentException.class, () -> e.fork("src", "src", 1));
            assertEquals("newId = 'src' is already used by another sequence", x.getMessage());
            x = assertThrows(IllegalArgumentException.class, () -> e.fork("src", "a/b", 1));
            assertTrue(x.getMessage().startsWith("newId = 'a/b' is not allowed; allowed: 1..128 characters"),
                    x.getMessage());
            x = assertThrows(IllegalArgumentException.class,
                    () -> e.fork("src", "f", 1, new KvShape(3, 8, 2, 64, DType.BF16)));
            assertTrue(x.getMessage().startsWith("expectedShape = "), x.getMessage());
            try (KvSequence open = e.createSequence("pending", SHAPE)) {
                TestEngines.append(open, S, 10, 10);
                x = assertThrows(IllegalArgumentException.class, () -> e.fork("pending", "f", 1));
                assertTrue(x.getMessage().contains("(it is being written and not yet committed)"), x.getMessage());
            }
            assertThrows(NullPointerException.class, () -> e.fork(null, "f", 1));
            try (KvSequence f = e.fork("src", "f", 10, SHAPE)) {
                assertEquals(SHAPE, f.shape());
                x = assertThrows(IllegalArgumentException.class, () -> e.fork("src", "f", 1));
                assertEquals("newId = 'f' is already used by another sequence", x.getMessage(),
                        "an uncommitted fork holds its id");
            }
        }
    }
}
