package io.kvoffload.internal.baseline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.attention.ExactAttention;
import io.kvoffload.attention.QualityMetrics;
import io.kvoffload.internal.kvswap.CompressedKCache;
import io.kvoffload.internal.kvswap.GroupPredictor;
import io.kvoffload.internal.kvswap.LowRankAdapter;
import io.kvoffload.internal.select.TokenSelector;
import io.kvoffload.strategy.DenseLayerKv;
import java.lang.foreign.Arena;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;

/**
 * Quality properties of every selection strategy (issue #16), on small random layers: at a 100%
 * budget the sparse output is dense attention's; a selection is a pure function of the keys, the
 * seed and the query; and, for the strategies that rank a fixed candidate order and take its head,
 * the selection only grows with the budget, so the attention-mass recall never decreases.
 *
 * <p>Why recall cannot decrease, strategy by strategy: each ranks a candidate order that does not
 * depend on the budget and takes a prefix of it until the budget is filled, so a larger budget takes
 * a longer prefix of the same order — the oracle (exact scores), Quest (page bounds), InfLLM (block
 * representatives), PQCache, SparQ and SparF (approximate token scores; sinks and window first),
 * ClusterKV (centroid scores), Swarm's selector (medoid scores, whole clusters until the budget is
 * reached, the last one overshooting rather than being skipped) and KVSwap's predictor (top-M groups,
 * M = ⌈budget/G⌉). The decoder's Swarm path ({@code ClusterSelection}) takes the same kind of
 * prefix, checked by {@link #clusterSelectionIsAPrefixOfOneOrder}. A strategy that skipped a unit
 * which no longer fits, or that re-partitioned by budget, would break this; none does.
 */
class QualityProperties {
    /** Every strategy: the baselines of {@link Layers} and KVSwap's group predictor. */
    static final List<String> ALL = Stream.concat(Layers.NAMES.stream(), Stream.of("kvswap")).toList();

    @Provide
    Arbitrary<String> strategies() {
        return Arbitraries.of(ALL);
    }

    /** At a budget of every token, every strategy's sparse attention output equals dense attention. */
    @Property(tries = 60)
    void fullBudgetOutputEqualsDenseAttention(@ForAll("strategies") String name,
            @ForAll @IntRange(min = 1, max = 300) int tokens, @ForAll @IntRange(min = 1, max = 2) int kvHeads,
            @ForAll @IntRange(min = 1, max = 3) int group, @ForAll long seed) {
        int headDim = 8;
        DenseLayerKv kv = Layers.random(tokens, kvHeads, headDim, false, seed);
        try (Arena arena = Arena.ofConfined()) {
            TokenSelector s = build(name, kv, kvHeads * group, seed, arena);
            float[] q = Layers.query(kvHeads * group, headDim, false, new SplittableRandom(seed));
            int[] all = select(s, q, tokens);
            ExactAttention attention = new ExactAttention(kvHeads * group, kvHeads, headDim);
            float[] dense = attention.compute(kv, q).output();
            float[] sparse = attention.sparseOutput(kv, q, all);
            assertTrue(QualityMetrics.relativeError(dense, sparse) < 1e-5, name + ": relative error "
                    + QualityMetrics.relativeError(dense, sparse));
        }
    }

    /** Two builds from the same keys and seed select the same tokens for the same queries (KVSwap included). */
    @Property(tries = 40)
    void selectionIsDeterministicForASeed(@ForAll("strategies") String name,
            @ForAll @IntRange(min = 20, max = 300) int tokens, @ForAll @IntRange(min = 1, max = 100) int budget,
            @ForAll long seed) {
        DenseLayerKv kv = Layers.random(tokens, 2, 8, false, seed);
        try (Arena arena = Arena.ofConfined()) {
            TokenSelector a = build(name, kv, 4, seed, arena);
            TokenSelector b = build(name, kv, 4, seed, arena);
            SplittableRandom rnd = new SplittableRandom(seed ^ 0x55);
            for (int step = 0; step < 3; step++) {
                float[] q = Layers.query(4, 8, false, rnd);
                assertArrayEquals(select(a, q, budget), select(b, q, budget), name);
            }
        }
    }

