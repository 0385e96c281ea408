package io.kvoffload.bench.jmh;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.bench.compare.KeysContext;
import io.kvoffload.bench.swarm.SelectionFixture;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.strategy.FetchPlan;
import io.kvoffload.strategy.LayerKv;
import io.kvoffload.strategy.LayerSelector;
import io.kvoffload.strategy.Strategies;
import io.kvoffload.workload.Rope;
import io.kvoffload.workload.Workload;
import io.kvoffload.workload.WorkloadFamily;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Issue #16's selection time: one decoding step's selection of one layer (Llama-3-8B's by default, 32
 * query heads on 8 KV heads × 128; {@code shape} names others) at a 10% budget, by a {@link io.kvoffload.internal.swarm.BlockMassStrategy}
 * variant ({@code strategy}: its int8 block summaries, per-head softmax shares, top blocks into a
 * {@link FetchPlan}), against the naive full scan of every token's float32 key in the same run
 * ({@link SelectionFixture}, as in {@link MedoidSelectionBench}). One thread, so one core. Run with
 * {@code -prof gc}: every benchmark must allocate 0 B/op (JMH's own bookkeeping aside).
 *
 * <p>Without {@code -p} options it measures what the target names: the default strategy ({@code
 * mass-auto}) per head group and token striped, over the keys and decoding queries of a model-like family
 * ({@code mixed-heads}) and of the original generator ({@code default}), each query turned one RoPE position
 * further than the one before, as a decoder's are.
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--add-modules=jdk.incubator.vector",
        "-XX:MaxDirectMemorySize=8g", "-Xmx8g"})
public class BlockMassSelectionBench {
    static final int SINKS = 4, WINDOW = 256;
    static final double BUDGET_SHARE = 0.1;
    static final long SEED = 24301;
    /**
     * Consecutive decoding queries a run cycles through: long enough that the jump back from the last
     * to the first (a query no decoder follows with) is rare, since a step's cost depends on how alike
     * consecutive queries are; 16 made it one step in sixteen.
     */
    static final int STEPS = 256;

    @State(Scope.Thread)
    public static class Mass {
        @Param({"131072", "1048576"})
        int tokens;

        /** The default strategy; {@code -p strategy=…} names any other block-mass variant (e.g. {@code mass-mix}). */
        @Param({"mass-auto"})
        String strategy;

        /**
         * {@code hashed}: keys without structure (every block alike, so pruning keeps few terms);
         * or a workload family's name (e.g. {@code mixed-heads}): its layer 0's keys and decoding
         * queries, where blocks differ as in a model and pruning keeps what matters.
         */
        @Param({"mixed-heads", "default"})
        String keys;

        /**
         * Head groups the plan says the layout stores a token as ({@code FetchPlan.headGroups}): 1
         * token-striped; 8 (every KV head apart) for the per-head strategies under head sharding.
         */
        @Param({"8", "1"})
        int headGroups;

        /**
         * The layer's shape as {@code queryHeads:kvHeads:headDim}: Llama-3-8B's by default; e.g.
         * {@code 71:1:64} (Falcon-7B's multi-query attention) or {@code 64:8:128} (Llama-3-70B's).
         */
        @Param({"32:8:128"})
        String shape;

        /**
         * Positions each decoding query is turned further than the one before (RoPE, Llama 3's θ =
         * 500,000): 0 keeps the workload's queries, which all sit at the position after the context; 1
         * turns them as a decoder's queries turn, one position a step, so that consecutive queries differ
         * in their fast-turning dimensions as they do in a model (what {@code BlockMassIndex} carries from
         * one step to the next depends on how alike consecutive queries are).
         */
        @Param({"1"})
        int turn;

        LayerSelector selector;
        FetchPlan plan = new FetchPlan();
        float[][] queries;
        int budget;
        int next;

