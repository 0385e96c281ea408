package io.kvoffload.bench.jmh;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.internal.sequence.FloatKv;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
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
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * What {@code appendKv(layer, float[], float[])} adds for an F16/BF16 sequence: converting
 * {@code tokens} tokens of a Llama-3-8B layer's K and V (8 KV heads × 128) from float32, against
 * handing over the same data as raw bits ({@code short[]}, which the library only wraps) and
 * against copying those bits once (a memcpy of the converted size, the floor of any conversion
 * that writes its output). The sink reads one element per chunk, so nothing is optimised away.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xmx1g"})
public class FloatAppendBench {
    @Param({"BF16", "F16"})
    String dtype;

    /** 1: one decode step's token; 512: a prefill chunk. */
    @Param({"1", "512"})
    int tokens;

    KvShape shape;
    float[] keys;
    float[] values;
    short[] keyBits;
    short[] valueBits;
    short[] copyK;
    short[] copyV;

    @Setup
    public void setup() {
        shape = new KvShape(1, 32, 8, 128, DType.valueOf(dtype));
        int n = tokens * shape.kvHeads() * shape.headDim();
        SplittableRandom r = new SplittableRandom(18);
        keys = new float[n];
        values = new float[n];
        for (int i = 0; i < n; i++) {
            keys[i] = (float) r.nextGaussian();
            values[i] = (float) r.nextGaussian();
        }
        keyBits = new short[n];
        valueBits = new short[n];
        copyK = new short[n];
        copyV = new short[n];
    }

    /** float[] converted to the dtype's bits, chunk by chunk, as the sequence's appendKv does. */
    @Benchmark
    public void convertFloats(Blackhole bh) {
        FloatKv.append(shape, keys, values, (k, v) -> consume(bh, k, v));
    }

    /** short[] raw bits: wrapped, not converted (what {@code appendKv(layer, short[], short[])} costs). */
    @Benchmark
    public void wrapBits(Blackhole bh) {
        consume(bh, MemorySegment.ofArray(keyBits), MemorySegment.ofArray(valueBits));
    }

    /** One copy of the converted bytes: the floor for a conversion that writes its output. */
    @Benchmark
    public void copyBits(Blackhole bh) {
        System.arraycopy(keyBits, 0, copyK, 0, keyBits.length);
        System.arraycopy(valueBits, 0, copyV, 0, valueBits.length);
        consume(bh, MemorySegment.ofArray(copyK), MemorySegment.ofArray(copyV));
    }

    private static void consume(Blackhole bh, MemorySegment k, MemorySegment v) {
        bh.consume(k.get(ValueLayout.JAVA_SHORT, k.byteSize() - 2));
        bh.consume(v.get(ValueLayout.JAVA_SHORT, 0));
    }
}
