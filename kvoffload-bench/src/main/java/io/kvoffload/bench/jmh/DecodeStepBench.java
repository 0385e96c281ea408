package io.kvoffload.bench.jmh;

import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.strategy.swarm.ClusterOptions;
import io.kvoffload.DType;
import io.kvoffload.DecodeOptions;
import io.kvoffload.KvConfig;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.bench.TempDirs;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
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
 * One decoding step of Swarm's online phase over two layers, the second fetched while the first is
 * consumed: medoid scoring, selection to a 10% budget, Eq. 8 scheduling against the DRAM window and
 * hot-cluster cache, one batched submission per layer to 4 SSD directories, CRC-checked gathering.
 * 32K tokens per layer of a Llama-3-8B-like layer (32 query heads, 8 KV heads, head dim 128,
 * BF16: 4 KiB entries). Run with {@code -prof gc}: in steady state a step allocates 0 B/op.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--add-modules=jdk.incubator.vector", "-Xmx2g"})
public class DecodeStepBench {
    static final KvShape SHAPE = new KvShape(2, 32, 8, 128, DType.BF16);
    static final int TOKENS = 32 * 1024;
    static final int QUERIES = 64;

    @Param({"auto"})
    String backend;

    @Param({"BALANCED"})
    String scheduling;

    Path root;
    KvEngine engine;
    KvSequence sequence;
    KvDecoder decoder;
    float[][][] queries;
    int step;

    @Setup(Level.Trial)
    public void setup() throws IOException {
        root = TempDirs.createUnder(null, "kvo-decode-bench");
        List<Path> dirs = TempDirs.ssdDirectories(root, 4);
        engine = KvEngine.open(KvConfig.builder().ssdDirectories(dirs).ioBackend(backend)
                .deviceCapacityBytes(256L << 20).dramBudgetBytes(1L << 30).build());
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(3).build());
        try (KvSequence s = engine.createSequence("bench", SHAPE); Arena a = Arena.ofConfined()) {
            s.appendTokens(new int[TOKENS]);
            MemorySegment k = a.allocate((long) TOKENS * SHAPE.halfEntryBytes());
            MemorySegment v = a.allocate((long) TOKENS * SHAPE.halfEntryBytes());
            for (int l = 0; l < SHAPE.layers(); l++) {
                w.writeKv(l, 0, TOKENS, SHAPE.dtype(), k, v);
                s.appendKv(l, k, v);
                List<float[]> profile = new ArrayList<>();
                for (int q = 0; q < 32; q++) {
                    profile.add(w.query(l, 1000 + q));
                }
                Swarm.clusterLayerFromQueries(s, l, profile, ClusterOptions.defaults());
            }
            s.commit();
        }
        sequence = engine.openSequence("bench");
        decoder = sequence.decoder(DecodeOptions.builder().strategy(Swarm.defaults())
                .scheduling(DecodeOptions.Scheduling.valueOf(scheduling)).build());
        queries = new float[QUERIES][SHAPE.layers()][];
        for (int q = 0; q < QUERIES; q++) {
            for (int l = 0; l < SHAPE.layers(); l++) {
                queries[q][l] = w.query(l, q);
            }
        }
    }

    @Benchmark
    public int step() {
        float[][] q = queries[step];
        step = (step + 1) % QUERIES;
        KvView first = decoder.prefetch(0, q[0]);
        KvView second = decoder.prefetch(1, q[1]);
        int n = first.await().tokenCount();
        first.close();
        n += second.await().tokenCount();
        second.close();
        return n;
    }

    /**
     * The same step, with the caller taking every head's K and V segments from each view, as an
     * attention kernel does: the difference to {@link #step} is the cost of the segments' own scope
     * (one shared arena per view, ended at close so a kept segment cannot show later KV).
     */
    @Benchmark
    public long stepWithSegments() {
        float[][] q = queries[step];
        step = (step + 1) % QUERIES;
        KvView first = decoder.prefetch(0, q[0]);
        KvView second = decoder.prefetch(1, q[1]);
        long n = touch(first.await());
        first.close();
        n += touch(second.await());
        second.close();
        return n;
    }

    private static long touch(KvView v) {
        long n = v.tokenCount();
        for (int h = 0; h < SHAPE.kvHeads(); h++) {
            n += v.keys(h).byteSize() + v.values(h).byteSize();
        }
        return n;
    }

    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        decoder.close();
        sequence.close();
        engine.close();
        TempDirs.deleteRecursively(root);
    }
}
