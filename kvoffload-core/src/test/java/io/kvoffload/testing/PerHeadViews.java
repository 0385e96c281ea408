package io.kvoffload.testing;

import io.kvoffload.DType;
import io.kvoffload.DecodeOptions;
import io.kvoffload.KvConfig;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.Placement;
import io.kvoffload.internal.util.ElementCodec;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.strategy.FetchPlan;
import io.kvoffload.strategy.LayerContext;
import io.kvoffload.strategy.LayerSelector;
import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.strategy.Strategies;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.BitSet;
import java.util.Random;

/**
 * Views whose rows hold only some KV heads ({@link KvView#partialRows()}), made the real way: an
 * engine with {@link Placement#HEAD_SHARDED} over several device directories ({@link #config}), a
 * sequence of finite random K/V laid out with the default page layout ({@link #store}), and a
 * decoder ({@link #options}) whose strategy is a {@link Script}: a per-head strategy that adds, at
 * every step, the positions and KV-head masks the test set last ({@link FetchPlan#add(int, long)}).
 * The pipeline then reads only the head groups that hold a wanted head, and the view's
 * {@link KvView#headMask(int)} says which heads each row holds ({@link #groupsHolding}).
 *
 * <p>Also here: the per-row check that the heads a row holds are the stored bytes
 * ({@link #assertHeldHeadsBitExact}) and an independent per-head reference attention in double
 * precision ({@link #reference}), for any kernel that reads such views (CPU or GPU).
 */
public final class PerHeadViews {
    /** The name of {@link Script}. */
    public static final String STRATEGY = "per-head-script";

    private PerHeadViews() {}

    /**
     * {@code devices} device directories under {@code root}, head-sharded, blocks of 16 tokens, the
     * portable backend ({@code kvHeads / g} heads per group, {@code g} the largest divisor of the KV
     * heads not above {@code devices}). A builder, so a caller may change more (e.g. turn the GPU off).
     */
    public static KvConfig.Builder config(Path root, int devices) {
        return TestEngines.config(TestEngines.deviceDirs(root, devices), "portable").blockTokens(16)
                .placement(Placement.HEAD_SHARDED);
    }

    /**
     * One stored layer: K and V token-major ({@code [token][kvHead][headDim]}), as floats (exactly
     * the stored values: rounded to the dtype) and as the stored bytes.
     */
    public record Layer(KvShape shape, float[] keys, float[] values, byte[] keyBytes, byte[] valueBytes) {
        /** K ({@code value} false) or V of {@code token}'s {@code kvHead}, {@code headDim} floats. */
        public float[] row(int token, int kvHead, boolean value) {
            int d = shape.headDim();
            int at = (token * shape.kvHeads() + kvHead) * d;
            return java.util.Arrays.copyOfRange(value ? values : keys, at, at + d);
        }

        /** Keys and values per KV head, as a strategy's context holds them. */
        public DenseLayerKv dense() {
            int d = shape.headDim(), kv = shape.kvHeads(), tokens = keys.length / (kv * d);
            float[][] k = new float[kv][tokens * d];
            float[][] v = new float[kv][tokens * d];
            for (int t = 0; t < tokens; t++) {
                for (int h = 0; h < kv; h++) {
                    System.arraycopy(keys, (t * kv + h) * d, k[h], t * d, d);
                    System.arraycopy(values, (t * kv + h) * d, v[h], t * d, d);
                }
            }
            return new DenseLayerKv(tokens, d, k, v);
        }

        /** The stored bytes of K and V, for {@link KvViews#assertBitExact}. */
        public byte[][] bytes() {
            return new byte[][] {keyBytes, valueBytes};
        }
    }

    /**
     * Creates sequence {@code id} with {@code tokens} tokens in every layer, lays every layer out
     * with the default page layout ({@code quest}'s) and commits it. Keys are Gaussian × 1.5 and
     * values Gaussian, rounded to the dtype (seeded per layer); a layer listed in {@code nanLayers}
     * holds only NaN bit patterns ({@code 0xFF} bytes), so a step over it leaves NaN in a view's
     * rows for the next step of the same view to find in the heads it does not read.
     *
     * @return per layer, what was stored
     */
    public static Layer[] store(KvEngine engine, String id, KvShape shape, int tokens, long seed, int... nanLayers) {
        return store(engine, id, shape, tokens, seed, "quest", nanLayers);
    }

    /** As {@link #store}, each layer laid out by strategy {@code layout} (its pages). */
    public static Layer[] store(KvEngine engine, String id, KvShape shape, int tokens, long seed, String layout,
            int... nanLayers) {
        return store(engine, id, shape, tokens, seed, layout, null, nanLayers);
    }