    /** The selection at a budget holds the one at any smaller budget, so recall never decreases. */
    @Property(tries = 150)
    void recallNeverDecreasesAsTheBudgetGrows(@ForAll("strategies") String name,
            @ForAll @IntRange(min = 16, max = 300) int tokens, @ForAll @IntRange(min = 1, max = 2) int kvHeads,
            @ForAll @IntRange(min = 1, max = 300) int small, @ForAll @IntRange(min = 0, max = 200) int more,
            @ForAll boolean coarse, @ForAll long seed) {
        DenseLayerKv kv = Layers.random(tokens, kvHeads, 8, coarse, seed);
        try (Arena arena = Arena.ofConfined()) {
            TokenSelector s = build(name, kv, kvHeads * 2, seed, arena);
            float[] q = Layers.query(kvHeads * 2, 8, coarse, new SplittableRandom(seed + 3));
            int[] a = select(s, q, small);
            int[] b = select(s, q, small + more);
            BitSet larger = new BitSet();
            Arrays.stream(b).forEach(larger::set);
            for (int t : a) {
                assertTrue(larger.get(t), name + ": token " + t + " selected at budget " + small + " but not at "
                        + (small + more));
            }
            float[] w = new ExactAttention(kvHeads * 2, kvHeads, 8).weights(kv, q);
            assertTrue(QualityMetrics.attentionMassRecall(w, b) >= QualityMetrics.attentionMassRecall(w, a) - 1e-9, name);
        }
    }

    /** The decoder's cluster choice: a larger budget takes every cluster a smaller one took. */
    @Property(tries = 200)
    void clusterSelectionIsAPrefixOfOneOrder(@ForAll @IntRange(min = 1, max = 200) int clusters,
            @ForAll @IntRange(min = 0, max = 2000) int small, @ForAll @IntRange(min = 0, max = 2000) int more,
            @ForAll boolean ties, @ForAll long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        float[] scores = new float[clusters];
        int[] sizes = new int[clusters];
        for (int c = 0; c < clusters; c++) {
            scores[c] = ties ? rnd.nextInt(4) : (float) Layers.gaussian(rnd);
            sizes[c] = 1 + rnd.nextInt(40);
        }
        io.kvoffload.internal.swarm.ClusterSelection sel = new io.kvoffload.internal.swarm.ClusterSelection(clusters);
        int[] a = new int[clusters], b = new int[clusters];
        int na = sel.select(scores, sizes, clusters, small, a);
        int nb = sel.select(scores, sizes, clusters, small + more, b);
        BitSet larger = new BitSet();
        for (int i = 0; i < nb; i++) {
            larger.set(b[i]);
        }
        for (int i = 0; i < na; i++) {
            assertTrue(larger.get(a[i]), "cluster " + a[i] + " taken at " + small + " but not at " + (small + more));
        }
    }

    private static TokenSelector build(String name, DenseLayerKv kv, int queryHeads, long seed, Arena arena) {
        if (!name.equals("kvswap")) {
            return Layers.build(name, kv, queryHeads, seed, arena);
        }
        // KVSwap's predictor over a full-rank random adapter (seeded): the selection logic, not the SVD, is under test.
        int kvHeads = kv.kvHeads(), d = kv.headDim(), n = kv.tokens();
        SplittableRandom rnd = new SplittableRandom(seed);
        float[] projection = new float[kvHeads * d * kvHeads * d];
        for (int i = 0; i < projection.length; i++) {
            projection[i] = (float) Layers.gaussian(rnd);
        }
        LowRankAdapter a = LowRankAdapter.of(kvHeads, d, kvHeads * d, projection);
        CompressedKCache cache = new CompressedKCache(a, DType.F32, n);
        float[] rows = new float[n * kvHeads * d];
        for (int h = 0; h < kvHeads; h++) {
            float[] k = kv.keyArray(h);
            for (int t = 0; t < n; t++) {
                System.arraycopy(k, t * d, rows, (t * kvHeads + h) * d, d);
            }
        }
        cache.append(rows, 0, n);
        return new GroupPredictor(cache, queryHeads, 4);
    }

    private static int[] select(TokenSelector s, float[] q, int budget) {
        int[] out = new int[s.maxSelected(budget)];
        int n = s.select(q, budget, out);
        return Arrays.copyOf(out, n);
    }
}
