package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.testing.TestEngines;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue #17, defect 1: the exclusive append grant is checked and recorded atomically, so racing
 * openers never get two append handles, nor a reader beside one.
 */
class HandleGrantRaceTest {
    static final KvShape SHAPE = new KvShape(2, 8, 2, 16, DType.BF16);
    static final KvShape WIDE = new KvShape(32, 1, 1, 16, DType.BF16);

    @TempDir
    Path root;

    @Test
    void racingOpenersNeverGetTwoAppendHandlesNorAReaderBesideOne() throws Exception {
        KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(root, 2), "portable").blockTokens(4)
                .deviceCapacityBytes(64L << 20).build();
        try (KvEngine e = KvEngine.open(cfg)) {
            // Many layers and blocks make opening a handle (copying its block tables) take a while,
            // which is the window the old check left open.
            try (KvSequence s = e.createSequence("shared", WIDE)) {
                TestEngines.append(s, 3, 400, 400);
                s.commit();
            }
            int threads = 8;
            int perThread = 500; // 4,000 opens in all
            AtomicInteger writers = new AtomicInteger();
            AtomicInteger readers = new AtomicInteger();
            AtomicInteger appendGrants = new AtomicInteger();
            ConcurrentLinkedQueue<String> violations = new ConcurrentLinkedQueue<>();
            CyclicBarrier start = new CyclicBarrier(threads);
            List<Thread> ts = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                boolean appendFirst = t % 2 == 0;
                ts.add(Thread.ofPlatform().start(() -> {
                    for (int i = 0; i < perThread; i++) {
                        // Every round starts all threads together on a free sequence: the grant
                        // itself is contended, not a handle that is already held.
                        try {
                            start.await();
                        } catch (Exception ex) {
                            throw new RuntimeException(ex);
                        }
                        boolean append = (i % 2 == 0) == appendFirst;
                        KvSequence h;
                        try {
                            h = append ? e.openSequenceForAppend("shared") : e.openSequence("shared");
                        } catch (IllegalStateException refused) {
                            continue; // refused while another handle holds it: allowed
                        }
                        try {
                            // Counted after the grant and uncounted before the release, so the
                            // counters never show more handles than the engine granted.
                            if (append) {
                                appendGrants.incrementAndGet();
                                int w = writers.incrementAndGet();
                                int r = readers.get();
                                if (w != 1 || r != 0) {
                                    violations.add("append granted beside " + (w - 1) + " writer(s), " + r
                                            + " reader(s)");
                                }
                                java.util.concurrent.locks.LockSupport.parkNanos(20_000);
                                writers.decrementAndGet();
                            } else {
                                readers.incrementAndGet();
                                int w = writers.get();
                                if (w != 0) {
                                    violations.add("reader granted beside " + w + " writer(s)");
                                }
                                java.util.concurrent.locks.LockSupport.parkNanos(20_000);
                                readers.decrementAndGet();
                            }
                        } finally {
                            h.close();
                        }
                    }
                }));
            }
            assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
                for (Thread t : ts) {
                    t.join();
                }
            });
            assertTrue(violations.isEmpty(), violations.size() + " violations, e.g. " + violations.peek());
            assertTrue(appendGrants.get() > 0, "some append grants happened");
            assertEquals(0, e.sequences().get(0).openHandles(), "every grant was released");
            try (KvSequence w = e.openSequenceForAppend("shared")) {
                assertEquals(400, w.tokenCount(), "still exclusive and intact after the race");
            }
        }
    }

    @Test
    void firstCommitMakesTheCreatorTheAppendHolder() throws Exception {
        KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(root, 1), "portable").blockTokens(4).build();
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.createSequence("fresh", SHAPE)) {
            TestEngines.append(s, 1, 5, 5);
            s.commit();
            var refused = org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
                    () -> e.openSequence("fresh"));
            assertTrue(refused.getMessage().contains("open for append"), refused.getMessage());
        }
    }
}
