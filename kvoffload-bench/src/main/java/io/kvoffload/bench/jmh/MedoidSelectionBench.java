package io.kvoffload.bench.jmh;

import io.kvoffload.bench.swarm.SelectionFixture;
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
 * Swarm Table 4, selection latency: one decoding step's selection on one Llama-3-8B-shaped layer
 * (32 query heads on 8 KV heads × 128, float32 keys) at 128K–1M tokens and a 10% budget.
 * {@code medoid}: {@code MedoidIndex} scoring of one medoid per 16-token cluster (the offline
 * clustering's mean size on the synthetic workload is 15.7–15.9) plus {@code ClusterSelection};
 * {@code naive}: the same scoring of every token's key plus the top 10% (see
 * {@link SelectionFixture}). Run with {@code -prof gc}: both must allocate 0 B/op.
 *
 * <p>The naive state holds 4 KiB of keys per token off-heap (4 GiB at 1M), which counts against the
 * direct-memory limit, hence the fork's {@code MaxDirectMemorySize}; each state is built only for
 * the benchmark that uses it.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-XX:MaxDirectMemorySize=8g"})
public class MedoidSelectionBench {
    /** Shape and setting shared by both states. */
    static final int QUERY_HEADS = 32, KV_HEADS = 8, HEAD_DIM = 128, CLUSTER_SIZE = 16;
    static final double BUDGET_SHARE = 0.1;
    static final long SEED = 24301;

    /** A fixture at {@code tokens} tokens, naive or medoid-indexed by the subclass. */
    @State(Scope.Thread)
    public abstract static class Fixture {
        @Param({"131072", "262144", "524288", "1048576"})
        int tokens;

        SelectionFixture fixture;

        private final boolean naive;

        Fixture(boolean naive) {
            this.naive = naive;
        }

        @Setup
        public void setup() {
            fixture = new SelectionFixture(naive, tokens, QUERY_HEADS, KV_HEADS, HEAD_DIM, CLUSTER_SIZE, BUDGET_SHARE, SEED);
        }

        @TearDown
        public void tearDown() {
            fixture.close();
        }
    }

    public static class Medoid extends Fixture {
        public Medoid() {
            super(false);
        }
    }

    public static class Naive extends Fixture {
        public Naive() {
            super(true);
        }
    }

    @Benchmark
    public int medoid(Medoid s) {
        return s.fixture.step();
    }

    @Benchmark
    public int naive(Naive s) {
        return s.fixture.step();
    }
}
