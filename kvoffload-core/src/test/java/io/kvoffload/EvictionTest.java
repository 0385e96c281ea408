package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.testing.TestEngines;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Capacity eviction (SSD-backed PagedAttention [SSD-PagedAttention §2.2]): least-recently-used
 * committed sequences go first, open ones never, and a write that finds nothing to evict fails
 * cleanly.
 */
class EvictionTest {
    // 1 layer, 4 KiB entries, 16-token blocks: 64 KiB extents; a 1 MiB pool holds 16 of them.
    static final KvShape SHAPE = new KvShape(1, 16, 8, 128, DType.BF16);

    @TempDir
    Path root;

    KvConfig cfg() {
        return TestEngines.config(TestEngines.deviceDirs(root, 1), "portable")
                .deviceCapacityBytes(1L << 20)
                .blockTokens(16)
                .build();
    }

    static void write(KvEngine e, String id, int tokens) {
        try (KvSequence s = e.createSequence(id, SHAPE)) {
            TestEngines.append(s, id.hashCode(), tokens, 64);
            s.commit();
        }
    }

    @Test
    void evictsLeastRecentlyUsedUnheldSequencesFirst() throws Exception {
        java.util.concurrent.LinkedBlockingQueue<SequenceInfo> told = new java.util.concurrent.LinkedBlockingQueue<>();
        try (KvEngine e = KvEngine.open(cfg())) {
            e.addEvictionListener(told::add);
            write(e, "a", 5 * 16);
            write(e, "b", 5 * 16);
            write(e, "c", 5 * 16);
            try (KvSequence a = e.openSequence("a")) {
                assertNull(TestEngines.verify(a, "a".hashCode(), TestEngines.all(80))); // a is now most recent
            }
            write(e, "d", 5 * 16); // needs 5 extents, 1 free: evicts b (least recently used)
            List<String> ids = e.sequences().stream().map(SequenceInfo::id).toList();
            assertEquals(List.of("a", "c", "d"), ids.stream().sorted().toList());
            assertEquals(1, e.stats().evictions());
            SequenceInfo evicted = told.poll(10, java.util.concurrent.TimeUnit.SECONDS);
            assertEquals("b", evicted == null ? null : evicted.id(), "the listener is told");
            assertEquals(80, evicted.tokenCount());
        }
        try (KvEngine e = KvEngine.open(cfg())) {
            assertEquals(3, e.sequences().size(), "eviction is durable");
            for (String id : List.of("a", "c", "d")) {
                try (KvSequence s = e.openSequence(id)) {
                    assertNull(TestEngines.verify(s, id.hashCode(), TestEngines.all(80)));
                }
            }
        }
    }

    @Test
    void heldSequencesAreNeverEvictedAndAFullPoolFailsTheWriteWithoutLosingCommits() throws Exception {
        try (KvEngine e = KvEngine.open(cfg())) {
            write(e, "a", 8 * 16);
            write(e, "b", 7 * 16);
            KvSequence a = e.openSequence("a");
            KvSequence b = e.openSequence("b");
            try (KvSequence c = e.createSequence("c", SHAPE)) {
                KvCapacityException ex = assertThrows(KvCapacityException.class,
                        () -> TestEngines.append(c, 3, 3 * 16, 16));
                assertTrue(ex.getMessage().contains("is full") && ex.getMessage().contains("2 committed sequences are open"),
                        ex.getMessage());
                assertThrows(IllegalStateException.class, c::commit, "a sequence that lost a block cannot commit");
            }
            assertNull(TestEngines.verify(a, "a".hashCode(), TestEngines.all(128)));
            assertNull(TestEngines.verify(b, "b".hashCode(), TestEngines.all(112)));
            a.close(); // released: now evictable
            write(e, "c", 3 * 16);
            assertEquals(List.of("b", "c"), e.sequences().stream().map(SequenceInfo::id).sorted().toList());
            assertNull(TestEngines.verify(b, "b".hashCode(), TestEngines.all(112)));
            b.close();
        }
    }
}
