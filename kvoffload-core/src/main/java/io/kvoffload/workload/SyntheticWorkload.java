package io.kvoffload.workload;

import io.kvoffload.internal.util.ElementCodec;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.strategy.LayerKv;
import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.internal.util.Checks;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A seeded, deterministic generator of keys, values and decoding queries whose attention has the
 * structure the papers report: attention sinks, a recency window, heavy hitters, recurring and
 * overlapping co-activation groups, GQA-correlated query heads, high overlap between adjacent
 * decoding steps and slow drift. The knobs live in {@link WorkloadSpec}.
 *
 * <h2>How the structure is built</h2>
 * Each head's dimensions are split into three parts, and a logit {@code q·k/√d} is the sum of their
 * contributions:
 * <ul>
 * <li><b>position</b> ({@code 2 × positionalPairs} dims): RoPE-like (cos, sin) pairs at
 *     frequencies between {@code 0.25/localWindow} and {@code 1.5/localWindow}. The dot product is
 *     {@code localLogit × mean cos(θ·Δ)}, high for small distances Δ and averaging to 0 far away;</li>
 * <li><b>bias</b> (1 dim): every query carries a constant; sink keys carry {@code sinkLogit}, heavy
 *     hitters {@code heavyHitterLogit}, other keys 0;</li>
 * <li><b>semantics</b> (the rest): every group has a random unit direction per KV head; a key is
 *     the sum of its groups' directions plus noise, a query the weighted sum of the directions of the
 *     groups it attends to, scaled so a member of an attended group gains about {@code topicLogit}.</li>
 * </ul>
 * Which groups a query attends to is a Markov chain per layer: each of {@code activeGroups} slots
 * keeps its group with probability {@code groupRetention} and otherwise draws a new group from a
 * Zipf popularity whose ranking rotates by {@code driftPerStep} ranks per step.
 *
 * <h2>Memory</h2>
 * Nothing is stored per token: every element is a pure function of the seed and its coordinates
 * (counter-based hashing), so {@link #layer(int)} is a lazy {@link LayerKv} over any number of
 * tokens and a million-token layer costs nothing until asked for. Materialise the heads a
 * computation reuses with {@link DenseLayerKv#materialize}: 4 × tokens × headDim bytes per head
 * (256 MiB for a million tokens at head dimension 64). Per layer the generator caches only a
 * permutation of the groups and the chain of attended groups (a few ints per step).
 *
 * <p>Decoding step {@code s} sits at position {@code tokens + s}. Instances are immutable apart
 * from those caches and safe to share between threads.
 */
public final class SyntheticWorkload extends GeneratedWorkload {
    private static final long KIND_GROUP = 1, KIND_BRIDGE = 2, KIND_HEAVY = 3, KIND_DIRECTION = 4, KIND_NOISE = 5,
            KIND_VALUE = 6, KIND_ALPHA = 7, KIND_QUERY_HEAD = 8, KIND_CHAIN = 9, KIND_PERMUTATION = 10;

    private final WorkloadSpec spec;
    private final int positionalPairs;
    private final int biasDim;
    private final int semanticStart;
    private final int semanticDims;
    private final float semanticNorm;
    private final int groups;
    private final int activeGroups;
    private final float keyScale;
    private final float queryScale;
    private final double[] theta;
    private final double[] popularityCdf;
    private final ConcurrentHashMap<Integer, int[]> rankToGroup = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Integer, ActiveGroupChain> chains = new ConcurrentHashMap<>();

    public SyntheticWorkload(WorkloadSpec spec) {
        super(Checks.notNull("spec", spec).shape(), spec.tokens());
        this.spec = spec;
        this.positionalPairs = spec.positionalPairs();
        this.biasDim = 2 * positionalPairs;
        this.semanticStart = biasDim + 1;
        this.semanticDims = headDim - semanticStart;
        this.semanticNorm = (float) (1.0 / Math.sqrt(semanticDims));
        this.groups = spec.groups();
        this.activeGroups = Math.min(spec.activeGroups(), groups);
        // Keys carry s = d^¼ and queries √d / s, so that q·k/√d equals the designed logit while both
        // keep magnitudes of order one (what a BF16 tensor from a real model looks like).
        this.keyScale = (float) Math.pow(headDim, 0.25);
        this.queryScale = (float) (Math.sqrt(headDim) / keyScale);
        this.theta = new double[positionalPairs];
        for (int f = 0; f < positionalPairs; f++) {
            double spread = positionalPairs == 1 ? 0.5 : Math.pow(6.0, f / (double) (positionalPairs - 1));
            theta[f] = 0.25 * spread / spec.localWindow();
        }
        this.popularityCdf = Hashing.zipfCdf(groups, spec.popularitySkew());
    }

    public WorkloadSpec spec() { return spec; }
    /** Co-activation groups per layer. */
    public int groups() { return groups; }

    // ---------------------------------------------------------------- ground truth

    /** Whether {@code token} is an attention sink. */
    public boolean isSink(int token) {
        return token < spec.sinkTokens();
    }

    /** Whether {@code token} is a heavy hitter in {@code layer}. */
    public boolean isHeavyHitter(int layer, int token) {
        checkToken(layer, token);
        return heavy(layerKey(layer), token);
    }

    /** The group {@code token} belongs to in {@code layer}, or −1 for a sink. */
    public int primaryGroup(int layer, int token) {
        checkToken(layer, token);
        return primary(layerKey(layer), token);
    }

    /** The second group of a bridge token, or −1 if {@code token} belongs to one group only. */
    public int secondaryGroup(int layer, int token) {
        checkToken(layer, token);
        long lk = layerKey(layer);
        return secondary(lk, token, primary(lk, token));
    }

    /**
     * The groups the query of decoding step {@code step} attends to in {@code layer} (a copy). The
     * chain is simulated once per layer and cached, so asking for step {@code s} costs
     * {@code O(s × activeGroups)} the first time.
     */
    public int[] activeGroups(int layer, int step) {
        checkStep(layer, step);
        return chain(layer).at(step).clone();
    }

    // ---------------------------------------------------------------- keys and values

    /** A lazy view of one layer: keys and values are generated on every read. */
    @Override
    public LayerKv layer(int layer) {
        Checks.index("layer", layer, shape.layers());
        long layerKey = layerKey(layer);
        return new GeneratedLayer("SyntheticWorkload.layer(" + layer + ")", spec.tokens(), shape.kvHeads(), headDim) {
            @Override
            void key(int kvHead, int token, float[] dst, int off) {
                SyntheticWorkload.this.key(layerKey, kvHead, token, dst, off);
            }

            @Override
            void value(int kvHead, int token, float[] dst, int off) {
                SyntheticWorkload.this.value(layerKey, kvHead, token, dst, off);
            }
        };
    }

    private void key(long layerKey, int kvHead, int t, float[] dst, int off) {
        for (int f = 0; f < positionalPairs; f++) {
            double a = theta[f] * t;
            dst[off + 2 * f] = (float) (keyScale * Math.cos(a));
            dst[off + 2 * f + 1] = (float) (keyScale * Math.sin(a));
        }
        double bias = t < spec.sinkTokens() ? spec.sinkLogit() : heavy(layerKey, t) ? spec.heavyHitterLogit() : 0.0;
        dst[off + biasDim] = (float) (keyScale * bias);
        int g1 = primary(layerKey, t);
        int g2 = secondary(layerKey, t, g1);
        long noise = Hashing.key(layerKey, KIND_NOISE, kvHead, t);
        long d1 = g1 >= 0 ? direction(layerKey, kvHead, g1) : 0;
        long d2 = g2 >= 0 ? direction(layerKey, kvHead, g2) : 0;
        float noiseScale = (float) spec.keyNoise();
        float scale = keyScale * semanticNorm;
        int base = off + semanticStart;
        for (int i = 0; i < semanticDims; i++) {
            float v = noiseScale * Hashing.component(noise, i);
            if (g1 >= 0) {
                v += Hashing.component(d1, i);
            }
            if (g2 >= 0) {
                v += Hashing.component(d2, i);
            }
            dst[base + i] = scale * v;
        }
    }

    private void value(long layerKey, int kvHead, int t, float[] dst, int off) {
        long stream = Hashing.key(layerKey, KIND_VALUE, kvHead, t);
        for (int i = 0; i < headDim; i++) {
            dst[off + i] = Hashing.component(stream, i);
        }
    }

    // ---------------------------------------------------------------- queries

    /** The queries of decoding steps {@code 0 .. steps − 1} of {@code layer}. */
    public float[][] queries(int layer, int steps) {
        float[][] q = new float[steps][];
        for (int s = 0; s < steps; s++) {
            q[s] = query(layer, s);
        }
        return q;
    }

    /** The decoding query of {@code step} in {@code layer}: {@code queryHeads × headDim} floats. */
    @Override
    public float[] query(int layer, int step) {
        float[] q = new float[shape.queryHeads() * headDim];
        query(layer, step, q, 0);
        return q;
    }

    /**
     * Writes the decoding query of {@code step} (at position {@code tokens + step}) into
     * {@code dst[offset ..]}, head after head.
     */
    @Override
    public void query(int layer, int step, float[] dst, int offset) {
        checkQuery(layer, step, dst, offset);
        long lk = layerKey(layer);
        int[] active = chain(layer).at(step);
        double[] alpha = new double[active.length];
        for (int a = 0; a < active.length; a++) {
            // A group's weight is mostly its own (some groups always matter more than others) with a
            // small per-step jitter: real attention ranks the same tokens similarly step after step.
            double persistent = 0.75 + 0.5 * Hashing.uniform(Hashing.key(lk, KIND_ALPHA, active[a]));
            double jitter = 1 + 0.1 * (Hashing.uniform(Hashing.key(lk, KIND_ALPHA, active[a], step)) - 0.5);
            alpha[a] = persistent * jitter;
        }
        long position = (long) spec.tokens() + step;
        double rho = spec.gqaCorrelation();
        double shared = Math.sqrt(rho);
        double own = Math.sqrt(1 - rho);
        float[] base = new float[semanticDims];
        float[] mine = new float[semanticDims];
        int group = shape.groupSize();
        for (int kv = 0; kv < shape.kvHeads(); kv++) {
            Arrays.fill(base, 0f);
            for (int a = 0; a < active.length; a++) {
                long dir = direction(lk, kv, active[a]);
                float w = (float) alpha[a] * semanticNorm;
                for (int i = 0; i < semanticDims; i++) {
                    base[i] += w * Hashing.component(dir, i);
                }
            }
            for (int g = 0; g < group; g++) {
                int h = kv * group + g;
                int off = offset + h * headDim;
                for (int f = 0; f < positionalPairs; f++) {
                    double a = theta[f] * position;
                    double amp = queryScale * spec.localLogit() / positionalPairs;
                    dst[off + 2 * f] = (float) (amp * Math.cos(a));
                    dst[off + 2 * f + 1] = (float) (amp * Math.sin(a));
                }
                dst[off + biasDim] = queryScale;
                // GQA: heads of one KV head share the attended groups; each head also has its own
                // random view of every group (a direction fixed per head and group, so it persists
                // while the group stays attended). Mixing √ρ : √(1−ρ) gives cosine ≈ ρ between two
                // heads of one KV head.
                Arrays.fill(mine, 0f);
                for (int a = 0; a < active.length; a++) {
                    long view = Hashing.key(lk, KIND_QUERY_HEAD, h, active[a]);
                    float w = (float) alpha[a] * semanticNorm;
                    for (int i = 0; i < semanticDims; i++) {
                        mine[i] += w * Hashing.component(view, i);
                    }
                }
                double scale = queryScale * spec.topicLogit();
                for (int i = 0; i < semanticDims; i++) {
                    double v = shared * base[i] + own * mine[i];
                    dst[off + semanticStart + i] = (float) (scale * v);
                }
            }
        }
    }

    // ---------------------------------------------------------------- bytes for the storage engine

    /**
     * Writes the K and V tensors of tokens {@code [fromToken, fromToken + count)} of one layer in the
     * engine's layout (token-major, {@code kvHeads × headDim} elements per token, head after head)
     * as {@code dtype} elements, little-endian, from byte 0 of each segment.
     *
     * @param keys receives {@code count × shape.halfEntryBytes()} bytes (for this dtype)
     * @param values likewise for the values
     */
    @Override
    public void writeKv(int layer, int fromToken, int count, DType dtype, MemorySegment keys, MemorySegment values) {
        long tokenBytes = WriteKvArgs.check(shape, spec.tokens(), layer, fromToken, count, dtype, keys, values);
        long lk = layerKey(layer);
        float[] row = new float[headDim];
        for (int i = 0; i < count; i++) {
            int t = fromToken + i;
            for (int h = 0; h < shape.kvHeads(); h++) {
                long at = i * tokenBytes + (long) h * headDim * dtype.bytes();
                key(lk, h, t, row, 0);
                ElementCodec.write(dtype, keys, at, row, 0, headDim);
                value(lk, h, t, row, 0);
                ElementCodec.write(dtype, values, at, row, 0, headDim);
            }
        }
    }

    // ---------------------------------------------------------------- internals

    private long layerKey(int layer) {
        return Hashing.key(spec.seed(), layer);
    }

    private void checkToken(int layer, int token) {
        Checks.index("layer", layer, shape.layers());
        Checks.index("token", token, spec.tokens());
    }

    private boolean heavy(long layerKey, int t) {
        return t >= spec.sinkTokens()
                && Hashing.uniform(Hashing.key(layerKey, KIND_HEAVY, t)) < spec.heavyHitterFraction();
    }

    private int primary(long layerKey, int t) {
        if (t < spec.sinkTokens()) {
            return -1;
        }
        return Hashing.below(Hashing.key(layerKey, KIND_GROUP, t / spec.spanLength()), groups);
    }

    private int secondary(long layerKey, int t, int primary) {
        if (primary < 0 || groups < 2) {
            return -1;
        }
        long h = Hashing.key(layerKey, KIND_BRIDGE, t);
        if (Hashing.uniform(h) >= spec.bridgeFraction()) {
            return -1;
        }
        int g = Hashing.below(Hashing.mix(h), groups - 1);
        return g >= primary ? g + 1 : g;
    }

    private static long direction(long layerKey, int kvHead, int group) {
        return Hashing.key(layerKey, KIND_DIRECTION, kvHead, group);
    }

    private ActiveGroupChain chain(int layer) {
        return chains.computeIfAbsent(layer, l -> new ActiveGroupChain(layerKey(l), permutation(l)));
    }

    private int[] permutation(int layer) {
        return rankToGroup.computeIfAbsent(layer, l -> Hashing.permutation(Hashing.key(layerKey(l), KIND_PERMUTATION), groups));
    }

    /** The attended groups of one layer, step by step; grown on demand and cached. */
    private final class ActiveGroupChain {
        private final long key;
        private final int[] rankToGroup;
        private int[][] states = new int[16][];
        private int computed;

        ActiveGroupChain(long layerKey, int[] rankToGroup) {
            this.key = Hashing.key(layerKey, KIND_CHAIN);
            this.rankToGroup = rankToGroup;
        }

        synchronized int[] at(int step) {
            while (computed <= step) {
                if (computed == states.length) {
                    states = Arrays.copyOf(states, Math.max(states.length * 2, step + 1));
                }
                states[computed] = computed == 0 ? first() : next(states[computed - 1], computed);
                computed++;
            }
            return states[step];
        }

        private int[] first() {
            int[] s = new int[activeGroups];
            for (int slot = 0; slot < activeGroups; slot++) {
                s[slot] = draw(0, slot, s, slot, -1);
            }
            return s;
        }

        private int[] next(int[] prev, int step) {
            int[] s = prev.clone();
            if (activeGroups == groups) {
                return s; // every group is attended: nothing to replace a group with
            }
            for (int slot = 0; slot < activeGroups; slot++) {
                if (Hashing.uniform(Hashing.key(key, step, slot, -1)) >= spec.groupRetention()) {
                    s[slot] = draw(step, slot, s, activeGroups, prev[slot]);
                }
            }
            return s;
        }

        /** A group drawn by popularity at {@code step}, not among {@code taken[0..n)} nor {@code also}. */
        private int draw(int step, int slot, int[] taken, int n, int also) {
            int shift = (int) Math.floorMod((long) Math.floor(step * spec.driftPerStep()), (long) groups);
            for (int attempt = 0; ; attempt++) {
                double u = Hashing.uniform(Hashing.key(key, step, slot, attempt));
                int rank = Arrays.binarySearch(popularityCdf, u);
                rank = rank >= 0 ? rank : Math.min(groups - 1, -rank - 1);
                if (attempt >= 64) {
                    rank = attempt - 64; // popularity keeps colliding: walk the ranks from the top
                }
                int g = rankToGroup[(rank + shift) % groups];
                if (g != also && !contains(taken, n, g, slot)) {
                    return g;
                }
            }
        }

        private static boolean contains(int[] a, int n, int g, int skip) {
            for (int i = 0; i < n; i++) {
                if (i != skip && a[i] == g) {
                    return true;
                }
            }
            return false;
        }
    }
}