    /**
     * As {@link #store}, with {@code keys} given each layer's keys (token-major, before they are
     * stored) to change, e.g. to plant a token a query will look for; what it leaves is rounded to
     * the dtype again, so the returned floats are what was stored.
     */
    public static Layer[] store(KvEngine engine, String id, KvShape shape, int tokens, long seed, String layout,
            java.util.function.ObjIntConsumer<float[]> keys, int... nanLayers) {
        Layer[] layers = new Layer[shape.layers()];
        BitSet nan = new BitSet();
        for (int l : nanLayers) {
            nan.set(l);
        }
        int n = tokens * shape.kvHeads() * shape.headDim();
        try (KvSequence s = engine.createSequence(id, shape); Arena a = Arena.ofConfined()) {
            s.appendTokens(new int[tokens]);
            for (int l = 0; l < shape.layers(); l++) {
                Random rnd = new Random(seed * 31 + l);
                float[] k = nan.get(l) ? filled(n, Float.NaN) : rounded(rnd, shape.dtype(), n, 1.5f);
                float[] v = nan.get(l) ? filled(n, Float.NaN) : rounded(rnd, shape.dtype(), n, 1f);
                if (keys != null && !nan.get(l)) {
                    keys.accept(k, l);
                    for (int i = 0; i < n; i++) {
                        k[i] = round(shape.dtype(), k[i]);
                    }
                }
                MemorySegment ks = encode(a, shape.dtype(), k, nan.get(l));
                MemorySegment vs = encode(a, shape.dtype(), v, nan.get(l));
                s.appendKv(l, ks, vs);
                Strategies.named(layout).layOut(s, l); // quest: the default page layout
                layers[l] = new Layer(shape, k, v, ks.toArray(ValueLayout.JAVA_BYTE), vs.toArray(ValueLayout.JAVA_BYTE));
            }
            s.commit();
        }
        return layers;
    }

    private static float[] filled(int n, float x) {
        float[] f = new float[n];
        java.util.Arrays.fill(f, x);
        return f;
    }

    /** Gaussian floats times {@code scale}, rounded to {@code dtype}. */
    public static float[] rounded(Random rnd, DType dtype, int n, float scale) {
        float[] f = new float[n];
        for (int i = 0; i < n; i++) {
            f[i] = round(dtype, (float) rnd.nextGaussian() * scale);
        }
        return f;
    }

    /** {@code x} as {@code dtype} stores it. */
    public static float round(DType dtype, float x) {
        return switch (dtype) {
            case F32 -> x;
            case F16 -> Float.float16ToFloat(Float.floatToFloat16(x));
            case BF16 -> ElementCodec.fromBf16(ElementCodec.toBf16(x));
        };
    }

    private static MemorySegment encode(Arena a, DType dtype, float[] src, boolean nan) {
        MemorySegment s = a.allocate((long) src.length * dtype.bytes());
        if (nan) {
            return s.fill((byte) 0xFF); // a NaN in every dtype
        }
        ElementCodec.write(dtype, s, 0, src, 0, src.length);
        return s;
    }

    /**
     * Decoder options for a {@link Script}: {@code sinks} and {@code window} rows, no hot cache, a
     * budget that never cuts the script, and one view reused by every step ({@code pipelineDepth} 1),
     * so a step's rows start out as whatever the previous step left in them.
     */
    public static DecodeOptions options(Script script, int sinks, int window) {
        return DecodeOptions.builder().strategy(script).sinkTokens(sinks).localWindow(window).cacheBytes(0)
                .pipelineDepth(1).budgetTokens(1 << 20).build();
    }

    /**
     * The KV heads a head-sharded read brings for a position {@code wanted} by the heads of
     * {@code wanted}: every head of each group (of {@code kvHeads / groups} consecutive heads) that
     * holds a wanted head; every head for {@link FetchPlan#ALL_HEADS}.
     */
    public static long groupsHolding(long wanted, int kvHeads, int groups) {
        long all = kvHeads >= Long.SIZE ? -1L : (1L << kvHeads) - 1;
        if (wanted == FetchPlan.ALL_HEADS) {
            return all;
        }
        int per = kvHeads / groups;
        long got = 0;
        for (int g = 0; g < groups; g++) {
            long bits = (per >= Long.SIZE ? -1L : (1L << per) - 1) << (g * per);
            if ((wanted & bits) != 0) {
                got |= bits;
            }
        }
        return got;
    }

