package io.kvoffload.attention;

import io.kvoffload.DType;
import io.kvoffload.DecodeOptions;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.internal.util.ElementCodec;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.testing.TestEngines;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;

/**
 * A one-layer sequence of random K/V in a real engine (portable backend, temporary directories),
 * with the same K/V as floats — rounded to the sequence's dtype, so they are exactly what a view
 * holds — and one random query. Views come from {@link KvDecoder#prefetch(int, int[], int)}.
 */
final class AttentionFixture implements AutoCloseable {
    final KvShape shape;
    final int tokens;
    /** Stored K and V as floats, {@code [token][kvHead][dim]}. */
    final float[] keys;
    final float[] values;
    final float[] query;
    private final Path root;
    private final KvEngine engine;
    final KvSequence sequence;
    final KvDecoder decoder;

    AttentionFixture(KvShape shape, int tokens, long seed) {
        this.shape = shape;
        this.tokens = tokens;
        Random rnd = new Random(seed);
        int row = shape.kvHeads() * shape.headDim();
        keys = rounded(rnd, shape.dtype(), tokens * row, 1.5f);
        values = rounded(rnd, shape.dtype(), tokens * row, 1f);
        query = new float[shape.queryHeads() * shape.headDim()];
        for (int i = 0; i < query.length; i++) {
            query[i] = (float) rnd.nextGaussian() * 1.5f;
        }
        try {
            root = Files.createTempDirectory("kvo-attention");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        engine = KvEngine.open(TestEngines.config(TestEngines.deviceDirs(root, 2), "portable").blockTokens(16).build());
        sequence = engine.createSequence(shape);
        sequence.appendTokens(new int[tokens]);
        try (Arena a = Arena.ofConfined()) {
            sequence.appendKv(0, encode(a, keys), encode(a, values));
        }
        decoder = sequence.decoder(DecodeOptions.defaults());
    }

    /** Random Gaussian floats times {@code scale}, rounded to {@code dtype}. */
    static float[] rounded(Random rnd, DType dtype, int n, float scale) {
        return io.kvoffload.testing.PerHeadViews.rounded(rnd, dtype, n, scale);
    }

    private MemorySegment encode(Arena a, float[] src) {
        MemorySegment s = a.allocate((long) src.length * shape.dtype().bytes());
        ElementCodec.write(shape.dtype(), s, 0, src, 0, src.length);
        return s;
    }

    /** A view of exactly {@code positions[0..count)}, awaited. */
    KvView view(int[] positions, int count) {
        return decoder.prefetch(0, positions, count).await();
    }

    /** Rows {@code from..from+n} of {@code src} ({@code [token][kvHead][dim]}). */
    float[] rows(float[] src, int from, int n) {
        int row = shape.kvHeads() * shape.headDim();
        return java.util.Arrays.copyOfRange(src, from * row, (from + n) * row);
    }

    /**
     * The layer as dense per-head arrays in the order of {@code order} (token ids), for
     * {@link ExactAttention}.
     */
    DenseLayerKv dense(int[] order) {
        int d = shape.headDim();
        int kvh = shape.kvHeads();
        float[][] k = new float[kvh][order.length * d];
        float[][] v = new float[kvh][order.length * d];
        for (int i = 0; i < order.length; i++) {
            for (int h = 0; h < kvh; h++) {
                System.arraycopy(keys, (order[i] * kvh + h) * d, k[h], i * d, d);
                System.arraycopy(values, (order[i] * kvh + h) * d, v[h], i * d, d);
            }
        }
        return new DenseLayerKv(order.length, d, k, v);
    }

    @Override
    public void close() {
        decoder.close();
        sequence.close();
        engine.close();
        TestEngines.deleteRecursively(root);
    }
}