        @Setup
        public void setup() {
            KvShape layerShape = shape(shape);
            Workload workload = keys.equals("hashed") ? null : WorkloadFamily.byName(keys).create(layerShape, tokens, SEED);
            LayerKv layer = workload == null
                    ? new SelectionFixture.HashedKeys(tokens, layerShape.kvHeads(), layerShape.headDim(), SEED)
                    : workload.layer(0);
            SplittableRandom r = new SplittableRandom(SEED ^ 0x5DEECE66DL);
            queries = new float[STEPS][];
            for (int k = 0; k < queries.length; k++) {
                if (workload != null) {
                    queries[k] = workload.query(0, 256 + k); // decoding steps, as select-eval scores them
                    turn(queries[k], layerShape.headDim(), (long) turn * k);
                    continue;
                }
                queries[k] = new float[layerShape.queryHeads() * layerShape.headDim()];
                for (int i = 0; i < queries[k].length; i++) {
                    queries[k][i] = (float) r.nextGaussian();
                }
            }
            // Opened with the first step's query, as a decoder opens a layer on its first prefetch.
            selector = Strategies.named(strategy).openLayer(new KeysContext(layerShape, 0, layer, SINKS, WINDOW, null, null,
                    headGroups, queries[0].clone()));
            budget = (int) Math.ceil(BUDGET_SHARE * tokens) - SINKS - WINDOW;
            plan.heads(layerShape.kvHeads(), headGroups);
            plan.ensureCapacity(budget + 64);
        }

        int step() {
            float[] q = queries[next];
            next = (next + 1) % STEPS;
            plan.begin(0, tokens, budget);
            selector.select(q, plan);
            return plan.size();
        }

        @TearDown
        public void tearDown() {
            selector.close();
        }
    }

    /**
     * One layer's keys in memory (a workload family's layer 0), opened again and again with its first
     * decoding query: what a decoder's first prefetch of a layer costs before it selects (the index
     * built, and for {@code mass-auto-cal} its three candidates and the query's exact attention).
     */
    @State(Scope.Thread)
    public static class Opening {
        @Param({"131072", "1048576"})
        int tokens;

        @Param({"mass-auto", "mass-auto-cal"})
        String strategy;

        @Param({"mixed-heads"})
        String keys;

        @Param({"8"})
        int headGroups;

        @Param({"32:8:128"})
        String shape;

        KvShape layerShape;
        LayerKv layer;
        float[] query;

        @Setup
        public void setup() {
            layerShape = shape(shape);
            Workload workload = WorkloadFamily.byName(keys).create(layerShape, tokens, SEED);
            layer = DenseLayerKv.materialize(workload.layer(0), false); // generating keys is not opening
            query = workload.query(0, 256);
        }

        long open() {
            try (LayerSelector selector = Strategies.named(strategy).openLayer(new KeysContext(layerShape, 0, layer, SINKS,
                    WINDOW, null, null, headGroups, query.clone()))) {
                return selector.memoryBytes();
            }
        }
    }

    @State(Scope.Thread)
    public static class Naive {
        @Param({"131072", "1048576"})
        int tokens;

        /** As {@link Mass#shape}. */
        @Param({"32:8:128"})
        String shape;

        SelectionFixture fixture;

        @Setup
        public void setup() {
            KvShape s = shape(shape);
            fixture = new SelectionFixture(true, tokens, s.queryHeads(), s.kvHeads(), s.headDim(), 16, BUDGET_SHARE, SEED);
        }

        @TearDown
        public void tearDown() {
            fixture.close();
        }
    }

    /** Turns every head of {@code query} by {@code positions} in Llama 3's RoPE ({@link Rope}, θ = 500,000). */
    static void turn(float[] query, int headDim, long positions) {
        Rope rope = new Rope(headDim, 500_000);
        for (int at = 0; positions != 0 && at < query.length; at += headDim) {
            rope.rotate(query, at, positions, query, at);
        }
    }

    /** One layer of {@code queryHeads:kvHeads:headDim}, BF16. */
    static KvShape shape(String spec) {
        String[] p = spec.split(":");
        try {
            if (p.length == 3) {
                return new KvShape(1, Integer.parseInt(p[0]), Integer.parseInt(p[1]), Integer.parseInt(p[2]), DType.BF16);
            }
        } catch (NumberFormatException e) {
            // falls through to the message below
        }
        throw new IllegalArgumentException("shape = '" + spec + "'; allowed: queryHeads:kvHeads:headDim, e.g. 32:8:128");
    }

    @Benchmark
    public int blockMass(Mass s) {
        return s.step();
    }

    /** Opening a layer ({@link Opening}), a whole index build an operation. */
    @Benchmark
    @BenchmarkMode(Mode.AverageTime)
    public long openLayer(Opening s) {
        return s.open();
    }

    @Benchmark
    public int naive(Naive s) {
        return s.fixture.step();
    }
}
