package io.kvoffload.iouring;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.DecodeOptions;
import io.kvoffload.KvBatch;
import io.kvoffload.KvConfig;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.strategy.Strategies;
import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The decode hot path (medoid scoring, selection, Eq. 8 scheduling, one io_uring submission per
 * layer, CRC-checked gathering, cache update) allocates nothing on the Java heap once warm, with two
 * layers in flight: measured with the thread's allocation counter over windows of steps.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@ExtendWith(IoUringRequired.class)
class DecoderAllocationTest {
    static final KvShape SHAPE = new KvShape(2, 8, 2, 64, DType.BF16);
    static final int TOKENS = 4096;
    /** The most one window may allocate in a deoptimisation's one-off ({@link #assertNoAllocation}). */
    static final long ONE_OFF_BYTES = 8L << 10;

    @TempDir
    Path dir;

    @Test
    void decodeStepsAllocateNothing() throws Exception {
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(5).build());
        try (KvEngine e = clusteredEngine(w)) {
            float[][][] queries = queries(w);
            try (KvSequence s = e.openSequence("a");
                    KvDecoder d = s.decoder(DecodeOptions.builder().strategy(Swarm.defaults()).build())) {
                assertNoAllocation("swarm", d, queries, 600);
            }
            // The default strategy (mass-mix) over the same co-activation cluster layout.
            try (KvSequence s = e.openSequence("a"); KvDecoder d = s.decoder(DecodeOptions.defaults())) {
                assertNoAllocation(Strategies.defaultStrategy().name() + " over Swarm's clusters", d, queries, 3000);
            }
        }
    }

    /** An io_uring engine on two directories holding sequence "a": {@code w}'s layers, clustered by Swarm's offline phase. */
    private KvEngine clusteredEngine(SyntheticWorkload w) throws Exception {
        KvEngine e = KvEngine.open(TestEngines.config(TestEngines.deviceDirs(dir, 2), "io_uring").build());
        try {
            TestEngines.storeClustered(e, "a", w, TOKENS, 100, 32);
            return e;
        } catch (Exception | Error t) {
            e.close();
            throw t;
        }
    }

    /**
     * The elastic pool: after the hot-cluster caches shrink and grow again between steps (units given
     * back, chunks freed, units taken anew), decoding is allocation-free again once warm.
     */
    @Test
    void resizingTheCacheThenDecodingAllocatesNothing() throws Exception {
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(5).build());
        try (KvEngine e = clusteredEngine(w)) {
            float[][][] queries = queries(w);
            try (KvSequence s = e.openSequence("a");
                    KvDecoder d = s.decoder(DecodeOptions.builder().strategy(Swarm.defaults()).cacheBytes(1L << 20)
                            .build())) {
                for (int i = 0; i < 200; i++) {
                    step(d, queries[i % queries.length]);
                }
                long before = e.elasticDramReservedBytes();
                d.setCacheBytes(0);
                assertTrue(e.elasticDramReservedBytes() < before, "shrinking returned chunks: "
                        + e.elasticDramReservedBytes() + " of " + before + " (the windows keep theirs)");
                d.setCacheBytes(64L << 10);
                // Back to a budget that holds the layers, as decodeStepsAllocateNothing's: a cache under
                // pressure varies the reads per step, and the io_uring ring's per-slot request arrays
                // (InflightBatch) then keep growing for a while, which is not the pool's doing.
                d.setCacheBytes(8L << 20);
                assertNoAllocation("swarm after resizes", d, queries, 600);
                assertTrue(d.stats().tokensCached() > 0, "the resized cache serves entries: " + d.stats());
            }
        }
    }

    /** Batched decoding: four sequences' selections, one shared submission per layer, views awaited one by one. */
    @Test
    void aBatchDecodesWithoutAllocating() throws Exception {
        KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(dir, 2), "io_uring").build();
        try (KvEngine e = KvEngine.open(cfg)) {
            int n = 4;
            SyntheticWorkload[] w = new SyntheticWorkload[n];
            List<KvSequence> seqs = new ArrayList<>();
            List<KvDecoder> decs = new ArrayList<>();
            float[][][][] queries = new float[16][SHAPE.layers()][n][];
            for (int i = 0; i < n; i++) {
                w[i] = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, 2048).seed(5 + i).build());
                TestEngines.storeClustered(e, "s" + i, w[i], 2048, 100, 16);
                for (int q = 0; q < queries.length; q++) {
                    for (int l = 0; l < SHAPE.layers(); l++) {
                        queries[q][l][i] = w[i].query(l, q);
                    }
                }
            }
            try {
                for (int i = 0; i < n; i++) {
                    seqs.add(e.openSequence("s" + i));
                    decs.add(seqs.get(i).decoder(DecodeOptions.defaults()));
                }
                KvBatch batch = KvBatch.of(decs);
                KvView[] first = new KvView[n];
                KvView[] second = new KvView[n];
                assertNoAllocation("batch of " + n, (float[][][] q) -> {
                    batch.prefetch(0, q[0], first);
                    batch.prefetch(1, q[1], second);
                    for (int i = 0; i < n; i++) {
                        first[i].await().close();
                    }
                    for (int i = 0; i < n; i++) {
                        second[i].await().close();
                    }
                }, queries, 600);
            } finally {
                for (KvDecoder d : decs) {
                    d.close();
                }
                for (KvSequence s : seqs) {
                    s.close();
                }
            }
        }
    }

    /** The default strategy over its own positional layout. */
    @Test
    void theDefaultStrategyDecodesWithoutAllocating() throws Exception {
        assertStrategyAllocatesNothing(Strategies.defaultStrategy(), DecodeOptions.defaults());
    }

    /**
     * The default strategy where the layout stores KV-head groups apart: per-head-group sets, only
     * the wanted groups read, views with rows that hold some heads.
     */
    @Test
    void theDefaultStrategyDecodesPerHeadWithoutAllocating() throws Exception {
        assertStrategyAllocatesNothing(Strategies.defaultStrategy(), DecodeOptions.defaults(),
                io.kvoffload.Placement.HEAD_SHARDED);
    }

    /** A baseline through the same pipeline: Quest's page bounds pick the positions, the decoder fetches them. */
    @Test
    void aBaselineStrategyDecodesWithoutAllocating() throws Exception {
        assertStrategyAllocatesNothing(Strategies.named("quest"), DecodeOptions.builder().strategy("quest").build());
    }

    /** KVSwap's groups: prediction, reuse buffer, group reads and verification, on io_uring. */
    @Test
    void kvswapDecodesWithoutAllocating() throws Exception {
        assertStrategyAllocatesNothing(Strategies.named("kvswap"), DecodeOptions.builder()
                .strategy("kvswap").budgetTokens(256).build());
    }

    /** InstInfer's SparF from flash: step 1's dimension slices (an auxiliary read), scoring, then page groups. */
    @Test
    void sparfFromFlashDecodesWithoutAllocating() throws Exception {
        assertStrategyAllocatesNothing(Strategies.named("sparf"), DecodeOptions.builder().strategy("sparf").build());
    }

    private void assertStrategyAllocatesNothing(SelectionStrategy strategy, DecodeOptions o) throws Exception {
        assertStrategyAllocatesNothing(strategy, o, io.kvoffload.Placement.TOKEN_STRIPED);
    }

    private void assertStrategyAllocatesNothing(SelectionStrategy strategy, DecodeOptions o,
            io.kvoffload.Placement placement) throws Exception {
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(5).build());
        KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(dir, 2), "io_uring").placement(placement).build();
        try (KvEngine e = KvEngine.open(cfg)) {
            TestEngines.storeLaidOut(e, "q", w, TOKENS, strategy);
            float[][][] queries = queries(w);
            try (KvSequence s = e.openSequence("q"); KvDecoder d = s.decoder(o)) {
                // Scoring loops other than Swarm's compile later: a longer warm-up (steps take ~1 ms).
                assertNoAllocation(strategy.name() + " " + placement, d, queries, 3000);
                assertTrue(d.stats().bytesRead() > 0, "read from the SSDs: " + d.stats());
                if (placement == io.kvoffload.Placement.HEAD_SHARDED) {
                    boolean partial = false;
                    for (int q = 0; q < queries.length && !partial; q++) {
                        try (KvView v = d.prefetch(0, queries[q][0]).await()) {
                            partial = v.partialRows();
                        }
                    }
                    assertTrue(partial, "per-head sets read some tokens for one head group only");
                }
            }
        }
    }

    /**
     * Warms {@code d} up, then counts the thread's allocated bytes over five windows of 100 steps. An
     * allocation on the path, even one object in a hundred steps, shows in every window, so at least
     * three must allocate nothing. A JIT deoptimisation rematerialises the objects escape analysis
     * had eliminated, once, in whichever window it falls: a few strings and buffers, 0.2–4 KiB in this
     * test's runs (a type check or a branch first taken thousands of steps in). So up to two windows
     * may hold such a one-off, each under {@link #ONE_OFF_BYTES}.
     */
    private static void assertNoAllocation(String what, KvDecoder d, float[][][] queries, int warmUp) {
        assertNoAllocation(what, (float[][] q) -> step(d, q), queries, warmUp);
    }

    private static <Q> void assertNoAllocation(String what, java.util.function.Consumer<Q> step,
            Q[] queries, int warmUp) {
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        for (int i = 0; i < warmUp; i++) {
            step.accept(queries[i % queries.length]);
        }
        int rounds = 100;
        List<Long> windows = new ArrayList<>();
        for (int win = 0; win < 5; win++) {
            long before = threads.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < rounds; i++) {
                step.accept(queries[i % queries.length]);
            }
            windows.add(threads.getCurrentThreadAllocatedBytes() - before);
        }
        long zero = windows.stream().filter(b -> b == 0).count();
        assertTrue(zero >= 3, what + ": bytes allocated per window of " + rounds + " decode steps: " + windows);
        assertTrue(windows.stream().allMatch(b -> b < ONE_OFF_BYTES), what + ": bytes per window: " + windows);
    }

    /** 16 steps' queries, per layer. */
    private static float[][][] queries(SyntheticWorkload w) {
        float[][][] queries = new float[16][SHAPE.layers()][];
        for (int q = 0; q < queries.length; q++) {
            for (int l = 0; l < SHAPE.layers(); l++) {
                queries[q][l] = w.query(l, q);
            }
        }
        return queries;
    }

    private static void step(KvDecoder d, float[][] q) {
        KvView first = d.prefetch(0, q[0]);
        KvView second = d.prefetch(1, q[1]);
        first.await().close();
        second.await().close();
    }
}
