package io.kvoffload.bench.jmh;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.internal.kvswap.CompressedKCache;
import io.kvoffload.internal.kvswap.GroupPredictor;
import io.kvoffload.internal.kvswap.LowRankAdapter;
import io.kvoffload.internal.kvswap.MappingTable;
import io.kvoffload.internal.kvswap.ReuseBuffer;
import io.kvoffload.internal.kvswap.ReusePlan;
import io.kvoffload.internal.kvswap.RollingBuffer;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;

/**
 * One KVSwap prediction step for one layer at 32K tokens: low-rank query, scores of every token
 * against the compressed K cache, ReduceMax per group of 4, top-100 groups ({@code predict}); and
 * the same followed by the reuse-buffer lookup and the mapping table ({@code predictAndPlan}), the
 * whole per-step decision. Run with {@code -prof gc}: both must allocate 0 B/op.
 */
public class GroupPredictionBench extends MicroBenchmark {
    @Param({"32768"})
    int tokens;

    @Param({"F32", "F16", "BF16"})
    String storage;

    /** Query heads 8 on 2 KV heads of 128; r = 128 (the head dimension, σ = 2); G = 4; MG = 400. */
    static final KvShape SHAPE = new KvShape(1, 8, 2, 128, DType.BF16);
    static final int GROUP = 4;
    static final int BUDGET = 400;
    static final int QUERIES = 16;

    GroupPredictor predictor;
    float[][] queries;
    int[] positions;
    int[] groups;
    ReuseBuffer reuse;
    ReusePlan plan;
    MappingTable table;
    RollingBuffer rolling;
    int step;

    @Setup
    public void setup() {
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, tokens).seed(1).build());
        DenseLayerKv kv = DenseLayerKv.materialize(w.layer(0), false);
        LowRankAdapter adapter = LowRankAdapter.fit(kv, SHAPE.headDim(), 2048, 1);
        CompressedKCache cache = new CompressedKCache(adapter, DType.valueOf(storage), tokens);
        cache.appendFrom(kv, 0, tokens);
        predictor = new GroupPredictor(cache, SHAPE.queryHeads(), GROUP, tokens);
        queries = new float[QUERIES][];
        for (int s = 0; s < QUERIES; s++) {
            queries[s] = w.query(0, s); // consecutive steps: realistic overlap for the reuse buffer
        }
        int m = GroupPredictor.groupsFor(BUDGET, GROUP);
        positions = new int[predictor.maxSelected(BUDGET)];
        groups = new int[m];
        reuse = new ReuseBuffer(1, m, ReuseBuffer.Policy.FIFO);
        plan = reuse.newPlan();
        table = new MappingTable(m, 1);
        rolling = new RollingBuffer(GROUP, 1);
        rolling.reset(tokens + 2);
    }

    @Benchmark
    public int predict() {
        return predictor.select(queries[step++ & (QUERIES - 1)], BUDGET, positions);
    }

    @Benchmark
    public int predictAndPlan() {
        int n = predictor.selectGroups(queries[step++ & (QUERIES - 1)], groups.length, groups);
        reuse.request(0, groups, n, plan);
        return table.build(plan, rolling).blocks();
    }
}
