package io.kvoffload.testing;

import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import io.kvoffload.strategy.swarm.Swarm;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.DecodeOptions;
import io.kvoffload.KvConfig;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvEngine;
import io.kvoffload.KvException;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Issue #17 scenarios shared by the portable and io_uring test classes: closing an engine under
 * running decoders, and one handle used from two threads. Real pool files, real backends.
 */
public final class ConcurrencyScenarios {
    public static final KvShape SHAPE = new KvShape(2, 8, 2, 64, DType.BF16);
    static final int TOKENS = 1024;

    private ConcurrencyScenarios() {}

    /** Stores a clustered sequence {@code "a"} in a fresh engine over {@code dirs}; returns the config. */
    public static KvConfig prepare(Path root, String backend) throws Exception {
        KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(root, 2), backend).build();
        try (KvEngine e = KvEngine.open(cfg)) {
            TestEngines.storeClustered(e, "a", workload(), TOKENS, 100, 16);
        }
        return cfg;
    }

    static SyntheticWorkload workload() {
        return new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(5).build());
    }

    static float[][] queries() {
        SyntheticWorkload w = workload();
        float[][] q = new float[SHAPE.layers()][];
        for (int l = 0; l < q.length; l++) {
            q[l] = w.query(l, 3);
        }
        return q;
    }

    /**
     * Defect 2: {@code rounds} times, a thread decodes (two layers in flight) while the test thread
     * closes the engine. close() must return, and the decoder thread must stop with an exception
     * saying the engine (or its handle) was closed, never hang.
     */
    public static void closeWhileDecoding(KvConfig cfg, int rounds) {
        float[][] q = queries();
        assertTimeoutPreemptively(Duration.ofSeconds(120), () -> {
            for (int r = 0; r < rounds; r++) {
                KvEngine e = KvEngine.open(cfg);
                CountDownLatch decoding = new CountDownLatch(1);
                AtomicInteger steps = new AtomicInteger();
                ConcurrentLinkedQueue<Throwable> ended = new ConcurrentLinkedQueue<>();
                Thread t = Thread.ofPlatform().name("decoder-" + r).start(() -> {
                    try {
                        KvSequence s = e.openSequence("a");
                        KvDecoder d = s.decoder(DecodeOptions.builder().strategy(Swarm.defaults()).build());
                        while (true) {
                            KvView first = d.prefetch(0, q[0]);
                            KvView second = d.prefetch(1, q[1]);
                            first.await().tokenCount();
                            first.close();
                            second.await().tokenCount();
                            second.close();
                            steps.incrementAndGet();
                            decoding.countDown();
                        }
                    } catch (Throwable x) {
                        ended.add(x);
                        decoding.countDown();
                    }
                });
                decoding.await();
                // Vary the moment: sometimes mid-step, sometimes between steps.
                java.util.concurrent.locks.LockSupport.parkNanos((r % 5) * 200_000L);
                e.close();
                t.join();
                Throwable x = ended.peek();
                assertTrue(x instanceof IllegalStateException || x instanceof KvException,
                        "round " + r + ": the decoder thread ended with " + x);
                assertTrue(String.valueOf(x.getMessage()).toLowerCase().contains("closed"),
                        "round " + r + ": the message says the engine or handle was closed: " + x.getMessage());
            }
        }, "engine.close() with a decoder running must not hang");
    }

    /**
     * Defect 3: two threads step one decoder at once. The second thread to enter gets an
     * IllegalStateException naming the handle and both threads; nothing else goes wrong (no wrong
     * data, no other exception), and nothing spins or hangs.
     */
    public static void oneDecoderTwoThreads(KvConfig cfg) throws Exception {
        float[][] q = queries();
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.openSequence("a")) {
            KvDecoder d = s.decoder(DecodeOptions.builder().strategy(Swarm.defaults()).build());
            AtomicInteger conflicts = new AtomicInteger();
            ConcurrentLinkedQueue<Throwable> unexpected = new ConcurrentLinkedQueue<>();
            ConcurrentLinkedQueue<String> messages = new ConcurrentLinkedQueue<>();
            assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
                List<Thread> ts = new ArrayList<>();
                for (int k = 0; k < 2; k++) {
                    ts.add(Thread.ofPlatform().name("user-" + k).start(() -> {
                        for (int i = 0; i < 400; i++) {
                            try {
                                KvView v = d.prefetch(i % 2, q[i % 2]);
                                try {
                                    v.await();
                                } finally {
                                    v.close();
                                }
                            } catch (IllegalStateException x) {
                                if (x.getMessage().contains("in use by thread")) {
                                    conflicts.incrementAndGet();
                                    messages.add(x.getMessage());
                                }
                                // Other refusals (no free view, layer in flight) are the other
                                // thread's state showing through: allowed, never wrong data.
                            } catch (Throwable x) {
                                unexpected.add(x);
                            }
                        }
                    }));
                }
                for (Thread t : ts) {
                    t.join();
                }
            }, "two threads on one decoder must not hang or spin");
            assertTrue(unexpected.isEmpty(), "unexpected failures: " + unexpected);
            assertTrue(conflicts.get() > 0, "the concurrent use was detected");
            String m = messages.peek();
            assertTrue(m.contains("KvDecoder") && m.contains("user-0") && m.contains("user-1"), m);
            d.close();
        }
    }

    /** Defect 3 for sequences: two threads reading one handle get the same clear exception. */
    public static void oneSequenceTwoThreads(KvConfig cfg) throws Exception {
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.openSequence("a")) {
            AtomicInteger conflicts = new AtomicInteger();
            ConcurrentLinkedQueue<Throwable> unexpected = new ConcurrentLinkedQueue<>();
            assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
                List<Thread> ts = new ArrayList<>();
                for (int k = 0; k < 2; k++) {
                    ts.add(Thread.ofPlatform().name("reader-" + k).start(() -> {
                        try (Arena a = Arena.ofConfined()) {
                            MemorySegment keys = a.allocate(64L * SHAPE.halfEntryBytes());
                            MemorySegment values = a.allocate(64L * SHAPE.halfEntryBytes());
                            for (int i = 0; i < 300; i++) {
                                try {
                                    s.read(i % 2, (i * 37) % (TOKENS - 64), 64, keys, values);
                                } catch (IllegalStateException x) {
                                    if (x.getMessage().contains("in use by thread")) {
                                        conflicts.incrementAndGet();
                                    } else {
                                        unexpected.add(x);
                                    }
                                } catch (Throwable x) {
                                    unexpected.add(x);
                                }
                            }
                        }
                    }));
                }
                for (Thread t : ts) {
                    t.join();
                }
            });
            assertTrue(unexpected.isEmpty(), "unexpected failures: " + unexpected);
            assertTrue(conflicts.get() > 0, "the concurrent use was detected");
        }
    }
}
