package io.kvoffload.internal.baseline;

import io.kvoffload.internal.swarm.SwarmSelector;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.swarm.ClusterRadius;
import io.kvoffload.internal.swarm.ClusteringConfig;
import io.kvoffload.strategy.DenseLayerKv;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/** Test layers and every selector built the same way on one of them. */
public final class Layers {
    private Layers() {}

    /**
     * A layer of random keys and values. With {@code coarse} every key element is one of −2..2, so
     * scores tie often and tie-breaking is exercised.
     */
    static DenseLayerKv random(int tokens, int kvHeads, int headDim, boolean coarse, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        float[][] k = new float[kvHeads][tokens * headDim];
        float[][] v = new float[kvHeads][tokens * headDim];
        for (int h = 0; h < kvHeads; h++) {
            for (int i = 0; i < k[h].length; i++) {
                k[h][i] = coarse ? rnd.nextInt(5) - 2 : (float) gaussian(rnd);
                v[h][i] = (float) gaussian(rnd);
            }
        }
        return new DenseLayerKv(tokens, headDim, k, v);
    }

    /** A random query of {@code queryHeads × headDim} floats (coarse: −2..2 integers). */
    static float[] query(int queryHeads, int headDim, boolean coarse, SplittableRandom rnd) {
        float[] q = new float[queryHeads * headDim];
        for (int i = 0; i < q.length; i++) {
            q[i] = coarse ? rnd.nextInt(5) - 2 : (float) gaussian(rnd);
        }
        return q;
    }

    static double gaussian(SplittableRandom rnd) {
        double u = Math.max(1e-12, rnd.nextDouble()), w = rnd.nextDouble();
        return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * w);
    }

    /** Names of every strategy {@link #build} knows. */
    static final List<String> NAMES = List.of("oracle", "quest", "infllm", "pqcache", "clusterkv", "sparq", "sparf", "swarm");

    /**
     * Builds one strategy on {@code kv} with parameters scaled to a small layer (a window of 8, 4
     * sinks, short blocks), deterministic in {@code seed}.
     */
    static BaselineSelector build(String name, DenseLayerKv kv, int queryHeads, long seed, Arena arena) {
        int window = 8;
        return switch (name) {
            case "oracle" -> new OracleSelector(kv, queryHeads);
            case "quest" -> new QuestSelector(kv, queryHeads, 4);
            case "infllm" -> new InfLLMSelector(kv, queryHeads, 4, window, 8, 2, InfLLMSelector.BUDGET_DERIVED);
            case "pqcache" -> new PQCacheSelector(kv, queryHeads, 4, window, 2, 8, 5, 256, seed);
            case "clusterkv" -> new ClusterKVSelector(kv, queryHeads, 4, 6, 5, 256, seed);
            case "sparq" -> new SparQSelector(kv, queryHeads, Math.max(1, kv.headDim() / 4), window);
            case "sparf" -> new SparFSelector(kv, queryHeads, Math.max(1, kv.headDim() / 4), window, 4);
            case "swarm" -> {
                SplittableRandom rnd = new SplittableRandom(seed);
                List<float[]> profile = new ArrayList<>();
                for (int i = 0; i < 12; i++) {
                    profile.add(query(queryHeads, kv.headDim(), false, rnd));
                }
                ClusteringConfig config = ClusteringConfig.defaults().withRadius(ClusterRadius.fixed(0.5))
                        .withIsolatedPolicy(io.kvoffload.internal.swarm.IsolatedEntryPolicy.POSITIONAL_BLOCKS, 4)
                        .withParallelism(1);
                yield SwarmSelector.build(kv, queryHeads, profile, 0.2, config, 4, window, arena);
            }
            default -> throw new IllegalArgumentException("unknown strategy " + name);
        };
    }

    /** Asserts that {@code r} throws an IllegalArgumentException whose message holds every part. */
    public static void assertMessage(Runnable r, String... parts) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, r::run);
        for (String s : parts) {
            assertTrue(e.getMessage().contains(s), "message \"" + e.getMessage() + "\" lacks \"" + s + "\"");
        }
    }

    /** Selects into a fresh array sized by maxSelected and returns the positions. */
    public static int[] select(BaselineSelector s, float[] q, int budget) {
        int[] out = new int[s.maxSelected(budget)];
        int n = s.select(q, budget, out);
        return java.util.Arrays.copyOf(out, n);
    }
}
