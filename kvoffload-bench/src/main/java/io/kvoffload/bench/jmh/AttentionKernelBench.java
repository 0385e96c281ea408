package io.kvoffload.bench.jmh;

import io.kvoffload.DType;
import io.kvoffload.DecodeOptions;
import io.kvoffload.KvConfig;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.SparseAttention;
import io.kvoffload.attention.DecodeAttention;
import io.kvoffload.attention.ExactAttention;
import io.kvoffload.bench.TempDirs;
import io.kvoffload.internal.util.ElementCodec;
import io.kvoffload.strategy.DenseLayerKv;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Random;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.TearDown;

/**
 * One decode step's attention for one Llama-3-8B layer (32 query heads, 8 KV heads × 128, GQA 4)
 * over a view of {@code rows} rows (3,277 = a 10% budget of 32K tokens) plus the current token as
 * an extra row: the scalar reference {@link SparseAttention} against {@link DecodeAttention} on the
 * same view, and, as the dense yardstick over the same number of rows, {@link DecodeAttention}'s
 * dense path over float rows and {@link ExactAttention} (the library's dense reference) over them.
 * Run with {@code -prof gc}: the kernels allocate 0 B/op.
 */
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-Xmx2g"})
public class AttentionKernelBench extends MicroBenchmark {
    @Param({"BF16", "F16", "F32"})
    String dtype;

    @Param({"3277"})
    int rows;

    KvShape shape;
    Path root;
    KvEngine engine;
    KvSequence sequence;
    KvDecoder decoder;
    KvView view;
    SparseAttention reference;
    DecodeAttention kernel;
    float[] query;
    float[] out;
    float[] extraKeys;
    float[] extraValues;
    float[] denseKeys;
    float[] denseValues;
    DenseLayerKv denseLayer;
    ExactAttention exact;

    @Setup(Level.Trial)
    public void setup() throws IOException {
        shape = new KvShape(1, 32, 8, 128, DType.valueOf(dtype));
        int row = shape.kvHeads() * shape.headDim();
        Random rnd = new Random(1);
        denseKeys = gaussian(rnd, rows * row);
        denseValues = gaussian(rnd, rows * row);
        query = gaussian(rnd, shape.queryHeads() * shape.headDim());
        extraKeys = gaussian(rnd, row);
        extraValues = gaussian(rnd, row);
        out = new float[query.length];
        root = TempDirs.createUnder(null, "kvo-attention-bench");
        engine = KvEngine.open(KvConfig.builder().ssdDirectories(TempDirs.ssdDirectories(root, 2))
                .deviceCapacityBytes(256L << 20).dramBudgetBytes(512L << 20).build());
        sequence = engine.createSequence(shape);
        sequence.appendTokens(new int[rows]);
        try (Arena a = Arena.ofConfined()) {
            sequence.appendKv(0, encode(a, denseKeys), encode(a, denseValues));
        }
        decoder = sequence.decoder(DecodeOptions.defaults());
        int[] all = new int[rows];
        for (int i = 0; i < rows; i++) {
            all[i] = i;
        }
        view = decoder.prefetch(0, all, rows).await();
        reference = new SparseAttention(shape);
        kernel = new DecodeAttention(shape, rows + 1);
        float[][] kh = new float[shape.kvHeads()][rows * shape.headDim()];
        float[][] vh = new float[shape.kvHeads()][rows * shape.headDim()];
        for (int t = 0; t < rows; t++) {
            for (int h = 0; h < shape.kvHeads(); h++) {
                System.arraycopy(denseKeys, (t * shape.kvHeads() + h) * shape.headDim(), kh[h], t * shape.headDim(), shape.headDim());
                System.arraycopy(denseValues, (t * shape.kvHeads() + h) * shape.headDim(), vh[h], t * shape.headDim(), shape.headDim());
            }
        }
        denseLayer = new DenseLayerKv(rows, shape.headDim(), kh, vh);
        exact = ExactAttention.of(shape);
    }

    private static float[] gaussian(Random rnd, int n) {
        float[] f = new float[n];
        for (int i = 0; i < n; i++) {
            f[i] = (float) rnd.nextGaussian();
        }
        return f;
    }

    private MemorySegment encode(Arena a, float[] src) {
        MemorySegment s = a.allocate((long) src.length * shape.dtype().bytes());
        ElementCodec.write(shape.dtype(), s, 0, src, 0, src.length);
        return s;
    }

    /** The scalar reference over the view (no extra row: it reads the same rows as {@link #kernelViewOnly}). */
    @Benchmark
    public float[] referenceView() {
        reference.attend(view, query, out);
        return out;
    }

    /** The kernel over the view, the same rows as {@link #referenceView}. */
    @Benchmark
    public float[] kernelViewOnly() {
        kernel.attend(view, query, out);
        return out;
    }

    /** The kernel over the view plus the current token as an extra row, as a decode step calls it. */
    @Benchmark
    public float[] kernelViewPlusCurrentToken() {
        kernel.attend(view, query, extraKeys, extraValues, 1, out);
        return out;
    }

    /** The kernel's dense path over the same number of rows held as floats (an all-in-DRAM F32 cache). */
    @Benchmark
    public float[] kernelDenseFloatRows() {
        kernel.attend(denseKeys, denseValues, rows, query, out);
        return out;
    }

    /** {@link ExactAttention}, the library's dense reference, over the same number of float rows (allocates its result). */
    @Benchmark
    public float[] exactDenseFloatRows() {
        return exact.compute(denseLayer, query).output();
    }

    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        view.close();
        decoder.close();
        sequence.close();
        engine.close();
        TempDirs.deleteRecursively(root);
    }
}
