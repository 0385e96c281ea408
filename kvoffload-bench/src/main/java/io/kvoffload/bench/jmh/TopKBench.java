package io.kvoffload.bench.jmh;

import io.kvoffload.internal.util.PartialTopK;
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

/**
 * The library's one top-k ({@link PartialTopK}) as the per-head default selector calls it: the top 10%
 * of {@code len} heavy-tailed scores (65,536 (head group, block) pairs at 128K tokens, 524,288 at 1M),
 * with the sampled path's candidate pass through the Vector API ({@code vector}) or the scalar loop, in
 * the same run. Run with {@code -prof gc}: both allocate nothing.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-modules=jdk.incubator.vector", "-Xmx1g"})
public class TopKBench {
    @Param({"65536", "524288"})
    int len;

    @Param({"true", "false"})
    boolean vector;

    float[] scores;
    int[] out;
    PartialTopK topK;
    int k;

    @Setup
    public void setup() {
        SplittableRandom r = new SplittableRandom(16);
        scores = new float[len];
        for (int i = 0; i < len; i++) {
            scores[i] = (float) Math.exp(3 * r.nextGaussian()); // heavy-tailed, like softmax shares
        }
        k = len / 10;
        out = new int[k];
        topK = new PartialTopK(len, vector);
    }

    @Benchmark
    public int top() {
        return topK.top(scores, 0, len, k, out, 0);
    }
}
