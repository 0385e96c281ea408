package io.kvoffload.bench.jmh;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.bench.compare.Strategies;
import io.kvoffload.internal.baseline.BaselineSelector;
import io.kvoffload.internal.swarm.ClusteringConfig;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.TearDown;

/**
 * One decoding step's token selection per strategy on a 32K-token synthetic layer (8 query heads
 * on 2 KV heads, head dim 128) at a 10% budget, cycling through 16 decoding queries. Run with
 * {@code -prof gc}: every strategy must allocate 0 B/op.
 */
public class SelectorBench extends MicroBenchmark {
    @Param({"oracle", "swarm", "quest", "infllm", "pqcache", "clusterkv", "sparq", "sparf"})
    String strategy;

    @Param({"32768"})
    int tokens;

    @Param({"0.1"})
    double budgetShare;

    Arena arena;
    BaselineSelector selector;
    float[][] queries;
    int[] out;
    int budget;
    int next;

    @Setup
    public void setup() {
        KvShape shape = new KvShape(1, 8, 2, 128, DType.BF16);
        WorkloadSpec spec = WorkloadSpec.builder(shape, tokens).seed(24301).build();
        SyntheticWorkload w = new SyntheticWorkload(spec);
        DenseLayerKv kv = DenseLayerKv.materialize(w.layer(0), false);
        List<float[]> profile = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            profile.add(w.query(0, 4 * i));
        }
        arena = Arena.ofConfined();
        selector = Strategies.build(strategy, kv, new Strategies.Params(8, 256, 24301, 0, spec.sinkTokens(), profile, 0.1,
                ClusteringConfig.defaults()), arena);
        queries = new float[16][];
        for (int i = 0; i < queries.length; i++) {
            queries[i] = w.query(0, 256 + i); // after the profiled steps, as in compare-quality
        }
        budget = (int) Math.round(budgetShare * tokens);
        out = new int[selector.maxSelected(budget)];
    }

    @TearDown
    public void tearDown() {
        arena.close();
    }

    @Benchmark
    public int select() {
        float[] q = queries[next];
        next = (next + 1) & 15;
        return selector.select(q, budget, out);
    }
}
