package io.kvoffload.bench.jmh;

import io.kvoffload.internal.cache.ClusterCache;
import io.kvoffload.internal.cache.CostEffectiveness;
import io.kvoffload.internal.cache.CostEffectivenessCache;
import io.kvoffload.internal.cache.LruClusterCache;
import java.util.SplittableRandom;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;

/**
 * One decoding step's cache update: 64 activated clusters out of 4,096, 80% drawn from a hot set.
 * Run with {@code -prof gc}: a step must allocate 0 B/op.
 */
public class ClusterCacheBench extends MicroBenchmark {
    @Param({"cost-effectiveness", "lru"})
    String policy;

    static final int CLUSTERS = 4096;
    static final int STEPS = 1024;
    ClusterCache cache;
    int[][] steps;
    int step;

    @Setup
    public void setup() {
        SplittableRandom rnd = new SplittableRandom(7);
        int[] entries = new int[CLUSTERS];
        for (int c = 0; c < CLUSTERS; c++) {
            entries[c] = 4 + rnd.nextInt(60);
        }
        ClusterCache.Sizes sizes = c -> entries[c] * 4096L;
        long budget = 2048L * 4096 * 16;
        cache = policy.equals("lru") ? new LruClusterCache(CLUSTERS, budget, sizes)
                : new CostEffectivenessCache(CLUSTERS, budget, 4096, sizes, CostEffectiveness.savedIoPerEntry(80_000, 3_000), null);
        steps = new int[STEPS][64];
        for (int[] s : steps) {
            for (int i = 0; i < s.length; i++) {
                s[i] = rnd.nextInt(10) < 8 ? rnd.nextInt(256) : rnd.nextInt(CLUSTERS);
            }
        }
    }

    @Benchmark
    public long step() {
        int[] s = steps[step++ & (STEPS - 1)];
        cache.step(s, s.length);
        return cache.usedBytes();
    }
}
