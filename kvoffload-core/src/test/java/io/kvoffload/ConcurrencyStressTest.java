package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import io.kvoffload.strategy.swarm.Swarm;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.testing.KvTestData;
import io.kvoffload.testing.TestEngines;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A bounded stress of everything at once on one engine: threads create, append, commit, read,
 * decode, delete and (through a small pool) evict, while the engine is finally closed under them.
 * Whatever interleaving happens: no deadlock or hang (a time limit), no data that differs from
 * what was committed, and only the library's own exceptions (a {@link KvException}, or an
 * {@link IllegalStateException} / {@link IllegalArgumentException} for a race the caller lost:
 * a sequence held, deleted or the engine closed).
 */
class ConcurrencyStressTest {
    static final KvShape SHAPE = new KvShape(2, 8, 2, 16, DType.BF16);

    @TempDir
    Path root;

    @Test
    void appendCommitReadDecodeDeleteEvictAndCloseAtOnce() {
        assertTimeoutPreemptively(Duration.ofSeconds(120), this::stress);
    }

    void stress() throws Exception {
        // A small pool, so that commits evict the least recently used sequences.
        KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(root, 2), "portable").blockTokens(16)
                .deviceCapacityBytes(1L << 20).build();
        Map<String, Integer> committed = new ConcurrentHashMap<>(); // id -> tokens (seed = id hash)
        ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
        ConcurrentLinkedQueue<Throwable> foreign = new ConcurrentLinkedQueue<>();
        AtomicInteger ops = new AtomicInteger();
        AtomicInteger next = new AtomicInteger();
        KvEngine e = KvEngine.open(cfg);
        int threads = 6;
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> workers = new ArrayList<>();
        for (int w = 0; w < threads; w++) {
            long seed = w;
            workers.add(Thread.ofPlatform().start(() -> {
                Random rnd = new Random(seed);
                try {
                    go.await();
                } catch (InterruptedException x) {
                    return;
                }
                for (int i = 0; i < 150; i++) {
                    try {
                        step(e, rnd, committed, wrong, next);
                        ops.incrementAndGet();
                    } catch (KvException | IllegalStateException | IllegalArgumentException expected) {
                        if (expected.getMessage() != null && expected.getMessage().contains("closed")) {
                            return; // the engine was closed under us: the clean end
                        }
                    } catch (Throwable t) {
                        foreign.add(t);
                        return;
                    }
                }
            }));
        }
        go.countDown();
        // Until commits have evicted and more than 50 operations ran (how long that takes depends on the
        // machine's load, so no fixed sleep), and at least 1.5 s of everything at once; the workers stop by
        // themselves after 150 steps.
        long start = System.nanoTime();
        while ((e.stats().evictions() == 0 || ops.get() <= 50 || System.nanoTime() - start < 1_500_000_000L)
                && workers.stream().anyMatch(Thread::isAlive)) {
            Thread.sleep(20);
        }
        long evictions = e.stats().evictions();
        e.close(); // under running threads: must neither hang nor break anything committed
        for (Thread t : workers) {
            t.join();
        }
        assertTrue(foreign.isEmpty(), "foreign exceptions: " + foreign);
        assertTrue(wrong.isEmpty(), "wrong data: " + wrong);
        assertTrue(ops.get() > 50, "too few operations ran: " + ops.get());
        assertTrue(evictions > 0, "the pool is small enough that commits evict");
        // Afterwards every sequence still listed reads back exactly as committed.
        try (KvEngine again = KvEngine.open(cfg)) {
            for (SequenceInfo info : again.sequences()) {
                try (KvSequence s = again.openSequence(info.id())) {
                    assertEquals(null, TestEngines.verify(s, seedOf(info.id()), TestEngines.all(s.tokenCount())),
                            info.id());
                    assertTrue(s.tokenCount() >= 16);
                }
            }
        }
    }

    static long seedOf(String id) {
        return id.hashCode();
    }

    static void step(KvEngine e, Random rnd, Map<String, Integer> committed, ConcurrentLinkedQueue<String> wrong,
            AtomicInteger next) throws java.io.IOException {
        List<String> ids = new ArrayList<>(committed.keySet());
        int kind = ids.isEmpty() ? 0 : rnd.nextInt(10);
        if (kind < 3) {
            String id = "c" + next.incrementAndGet();
            try (KvSequence s = e.createSequence(id, SHAPE)) {
                TestEngines.append(s, seedOf(id), 16 + rnd.nextInt(64), 16);
                s.commit();
                committed.put(id, s.tokenCount());
            }
        } else if (kind < 5) {
            String id = ids.get(rnd.nextInt(ids.size()));
            try (KvSequence s = e.openSequenceForAppend(id)) {
                TestEngines.append(s, seedOf(id), 1 + rnd.nextInt(20), 8);
                s.commit();
                committed.put(id, s.tokenCount());
            }
        } else if (kind < 7) {
            String id = ids.get(rnd.nextInt(ids.size()));
            try (KvSequence s = e.openSequence(id)) {
                String bad = TestEngines.verify(s, seedOf(id), TestEngines.all(s.tokenCount()));
                if (bad != null) {
                    wrong.add(id + ": " + bad);
                }
                int[] ids2 = s.tokenIds();
                for (int t = 0; t < ids2.length; t++) {
                    if (ids2[t] != KvTestData.tokenId(seedOf(id), t)) {
                        wrong.add(id + ": token id " + t);
                        break;
                    }
                }
            }
        } else if (kind < 9) {
            // Decode: fetch caller-chosen positions through the decoder's pipeline and compare.
            String id = ids.get(rnd.nextInt(ids.size()));
            try (KvSequence s = e.openSequence(id);
                    KvDecoder d = s.decoder(DecodeOptions.builder().strategy(Swarm.defaults()).cacheBytes(0).build())) {
                int n = s.tokenCount();
                int[] pos = {0, n / 2, n - 1};
                try (KvView v = d.prefetch(rnd.nextInt(SHAPE.layers()), pos, pos.length)) {
                    v.await();
                    if (v.tokenCount() < 0) {
                        wrong.add(id + ": negative view");
                    }
                }
            }
        } else {
            String id = ids.get(rnd.nextInt(ids.size()));
            if (e.deleteSequence(id)) {
                committed.remove(id);
            }
        }
    }
}
