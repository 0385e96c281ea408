package io.kvoffload.bench.jmh;

import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.DType;
import io.kvoffload.DecodeOptions;
import io.kvoffload.KvConfig;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.bench.ClusteredSequences;
import io.kvoffload.bench.TempDirs;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.function.ToLongFunction;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One decoding step of Swarm's online phase over two layers, the second fetched while the first is
 * consumed: medoid scoring, selection to a 10% budget, Eq. 8 scheduling against the DRAM window and
 * hot-cluster cache, one batched submission per layer to 4 SSD directories, CRC-checked gathering.
 * 32K tokens per layer of a Llama-3-8B-like layer (32 query heads, 8 KV heads, head dim 128,
 * BF16: 4 KiB entries). Run with {@code -prof gc}: in steady state a step allocates 0 B/op.
 */
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--add-modules=jdk.incubator.vector", "-Xmx2g"})
public class DecodeStepBench extends MicroBenchmark {
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
        ClusteredSequences.store(engine, "bench", w, TOKENS, 32, 1000);
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
        return (int) twoLayerStep(KvView::tokenCount);
    }

    /**
     * The same step, with the caller taking every head's K and V segments from each view, as an
     * attention kernel does: the difference to {@link #step} is the cost of the segments' own scope
     * (one shared arena per view, ended at close so a kept segment cannot show later KV).
     */
    @Benchmark
    public long stepWithSegments() {
        return twoLayerStep(DecodeStepBench::touch);
    }

    /** One step: both layers prefetched, then each awaited, {@code consume}d and closed in order. */
    private long twoLayerStep(ToLongFunction<KvView> consume) {
        float[][] q = queries[step];
        step = (step + 1) % QUERIES;
        KvView first = decoder.prefetch(0, q[0]);
        KvView second = decoder.prefetch(1, q[1]);
        long n = consume.applyAsLong(first.await());
        first.close();
        n += consume.applyAsLong(second.await());
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