    /** The view's mask of row {@code row} restricted to the shape's KV heads (bits above carry no meaning). */
    public static long heldHeads(KvView v, int row) {
        int kv = v.shape().kvHeads();
        long all = kv >= Long.SIZE ? -1L : (1L << kv) - 1;
        return v.partialRows() ? v.headMask(row) & all : all;
    }

    /**
     * Every row is a distinct position and, for every KV head its mask holds, its K and V equal the
     * stored bytes exactly (the heads it does not hold are undefined and not looked at).
     *
     * @return the positions the view holds
     */
    public static BitSet assertHeldHeadsBitExact(KvView v, Layer expected) {
        return KvViews.assertBitExact(v, expected.bytes(), true);
    }

    /**
     * Per-head attention in double precision, independent of the library's kernels: query head
     * {@code h} takes the softmax of {@code q·k/√headDim} over exactly {@code attended[h / groupSize]}
     * (token ids of {@code layer}) followed by the {@code extraRows} extra rows, and the weighted sum
     * of their values; a head with no row at all gets zeros.
     *
     * @param attended per KV head, the tokens its query heads attend (distinct)
     * @param extraKeys {@code extraRows × kvHeads × headDim} floats (null when {@code extraRows} is 0)
     */
    public static double[] reference(Layer layer, int[][] attended, float[] query, float[] extraKeys,
            float[] extraValues, int extraRows) {
        KvShape shape = layer.shape();
        int d = shape.headDim(), kv = shape.kvHeads(), group = shape.groupSize();
        double scale = 1 / Math.sqrt(d);
        double[] out = new double[shape.queryHeads() * d];
        for (int h = 0; h < shape.queryHeads(); h++) {
            int kvh = h / group;
            int[] ids = attended[kvh];
            int total = ids.length + extraRows;
            if (total == 0) {
                continue;
            }
            double[] logit = new double[total];
            for (int i = 0; i < total; i++) {
                double s = 0;
                for (int j = 0; j < d; j++) {
                    float kj = i < ids.length ? layer.keys()[(ids[i] * kv + kvh) * d + j]
                            : extraKeys[((i - ids.length) * kv + kvh) * d + j];
                    s += (double) query[h * d + j] * kj;
                }
                logit[i] = s * scale;
            }
            ReferenceSoftmax.inPlace(logit);
            for (int i = 0; i < total; i++) {
                double w = logit[i];
                for (int j = 0; j < d; j++) {
                    float vj = i < ids.length ? layer.values()[(ids[i] * kv + kvh) * d + j]
                            : extraValues[((i - ids.length) * kv + kvh) * d + j];
                    out[h * d + j] += w * vj;
                }
            }
        }
        return out;
    }

    /** Per KV head, the positions of the view's rows that hold it (what a per-head kernel attends). */
    public static int[][] attendedPerHead(KvView v) {
        int kv = v.shape().kvHeads();
        int[][] out = new int[kv][];
        for (int h = 0; h < kv; h++) {
            int hh = h;
            out[h] = java.util.stream.IntStream.range(0, v.tokenCount()).filter(r -> (heldHeads(v, r) >>> hh & 1) != 0)
                    .map(v::position).toArray();
        }
        return out;
    }

    /**
     * A per-head {@link SelectionStrategy} driven by the test: every {@code select} adds the
     * positions of the last {@link #next} call, each for the KV heads of its mask
     * ({@link FetchPlan#ALL_HEADS} adds it for every head, as {@link FetchPlan#add(int)}). It keeps
     * the default page layout ({@link #store} lays layers out with it). Mutable, for one test
     * thread: a strategy serving several decoders at once would not be.
     */
    public static final class Script implements SelectionStrategy {
        private int[] positions = new int[0];
        private long[] masks = new long[0];

        /** What each following step adds: {@code positions[i]} for the KV heads of {@code masks[i]}. */
        public Script next(int[] positions, long[] masks) {
            if (positions.length != masks.length) {
                throw new IllegalArgumentException("positions.length = " + positions.length + " but masks.length = "
                        + masks.length + "; allowed: equal lengths");
            }
            this.positions = positions.clone();
            this.masks = masks.clone();
            return this;
        }

        @Override
        public String name() {
            return STRATEGY;
        }

        @Override
        public LayerSelector openLayer(LayerContext context) {
            return (query, plan) -> {
                for (int i = 0; i < positions.length; i++) {
                    if (masks[i] == FetchPlan.ALL_HEADS) {
                        plan.add(positions[i]);
                    } else {
                        plan.add(positions[i], masks[i]);
                    }
                }
            };
        }
    }
}
