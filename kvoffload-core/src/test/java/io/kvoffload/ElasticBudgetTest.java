package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.strategy.kvswap.GroupOptions;
import io.kvoffload.strategy.kvswap.KvSwap;
import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.testing.KvViews;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Elastic DRAM budgets while decoding (SwiftCache's elastic pool, issue #15): two decoders on two
 * threads, one keeping hot clusters and one a reuse buffer in the engine's elastic pool, change their
 * cache budgets every few steps; every view stays bit-exact against the appended data, the cache
 * keeps serving entries, and shrinking returns the pool's chunks (measured through the engine's
 * DRAM accounting).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ElasticBudgetTest {
    static final KvShape SHAPE = KvDecoderTest.SHAPE;
    static final int TOKENS = KvDecoderTest.TOKENS;
    static final long[] BUDGETS = {0, 64L << 10, 512L << 10, 2L << 20, 128L << 10};

    @TempDir
    Path root;

    @Test
    void twoDecodersResizeWhileDecodingAndEveryViewIsBitExact() throws Exception {
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(21).build());
        byte[][][] expected = SwarmOfflinePhaseTest.expected(w);
        KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(root, 2), "portable").blockTokens(16).build();
        try (KvEngine e = KvEngine.open(cfg)) {
            TestEngines.storeClustered(e, "hot", w, TOKENS, 100, 16);
            try (KvSequence s = e.createSequence("groups", SHAPE)) {
                SwarmOfflinePhaseTest.store(s, w);
                for (int l = 0; l < SHAPE.layers(); l++) {
                    KvSwap.groupLayer(s, l, GroupOptions.defaults().withGroupSize(4));
                }
                s.commit();
            }
            assertEquals(0, e.elasticDramReservedBytes());
            DecodeOptions hot = DecodeOptions.builder().strategy(Swarm.defaults()).cacheBytes(256L << 10).build();
            DecodeOptions groups = DecodeOptions.builder().strategy(KvSwap.defaults().withReuseSlots(64))
                    .budgetTokens(400).sinkTokens(4).localWindow(0).build();
            ExecutorService pool = Executors.newFixedThreadPool(2);
            try (KvSequence a = e.openSequence("hot"); KvSequence b = e.openSequence("groups");
                    KvDecoder da = a.decoder(hot); KvDecoder db = b.decoder(groups)) {
                List<Future<long[]>> runs = new ArrayList<>();
                runs.add(pool.submit(() -> decode(da, w, expected, 0)));
                runs.add(pool.submit(() -> decode(db, w, expected, 2)));
                long[] ra = runs.get(0).get(100, TimeUnit.SECONDS);
                long[] rb = runs.get(1).get(100, TimeUnit.SECONDS);
                assertTrue(ra[0] > 0, "the hot-cluster cache served entries across resizes: " + da.stats());
                assertTrue(rb[1] > 0, "the reuse buffer served groups across resizes: " + db.stats());
                // Both at their largest budget, then both at zero: the caches' units go back, and every
                // chunk that empties with them leaves the pool and the DRAM tier's accounting. Slabs
                // (views, staging, sinks) stay, so the DRAM tier's figure is compared against them.
                long slabs = e.stats().dramReservedBytes() - e.elasticDramReservedBytes();
                da.setCacheBytes(2L << 20);
                db.setCacheBytes(2L << 20);
                long grown = e.elasticDramReservedBytes();
                long grownDram = e.stats().dramReservedBytes();
                long caches = da.cacheBytes() + db.cacheBytes();
                assertTrue(grown >= caches && da.cacheBytes() > 0 && db.cacheBytes() > 0,
                        "chunks " + grown + " hold both caches: " + da.cacheBytes() + " + " + db.cacheBytes());
                assertEquals(slabs + grown, grownDram, "elastic chunks count in the DRAM tier's reserved bytes");
                assertEquals(0, da.setCacheBytes(0));
                assertEquals(0, db.setCacheBytes(0));
                long shrunk = e.elasticDramReservedBytes();
                long windows = da.stats().windowBytes() + db.stats().windowBytes();
                assertTrue(shrunk < grown && shrunk <= grown - caches + (2L << 20),
                        "chunks " + grown + " -> " + shrunk + " after giving back " + caches + " bytes of caches"
                        + " (windows hold " + windows + ")");
                assertEquals(slabs + shrunk, e.stats().dramReservedBytes(), "DRAM reserved falls with the chunks");
                // Decoding goes on at zero budget, still exact.
                try (KvView v = da.prefetch(0, w.query(0, 7)).await()) {
                    KvViews.assertBitExact(v, expected[0]);
                }
            } finally {
                pool.shutdownNow();
            }
            assertEquals(0, e.elasticDramReservedBytes(), "closed decoders' windows and caches freed every chunk");
        }
    }

    /** Steps with a budget change every 3 steps; returns {tokens served from the hot cache, reuse hits}. */
    private static long[] decode(KvDecoder d, SyntheticWorkload w, byte[][][] expected, int phase) {
        for (int step = 0; step < 60; step++) {
            if (step % 3 == 0) {
                long want = BUDGETS[(step / 3 + phase) % BUDGETS.length];
                long held = d.setCacheBytes(want);
                assertTrue(held <= want, "held " + held + " over the budget " + want);
                assertEquals(held, d.cacheBytes());
            }
            KvView v0 = d.prefetch(0, w.query(0, 200 + step % 24));
            KvView v1 = d.prefetch(1, w.query(1, 200 + step % 24));
            try (KvView v = v0.await()) {
                KvViews.assertBitExact(v, expected[0]);
            }
            try (KvView v = v1.await()) {
                KvViews.assertBitExact(v, expected[1]);
            }
        }
        DecodeStats s = d.stats();
        return new long[] {s.tokensCached(), s.reuseHits()};
    }

    @Test
    void resizingIsRefusedDuringAFetchAndWithoutRoom() throws Exception {
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, 2048).seed(3).build());
        KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(root, 1), "portable").blockTokens(16).build();
        try (KvEngine e = KvEngine.open(cfg)) {
            TestEngines.storeClustered(e, "s", w, 2048, 100, 8);
            try (KvSequence s = e.openSequence("s");
                    KvDecoder d = s.decoder(DecodeOptions.builder().strategy(Swarm.defaults()).cacheBytes(64L << 10)
                            .build())) {
                KvView v = d.prefetch(0, w.query(0, 1));
                var busy = assertThrows(IllegalStateException.class, () -> d.setCacheBytes(1L << 20));
                assertTrue(busy.getMessage().contains("in flight"), busy.getMessage());
                v.await().close();
                long held = d.setCacheBytes(64L << 10);
                assertTrue(held > 0, "layer 0 is open and holds units");
                // The engine's cap can never drop below what decoders hold ...
                var low = assertThrows(IllegalArgumentException.class, () -> e.setElasticDramBytes(4096));
                assertTrue(low.getMessage().contains("elastic DRAM budget = 4096"), low.getMessage());
                // ... and growing past it is refused whole, leaving the budget as it was.
                e.setElasticDramBytes(e.elasticDramReservedBytes());
                assertThrows(KvDramExhaustedException.class, () -> d.setCacheBytes(8L << 20));
                assertEquals(held, d.cacheBytes());
                var neg = assertThrows(IllegalArgumentException.class, () -> d.setCacheBytes(-1));
                assertTrue(neg.getMessage().contains("bytes = -1"), neg.getMessage());
                e.setElasticDramBytes(cfg.dramBudgetBytes());
                assertTrue(d.setCacheBytes(1L << 20) > held);
            }
        }
    }
}
