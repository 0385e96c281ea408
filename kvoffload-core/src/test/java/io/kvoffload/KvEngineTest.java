package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.testing.KvTestData;
import io.kvoffload.testing.TestEngines;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KvEngineTest {
    static final KvShape SHAPE = new KvShape(2, 8, 2, 16, DType.BF16); // 128-byte entries

    @TempDir
    Path root;

    KvConfig.Builder config(int devices) {
        return TestEngines.config(TestEngines.deviceDirs(root, devices), "portable").blockTokens(4);
    }

    @Test
    void writesCommitsReopensAndReadsBitExactAcrossDevices() throws Exception {
        KvConfig cfg = config(3).build();
        String id;
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.createSequence(SHAPE)) {
            id = s.id();
            TestEngines.append(s, 7, 101, 33);
            s.commit();
            assertTrue(s.isCommitted());
            KvStats st = e.stats();
            for (KvStats.Device d : st.devices()) {
                assertTrue(d.bytesWritten() > 0, "blocks are striped over every device: " + d);
            }
        }
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.openSequence(id)) {
            assertEquals(101, s.tokenCount());
            assertArrayEquals(KvTestData.tokenIds(7, 0, 101), s.tokenIds());
            assertNull(TestEngines.verify(s, 7, TestEngines.all(101)));
            assertNull(TestEngines.verify(s, 7, new int[] {100, 0, 5, 5, 99, 3}));
            KvStats st = e.stats();
            assertTrue(st.checksumsVerified() > 0);
            assertEquals(0, st.checksumFailures());
        }
    }

    @Test
    void arrayOverloadsRoundTripF32AndBf16() throws Exception {
        KvShape f32 = new KvShape(1, 2, 1, 4, DType.F32);
        KvShape bf16 = new KvShape(1, 2, 1, 4, DType.BF16);
        try (KvEngine e = KvEngine.open(config(1).build())) {
            try (KvSequence s = e.createSequence(f32)) {
                s.appendTokens(1, 2);
                s.appendKv(0, new float[] {1, 2, 3, 4, 5, 6, 7, 8}, new float[] {-1, -2, -3, -4, -5, -6, -7, -8});
                s.commit();
                float[] k = new float[4];
                float[] v = new float[4];
                s.read(0, new int[] {1}, k, v);
                assertArrayEquals(new float[] {5, 6, 7, 8}, k);
                assertArrayEquals(new float[] {-5, -6, -7, -8}, v);
            }
            try (KvSequence s = e.createSequence(bf16)) {
                s.appendTokens(9);
                s.appendKv(0, new short[] {1, 2, 3, 4}, new short[] {5, 6, 7, (short) 0xFFFF});
                short[] k = new short[4];
                short[] v = new short[4];
                s.read(0, new int[] {0}, k, v);
                assertArrayEquals(new short[] {1, 2, 3, 4}, k);
                assertArrayEquals(new short[] {5, 6, 7, (short) 0xFFFF}, v);
            }
        }
    }

    @Test
    void uncommittedAppendsAreInvisibleAfterReopenAndTheirSpaceIsReturned() throws Exception {
        KvConfig cfg = config(2).build();
        long freeBefore;
        String id;
        try (KvEngine e = KvEngine.open(cfg)) {
            freeBefore = e.stats().devices().stream().mapToLong(KvStats.Device::freeBytes).sum();
            try (KvSequence s = e.createSequence(SHAPE)) {
                id = s.id();
                TestEngines.append(s, 3, 64, 64);
            }
            assertEquals(freeBefore, e.stats().devices().stream().mapToLong(KvStats.Device::freeBytes).sum());
            assertTrue(e.sequences().isEmpty());
        }
        try (KvEngine e = KvEngine.open(cfg)) {
            assertTrue(e.sequences().isEmpty());
            assertThrows(IllegalArgumentException.class, () -> e.openSequence(id));
        }
    }

    @Test
    void appendingAfterCommitRewritesThePartialBlockAndFreesTheOldCopy() throws Exception {
        KvConfig cfg = config(2).build();
        String id;
        long usedAfterFirst;
        try (KvEngine e = KvEngine.open(cfg)) {
            try (KvSequence s = e.createSequence(SHAPE)) {
                id = s.id();
                TestEngines.append(s, 11, 10, 10); // 2 full blocks + 2 tokens
                s.commit();
                usedAfterFirst = used(e);
                TestEngines.append(s, 11, 3, 1); // tail grows to 5 tokens: block 2 fills, block 3 starts
                s.commit();
                assertEquals(1, e.sequences().size());
                assertEquals(2, e.sequences().get(0).commitNumber());
                // 4 blocks per layer now, the superseded copy of block 2 is free again.
                assertEquals(usedAfterFirst / 3 * 4, used(e));
            }
            try (KvSequence s = e.openSequenceForAppend(id)) {
                TestEngines.append(s, 11, 4, 2); // extends the reopened partial block 3
                s.commit();
            }
        }
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.openSequence(id)) {
            assertEquals(17, s.tokenCount());
            assertNull(TestEngines.verify(s, 11, TestEngines.all(17)));
            assertEquals(5 * usedAfterFirst / 3, used(e));
        }
    }

    static long used(KvEngine e) {
        return e.stats().devices().stream().mapToLong(d -> d.capacityBytes() - d.freeBytes()).sum();
    }

    @Test
    void findsTheLongestCachedPrefixAfterARestart() throws Exception {
        KvConfig cfg = config(2).build();
        int[] system = KvTestData.tokenIds(5, 0, 12);
        try (KvEngine e = KvEngine.open(cfg)) {
            try (KvSequence a = e.createSequence("a", SHAPE)) {
                TestEngines.append(a, 5, 12, 12); // the shared system prompt: 3 full blocks
                a.commit();
            }
            try (KvSequence b = e.createSequence("b", SHAPE)) {
                TestEngines.append(b, 5, 12, 12);
                int[] more = {1, 2, 3, 4, 5, 6};
                b.appendTokens(more);
                try (Arena arena = Arena.ofConfined()) {
                    for (int l = 0; l < SHAPE.layers(); l++) {
                        b.appendKv(l, KvTestData.tokens(arena, SHAPE, 5, l, 12, 6, false),
                                KvTestData.tokens(arena, SHAPE, 5, l, 12, 6, true));
                    }
                }
                b.commit();
            }
        }
        try (KvEngine e = KvEngine.open(cfg)) {
            int[] prompt = new int[20];
            System.arraycopy(system, 0, prompt, 0, 12);
            int[] tail = {1, 2, 3, 4, 5, 99, 100, 101};
            System.arraycopy(tail, 0, prompt, 12, 8);
            Optional<PrefixMatch> m = e.findLongestPrefix(SHAPE, prompt);
            assertTrue(m.isPresent());
            assertEquals("b", m.get().sequenceId());
            assertEquals(17, m.get().matchedTokens(), "3 blocks by hash, then 5 more token by token");
            try (KvSequence s = e.openSequence(m.get().sequenceId())) {
                assertNull(TestEngines.verify(s, 5, TestEngines.all(17)));
            }
            Optional<PrefixMatch> other = e.findLongestPrefix(new KvShape(2, 8, 2, 16, DType.F16), prompt);
            assertFalse(other.isPresent(), "another dtype is another model fingerprint");
            int[] different = prompt.clone();
            different[0]++;
            assertFalse(e.findLongestPrefix(SHAPE, different).isPresent());
        }
    }

    @Test
    void aCorruptedExtentRaisesAChecksumErrorNamingDeviceSequenceLayerAndTokens() throws Exception {
        KvConfig cfg = config(1).build();
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.createSequence("victim", SHAPE)) {
            TestEngines.append(s, 2, 8, 8);
            s.commit();
        }
        // Layer 0 block 0 is the first extent the allocator handed out: offset 0 of device 0.
        Path pool = cfg.ssdDirectories().get(0).resolve("kvoffload.pool");
        try (FileChannel ch = FileChannel.open(pool, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.allocate(1);
            ch.read(b, 10);
            b.flip();
            byte flipped = (byte) (b.get(0) ^ 0x40);
            ch.write(ByteBuffer.wrap(new byte[] {flipped}), 10);
        }
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.openSequence("victim");
                Arena arena = Arena.ofConfined()) {
            MemorySegment k = arena.allocate(SHAPE.halfEntryBytes());
            MemorySegment v = arena.allocate(SHAPE.halfEntryBytes());
            KvChecksumException ex = assertThrows(KvChecksumException.class, () -> s.read(0, new int[] {1}, k, v));
            assertEquals(0, ex.device());
            assertEquals("victim", ex.sequenceId());
            assertEquals(0, ex.layer());
            assertEquals(0, ex.fromToken());
            assertEquals(4, ex.toToken());
            assertTrue(ex.getMessage().contains("tokens 0..3"), ex.getMessage());
            assertEquals(1, e.stats().checksumFailures());
            // The other blocks are intact and still readable.
            assertNull(TestEngines.verify(s, 2, new int[] {4, 5, 6, 7}));
        }
    }

    @Test
    void severalThreadsUseDifferentSequencesConcurrently() throws Exception {
        try (KvEngine e = KvEngine.open(config(2).build())) {
            ExecutorService pool = Executors.newFixedThreadPool(4);
            List<Future<String>> results = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                long seed = 100 + t;
                results.add(pool.submit(() -> {
                    try (KvSequence s = e.createSequence(SHAPE)) {
                        for (int round = 0; round < 5; round++) {
                            TestEngines.append(s, seed, 13, 5);
                            s.commit();
                            String bad = TestEngines.verify(s, seed, TestEngines.all(s.tokenCount()));
                            if (bad != null) {
                                return bad;
                            }
                        }
                    }
                    return null;
                }));
            }
            for (Future<String> f : results) {
                assertNull(f.get());
            }
            pool.shutdown();
            assertEquals(4, e.sequences().size());
        }
    }

    @Test
    void deleteFreesSpaceAndRefusesHeldSequences() throws Exception {
        try (KvEngine e = KvEngine.open(config(2).build())) {
            long before = used(e);
            try (KvSequence s = e.createSequence("d", SHAPE)) {
                TestEngines.append(s, 1, 9, 9);
                s.commit();
                assertThrows(IllegalStateException.class, () -> e.deleteSequence("d"));
            }
            assertTrue(e.deleteSequence("d"));
            assertFalse(e.deleteSequence("d"));
            assertEquals(before, used(e));
        }
    }
}
