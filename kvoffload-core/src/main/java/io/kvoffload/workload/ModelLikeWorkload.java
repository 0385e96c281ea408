package io.kvoffload.workload;

import io.kvoffload.KvShape;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.strategy.LayerKv;
import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A seeded, deterministic generator of keys, values and decoding queries built the way a real
 * model's are: content vectors turned by RoPE, with head types, outlier channels and topic runs.
 * The knobs live in {@link ModelLikeSpec}; docs/swarm-offline.md §1b cites the source of each
 * property.
 *
 * <h2>How a key and a query are built</h2>
 * Per head, a <em>content</em> vector is built first and then turned by {@link Rope RoPE} (θ =
 * 500,000 by default) to the token's position, exactly as a model's attention sees post-RoPE keys
 * and queries. The content's channels split by the wavelength of their RoPE pair, because what
 * survives rotation decides what a channel can carry (Barbero et al. 2024, "Round and Round We
 * Go! What makes Rotary Positional Encodings useful?": models use the high frequencies for
 * positional patterns and the lowest for semantics):
 * <ul>
 * <li><b>sink</b> (the lowest-frequency pair, nearly still over the whole context): sink tokens
 *     carry a large value there and every query a head-type dependent weight — attention sinks;
 *     heavy hitters carry part of it;</li>
 * <li><b>semantic</b> (pairs whose wavelength is at least 16,384 positions): a token carries the
 *     direction of its topic times its salience, plus noise; a query the weighted directions of the
 *     topics it mixes;</li>
 * <li><b>local</b> (wavelengths within [window/2, 8 × window]): every key of a KV head carries the
 *     same vector and queries carry it too, so RoPE turns their dot product into a sum of cosines
 *     of the distance: high nearby, averaging out far away — the recency window;</li>
 * <li><b>noise</b> (the rest): independent per token and per query step — the background;</li>
 * <li><b>outliers</b>: a few channels per KV head where every key has a large magnitude (KIVI,
 *     KVQuant); queries give them little weight.</li>
 * </ul>
 * Each query head has a {@link HeadType} (exact shares per layer) that sets the weight of each part.
 * Values are a topic direction plus noise, with per-token outliers.
 *
 * <h2>Topics and drift</h2>
 * The context is cut into runs of log-uniform length, each run on one topic drawn by Zipf
 * popularity, so every topic recurs in pieces spread through the context (the same cut in every
 * layer: it is the text's). Per layer, a query mixes {@code queryTopics} topics — the one of the
 * newest run first; each stays with probability {@code topicRetention} per step and a replacement
 * fades in over {@code rampSteps} steps. Heads weight the topics differently; retrieval heads take
 * only their strongest.
 *
 * <p>Nothing is stored per token but the run table ({@code ~tokens/70} runs): every element is a
 * pure function of the seed and its coordinates. Every decoding query sits at position
 * {@code tokens}, right after the context: the stored KV does not grow with the decoded tokens, so
 * a query at {@code tokens + s} would find its recent window empty; decoding moves the content
 * (the topic mixture), not the position. Immutable apart from caches, safe to share between threads.
 */
public final class ModelLikeWorkload extends GeneratedWorkload {
    private static final long KIND_RUN = 21, KIND_DIRECTION = 22, KIND_NOISE = 23, KIND_LOCAL = 24, KIND_SALIENCE = 25,
            KIND_HEAVY = 26, KIND_OUTLIER = 27, KIND_VALUE = 28, KIND_VALUE_DIR = 29, KIND_VALUE_OUT = 30,
            KIND_HEAD_TYPE = 31, KIND_HEAD_WEIGHT = 32, KIND_QUERY_NOISE = 33, KIND_QUERY_OUTLIER = 34,
            KIND_CHAIN = 35, KIND_LAYER = 36;
    /** Wavelength (positions) from which a RoPE pair carries semantics: it barely turns over a 16K context. */
    static final double SEMANTIC_WAVELENGTH = 16_384;
    /** A sink key's value in the sink channel (a typical channel's RMS is about 1). */
    static final float SINK_KEY = 8f;
    /** A heavy hitter's share of a sink's boost. */
    static final double HEAVY_SHARE = 0.55;

    static final byte SINK = 0, SEMANTIC = 1, LOCAL = 2, NOISE = 3;

    private final ModelLikeSpec spec;
    private final Rope rope;
    private final byte[] kind;
    private final int sinkChannel;
    private final int semanticChannels;
    private final int localChannels;
    private final int[] runStart;
    private final int[] runTopic;
    private final double[] popularityCdf;
    private final int queryTopics;
    private final ConcurrentHashMap<Integer, int[][]> outliers = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Integer, HeadType[]> headTypes = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Integer, TopicChain> chains = new ConcurrentHashMap<>();

    public ModelLikeWorkload(ModelLikeSpec spec) {
        super(Checks.notNull("spec", spec).shape(), spec.tokens());
        this.spec = spec;
        this.rope = new Rope(headDim, spec.ropeTheta());
        int pairs = rope.pairs();
        this.kind = new byte[headDim];
        this.sinkChannel = pairs - 1;
        int sem = 0, loc = 0;
        for (int p = 0; p < pairs; p++) {
            double lambda = rope.wavelength(p);
            byte k;
            if (p == pairs - 1) {
                k = SINK;
            } else if (!spec.structured()) {
                k = NOISE;
            } else if (lambda >= SEMANTIC_WAVELENGTH) {
                k = SEMANTIC;
                sem += 2;
            } else if (lambda >= spec.localWindow() / 2.0 && lambda <= 8.0 * spec.localWindow()) {
                k = LOCAL;
                loc += 2;
            } else {
                k = NOISE;
            }
            kind[p] = k;
            kind[p + pairs] = k;
        }
        this.semanticChannels = sem;
        this.localChannels = loc;
        if (spec.structured() && sem == 0) {
            throw new IllegalArgumentException("ropeTheta = " + spec.ropeTheta() + " with headDim " + headDim
                    + " leaves no RoPE pair with a wavelength of at least " + (int) SEMANTIC_WAVELENGTH
                    + " positions to carry topics; allowed: a larger ropeTheta");
        }
        int topics = spec.topics();
        this.popularityCdf = Hashing.zipfCdf(topics, spec.popularitySkew());
        // The run table: log-uniform lengths, Zipf topics; one pass, the same for every layer.
        int cap = 16;
        int[] starts = new int[cap];
        int[] topicsOf = new int[cap];
        int n = 0;
        double logMin = Math.log(spec.minRun()), logMax = Math.log(spec.maxRun() + 1.0);
        for (long start = Math.min(spec.sinkTokens(), spec.tokens()); start < spec.tokens(); n++) {
            if (n == cap) {
                cap *= 2;
                starts = Arrays.copyOf(starts, cap);
                topicsOf = Arrays.copyOf(topicsOf, cap);
            }
            long h = Hashing.key(spec.seed(), KIND_RUN, n);
            int len = (int) Math.max(spec.minRun(), Math.min(spec.maxRun(),
                    Math.floor(Math.exp(logMin + (logMax - logMin) * Hashing.uniform(h)))));
            starts[n] = (int) start;
            topicsOf[n] = drawTopic(Hashing.uniform(Hashing.mix(h)));
            start += len;
        }
        this.runStart = Arrays.copyOf(starts, n);
        this.runTopic = Arrays.copyOf(topicsOf, n);
        // A query mixes topics the context holds, so at most as many as it holds (none if it is all sinks).
        this.queryTopics = spec.structured() ? Math.min(spec.queryTopics(), (int) Arrays.stream(runTopic).distinct().count()) : 0;
    }

    public ModelLikeSpec spec() { return spec; }

    // ---------------------------------------------------------------- ground truth

    /** Whether {@code token} is an attention sink. */
    public boolean isSink(int token) {
        return token < spec.sinkTokens();
    }

    /** The topic of {@code token} (the same in every layer), or −1 for a sink or in the control. */
    public int topic(int token) {
        Checks.index("token", token, spec.tokens());
        return topicOf(token);
    }

    /** Topic runs of the context (their starts, ascending, a copy). */
    public int[] runStarts() {
        return runStart.clone();
    }

    /** The type of query head {@code queryHead} in {@code layer}. */
    public HeadType headType(int layer, int queryHead) {
        Checks.index("layer", layer, shape.layers());
        Checks.index("queryHead", queryHead, shape.queryHeads());
        return types(layer)[queryHead];
    }

    /** The outlier key channels of {@code kvHead} in {@code layer} (a copy, ascending; channel indices before RoPE pairs them). */
    public int[] outlierChannels(int layer, int kvHead) {
        Checks.index("layer", layer, shape.layers());
        Checks.index("kvHead", kvHead, shape.kvHeads());
        return outliers(layer)[kvHead].clone();
    }

    /** The topics the query of {@code step} mixes in {@code layer} (a copy; empty in the control). */
    public int[] queryTopics(int layer, int step) {
        checkStep(layer, step);
        return spec.structured() ? chain(layer).topics(step).clone() : new int[0];
    }

    // ---------------------------------------------------------------- keys and values

    /** A lazy view of one layer: keys and values are generated on every read. */
    @Override
    public LayerKv layer(int layer) {
        Checks.index("layer", layer, shape.layers());
        long lk = layerKey(layer);
        int[][] out = outliers(layer);
        return new GeneratedLayer("ModelLikeWorkload.layer(" + layer + ")", spec.tokens(), shape.kvHeads(), headDim) {
            @Override
            void key(int kvHead, int token, float[] dst, int off) {
                content(lk, out[kvHead], kvHead, token, dst, off);
                rope.rotate(dst, off, token, dst, off); // in place: each pair is read before it is written
            }

            @Override
            void value(int kvHead, int token, float[] dst, int off) {
                ModelLikeWorkload.this.value(lk, kvHead, token, dst, off);
            }
        };
    }

    /** Key content of {@code token} before RoPE (for tests of the channel structure). */
    void contentKey(int layer, int kvHead, int token, float[] dst) {
        content(layerKey(layer), outliers(layer)[kvHead], kvHead, token, dst, 0);
    }

    private void content(long lk, int[] outlierChannels, int kvHead, int t, float[] dst, int off) {
        int topic = spec.structured() ? topicOf(t) : -1;
        long noise = Hashing.key(lk, KIND_NOISE, kvHead, t);
        long dir = topic >= 0 ? direction(lk, kvHead, topic) : 0;
        long local = Hashing.key(lk, KIND_LOCAL, kvHead);
        double salience = topic >= 0 ? salience(lk, t) : 0;
        float sinkValue = t < spec.sinkTokens() ? SINK_KEY
                : spec.structured() && heavy(lk, t) ? (float) (SINK_KEY * HEAVY_SHARE) : Float.NaN;
        float keyNoise = (float) spec.keyNoise();
        for (int c = 0; c < headDim; c++) {
            float u = Hashing.component(noise, c);
            dst[off + c] = switch (kind[c]) {
                case SINK -> c == sinkChannel && !Float.isNaN(sinkValue) ? sinkValue : 0.3f * u;
                case SEMANTIC -> (float) (salience * Hashing.component(dir, c)) + keyNoise * u;
                // Sinks carry no local component: their logit must not swing with the distance (they are "no-op" keys).
                case LOCAL -> (t < spec.sinkTokens() ? 0f : Hashing.component(local, c)) + 0.3f * u;
                default -> u;
            };
        }
        for (int c : outlierChannels) {
            // Large in every token with the channel's own sign, varying little: what makes per-channel key quantisation work (KIVI).
            dst[off + c] = (float) (spec.outlierRatio() * sign(lk, kvHead, c) * (1 + 0.1 * Hashing.component(noise, c)));
        }
    }

    private void value(long lk, int kvHead, int t, float[] dst, int off) {
        int topic = spec.structured() ? topicOf(t) : -1;
        long noise = Hashing.key(lk, KIND_VALUE, kvHead, t);
        // Per-token outliers: the whole token's value is large (KIVI quantises values per token).
        float scale = Hashing.uniform(Hashing.key(lk, KIND_VALUE_OUT, t)) < spec.valueOutlierFraction()
                ? (float) spec.valueOutlierRatio() : 1f;
        if (topic >= 0) {
            long dir = Hashing.key(lk, KIND_VALUE_DIR, kvHead, topic);
            for (int c = 0; c < headDim; c++) {
                dst[off + c] = scale * (0.6f * Hashing.component(dir, c) + 0.8f * Hashing.component(noise, c));
            }
        } else {
            for (int c = 0; c < headDim; c++) {
                dst[off + c] = scale * Hashing.component(noise, c);
            }
        }
    }

    // ---------------------------------------------------------------- queries

    /** Writes the decoding query of {@code step} (at position {@code tokens}), head after head. */
    @Override
    public void query(int layer, int step, float[] dst, int offset) {
        checkQuery(layer, step, dst, offset);
        long lk = layerKey(layer);
        int[][] out = outliers(layer);
        HeadType[] types = types(layer);
        int[] topics = spec.structured() ? chain(layer).topics(step) : new int[0];
        int[] ages = spec.structured() ? chain(layer).ages(step) : new int[0];
        long position = spec.tokens(); // the KV does not grow with the decoded tokens: every query sits right after it
        int group = shape.groupSize();
        int noiseChannels = 0;
        for (byte k : kind) {
            noiseChannels += k == NOISE ? 1 : 0;
        }
        double noiseScale = spec.noiseLogit() / Math.sqrt(Math.max(1, noiseChannels));
        double sqrtD = Math.sqrt(headDim);
        float[] q = new float[headDim];
        double[] w = new double[topics.length];
        for (int j = 0; j < shape.queryHeads(); j++) {
            int kv = j / group;
            HeadType type = types[j];
            Arrays.fill(q, 0f);
            long qNoise = Hashing.key(lk, KIND_QUERY_NOISE, j, step);
            for (int c = 0; c < headDim; c++) {
                if (kind[c] == NOISE) {
                    q[c] = (float) (noiseScale * Hashing.component(qNoise, c));
                }
            }
            q[sinkChannel] = (float) (type.sinkLogit() / SINK_KEY);
            if (spec.structured()) {
                long local = Hashing.key(lk, KIND_LOCAL, kv);
                double localScale = type.localLogit() / Math.max(1, localChannels);
                weights(lk, j, type, topics, ages, w);
                double topicScale = type.topicLogit() / semanticChannels;
                for (int c = 0; c < headDim; c++) {
                    if (kind[c] == LOCAL) {
                        q[c] = (float) (localScale * Hashing.component(local, c));
                    } else if (kind[c] == SEMANTIC) {
                        double v = 0;
                        for (int a = 0; a < topics.length; a++) {
                            if (w[a] != 0) {
                                v += w[a] * Hashing.component(direction(lk, kv, topics[a]), c);
                            }
                        }
                        q[c] = (float) (topicScale * v);
                    }
                }
            }
            int[] oc = out[kv];
            // Structured heads keep their weights on the outlier channels; the control draws them afresh each step.
            long qOut = spec.structured() ? Hashing.key(lk, KIND_QUERY_OUTLIER, j) : Hashing.key(lk, KIND_QUERY_OUTLIER, j, step);
            double outScale = spec.outlierLogit() / (spec.outlierRatio() * Math.sqrt(Math.max(1, oc.length)));
            int pairs = headDim / 2;
            for (int c : oc) {
                // RoPE pairs channel c with c ± d/2: a query weight there would meet the outlier through the
                // rotation's cross term, so the whole pair gets the small outlier weight.
                int partner = c < pairs ? c + pairs : c - pairs;
                q[c] = (float) (outScale * Hashing.component(qOut, c));
                q[partner] = (float) (outScale * Hashing.component(qOut, partner));
            }
            for (int c = 0; c < headDim; c++) {
                q[c] *= (float) sqrtD;
            }
            rope.rotate(q, 0, position, dst, offset + j * headDim);
        }
    }

    /** Topic weights of query head {@code j}: its own emphasis per topic, faded in by age; a retrieval head keeps its strongest. */
    private void weights(long lk, int j, HeadType type, int[] topics, int[] ages, double[] w) {
        int best = -1;
        for (int a = 0; a < topics.length; a++) {
            double ramp = Math.min(1.0, (ages[a] + 1.0) / spec.rampSteps());
            w[a] = ramp * (0.6 + 0.4 * Hashing.uniform(Hashing.key(lk, KIND_HEAD_WEIGHT, j, topics[a])));
            if (best < 0 || w[a] > w[best]) {
                best = a;
            }
        }
        if (type.singleTopic()) {
            for (int a = 0; a < topics.length; a++) {
                w[a] = a == best ? Math.min(1.0, (ages[a] + 1.0) / spec.rampSteps()) : 0;
            }
        }
    }

    // ---------------------------------------------------------------- internals

    private long layerKey(int layer) {
        return Hashing.key(spec.seed(), KIND_LAYER, layer);
    }

    private int topicOf(int t) {
        if (t < spec.sinkTokens() || runStart.length == 0) {
            return -1;
        }
        int i = Arrays.binarySearch(runStart, t);
        return runTopic[i >= 0 ? i : -i - 2];
    }

    private int drawTopic(double u) {
        int r = Arrays.binarySearch(popularityCdf, u);
        return r >= 0 ? r : Math.min(popularityCdf.length - 1, -r - 1);
    }

    private double salience(long lk, int t) {
        double s = spec.salienceSpread();
        // Sum of two unit-variance uniforms / √2: bell-shaped, bounded, unit variance.
        double z = (Hashing.component(Hashing.key(lk, KIND_SALIENCE, t), 0)
                + Hashing.component(Hashing.key(lk, KIND_SALIENCE, t), 1)) / Math.sqrt(2);
        return Math.exp(s * z - s * s / 2);
    }

    private boolean heavy(long lk, int t) {
        return Hashing.uniform(Hashing.key(lk, KIND_HEAVY, t)) < spec.heavyHitterFraction();
    }

    private static long direction(long lk, int kvHead, int topic) {
        return Hashing.key(lk, KIND_DIRECTION, kvHead, topic);
    }

    private static int sign(long lk, int kvHead, int c) {
        return (Hashing.key(lk, KIND_OUTLIER, kvHead, c) & 1) == 0 ? 1 : -1;
    }

    private int[][] outliers(int layer) {
        return outliers.computeIfAbsent(layer, l -> {
            long lk = layerKey(l);
            int[][] all = new int[shape.kvHeads()][];
            int n = spec.outlierChannels();
            for (int h = 0; h < all.length; h++) {
                int[] picked = new int[n];
                int count = 0;
                for (int attempt = 0; count < n; attempt++) {
                    int c = Hashing.below(Hashing.key(lk, KIND_OUTLIER, h, 1000 + attempt), headDim);
                    if (kind[c] == SINK || contains(picked, count, c)) {
                        continue;
                    }
                    picked[count++] = c;
                }
                Arrays.sort(picked);
                all[h] = picked;
            }
            return all;
        });
    }

    private HeadType[] types(int layer) {
        return headTypes.computeIfAbsent(layer, l -> {
            // Exact shares per layer: a seeded permutation of the heads, streaming first, then retrieval.
            int n = shape.queryHeads();
            int[] perm = Hashing.permutation(Hashing.key(layerKey(l), KIND_HEAD_TYPE), n);
            int streaming = (int) Math.round(spec.streamingShare() * n);
            int retrieval = Math.min(n - streaming, (int) Math.round(spec.retrievalShare() * n));
            HeadType[] t = new HeadType[n];
            for (int i = 0; i < n; i++) {
                t[perm[i]] = i < streaming ? HeadType.STREAMING : i < streaming + retrieval ? HeadType.RETRIEVAL : HeadType.MIXED;
            }
            return t;
        });
    }

    private TopicChain chain(int layer) {
        return chains.computeIfAbsent(layer, l -> new TopicChain(layerKey(l)));
    }

    private static boolean contains(int[] a, int n, int v) {
        for (int i = 0; i < n; i++) {
            if (a[i] == v) {
                return true;
            }
        }
        return false;
    }

    /** The topics a layer's query mixes and their ages, step by step; grown on demand and cached. */
    private final class TopicChain {
        private final long key;
        private int[][] topics = new int[16][];
        private int[][] ages = new int[16][];
        private int computed;

        TopicChain(long layerKey) {
            this.key = Hashing.key(layerKey, KIND_CHAIN);
        }

        synchronized int[] topics(int step) {
            grow(step);
            return topics[step];
        }

        synchronized int[] ages(int step) {
            grow(step);
            return ages[step];
        }

        private void grow(int step) {
            while (computed <= step) {
                if (computed == topics.length) {
                    int cap = Math.max(topics.length * 2, step + 1);
                    topics = Arrays.copyOf(topics, cap);
                    ages = Arrays.copyOf(ages, cap);
                }
                int[] t = new int[queryTopics];
                int[] a = new int[queryTopics];
                if (computed == 0) {
                    int current = topicOf(spec.tokens() - 1);
                    for (int s = 0; s < queryTopics; s++) {
                        t[s] = s == 0 && current >= 0 ? current : draw(0, s, t, s);
                        a[s] = spec.rampSteps(); // the prompt's topics are already at full weight
                    }
                } else {
                    int[] pt = topics[computed - 1];
                    int[] pa = ages[computed - 1];
                    System.arraycopy(pt, 0, t, 0, queryTopics);
                    for (int s = 0; s < queryTopics; s++) {
                        if (Hashing.uniform(Hashing.key(key, computed, s, -1)) >= spec.topicRetention()) {
                            t[s] = draw(computed, s, t, queryTopics);
                            a[s] = 0;
                        } else {
                            a[s] = pa[s] + 1;
                        }
                    }
                }
                topics[computed] = t;
                ages[computed] = a;
                computed++;
            }
        }

        /**
         * The topic of a uniformly drawn context token, not among {@code taken[0..n)} (slot {@code slot}
         * excepted): a query refers back to what the context holds, popular topics more often.
         */
        private int draw(int step, int slot, int[] taken, int n) {
            int first = Math.min(spec.sinkTokens(), spec.tokens() - 1);
            for (int attempt = 0; ; attempt++) {
                int g = attempt < 64
                        ? topicOf(first + Hashing.below(Hashing.key(key, step, slot, attempt), spec.tokens() - first))
                        : runTopic[(attempt - 64) % runTopic.length];
                boolean clash = false;
                for (int i = 0; i < n; i++) {
                    if (i != slot && taken[i] == g) {
                        clash = true;
                        break;
                    }
                }
                if (!clash) {
                    return g;
                }
            }
        }
    }
}
