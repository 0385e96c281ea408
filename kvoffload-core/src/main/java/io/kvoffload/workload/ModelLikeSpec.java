package io.kvoffload.workload;

import io.kvoffload.KvShape;
import io.kvoffload.internal.util.Checks;

/**
 * Every knob of the {@link ModelLikeWorkload}, with defaults that carry what the literature reports
 * about the attention of real models (each property and its source: docs/swarm-offline.md §1b).
 * Build one with {@link #builder(KvShape, int)}; values are checked as they are set.
 *
 * <table>
 * <caption>Knobs and the property each one controls</caption>
 * <tr><th>knob</th><th>default</th><th>property (source)</th></tr>
 * <tr><td>{@code ropeTheta}</td><td>500,000</td><td>RoPE base of keys and queries (RoFormer; Llama 3)</td></tr>
 * <tr><td>{@code sinkTokens}</td><td>4</td><td>attention sinks (StreamingLLM)</td></tr>
 * <tr><td>{@code localWindow}</td><td>256</td><td>recency scale of local attention: the RoPE pairs
 *     whose wavelength lies in [window/2, 8 × window] carry it</td></tr>
 * <tr><td>{@code minRun}, {@code maxRun}, {@code topics}, {@code popularitySkew}</td><td>8, 256,
 *     tokens / (4 × mean run), 1.0</td><td>topics come in runs of log-uniform length spread through the context,
 *     topic popularity Zipf</td></tr>
 * <tr><td>{@code salienceSpread}</td><td>0.25</td><td>log-normal spread of a token's salience within
 *     its topic: attention within a topic is not uniform</td></tr>
 * <tr><td>{@code outlierChannels}, {@code outlierRatio}</td><td>headDim/32 (≥ 2), 12</td><td>a few key
 *     channels with large magnitude in every token (KIVI; KVQuant)</td></tr>
 * <tr><td>{@code valueOutlierFraction}, {@code valueOutlierRatio}</td><td>0.01, 6</td><td>values'
 *     outliers are per token, not per channel (KIVI)</td></tr>
 * <tr><td>{@code streamingShare}, {@code retrievalShare}</td><td>0.4, 0.15</td><td>head types within
 *     a layer; the rest are mixed (DuoAttention; RazorAttention; Retrieval Head)</td></tr>
 * <tr><td>{@code queryTopics}, {@code topicRetention}, {@code rampSteps}</td><td>4, 0.97, 4</td><td>a
 *     query mixes several topics; each stays with this probability per step and a new one fades in
 *     over {@code rampSteps} steps: the mixture drifts over decoding</td></tr>
 * <tr><td>{@code noiseLogit}</td><td>1.0</td><td>spread of the background logits</td></tr>
 * <tr><td>{@code structured}</td><td>true</td><td>false: the control — no topics, no local band, no
 *     heavy hitters, every query independent (sinks, RoPE and outlier channels stay)</td></tr>
 * </table>
 */
public final class ModelLikeSpec {
    private final KvShape shape;
    private final int tokens;
    private final long seed;
    private final double ropeTheta;
    private final int sinkTokens;
    private final int localWindow;
    private final int topics;
    private final int minRun;
    private final int maxRun;
    private final double popularitySkew;
    private final double salienceSpread;
    private final double keyNoise;
    private final int outlierChannels;
    private final double outlierRatio;
    private final double outlierLogit;
    private final double heavyHitterFraction;
    private final double valueOutlierFraction;
    private final double valueOutlierRatio;
    private final double streamingShare;
    private final double retrievalShare;
    private final int queryTopics;
    private final double topicRetention;
    private final int rampSteps;
    private final double noiseLogit;
    private final boolean structured;

    private ModelLikeSpec(Builder b) {
        if (b.minRun > b.maxRun) {
            throw new IllegalArgumentException("minRun = " + b.minRun + " exceeds maxRun = " + b.maxRun
                    + "; allowed: minRun ≤ maxRun");
        }
        if (b.streamingShare + b.retrievalShare > 1 + 1e-12) {
            throw new IllegalArgumentException("streamingShare + retrievalShare = " + (b.streamingShare + b.retrievalShare)
                    + "; allowed: at most 1");
        }
        this.shape = b.shape;
        this.tokens = b.tokens;
        this.seed = b.seed;
        this.ropeTheta = b.ropeTheta;
        this.sinkTokens = b.sinkTokens;
        this.localWindow = b.localWindow;
        // Auto: about four runs per topic, so every topic recurs through the context.
        double meanRun = b.minRun == b.maxRun ? b.minRun : (b.maxRun - b.minRun) / Math.log((double) b.maxRun / b.minRun);
        this.topics = b.topics > 0 ? b.topics : (int) Math.max(4, Math.min(4096, b.tokens / (4 * meanRun)));
        this.minRun = b.minRun;
        this.maxRun = b.maxRun;
        this.popularitySkew = b.popularitySkew;
        this.salienceSpread = b.salienceSpread;
        this.keyNoise = b.keyNoise;
        this.outlierChannels = b.outlierChannels >= 0 ? b.outlierChannels : Math.max(2, b.shape.headDim() / 32);
        this.outlierRatio = b.outlierRatio;
        this.outlierLogit = b.outlierLogit;
        this.heavyHitterFraction = b.heavyHitterFraction;
        this.valueOutlierFraction = b.valueOutlierFraction;
        this.valueOutlierRatio = b.valueOutlierRatio;
        this.streamingShare = b.streamingShare;
        this.retrievalShare = b.retrievalShare;
        this.queryTopics = b.queryTopics;
        this.topicRetention = b.topicRetention;
        this.rampSteps = b.rampSteps;
        this.noiseLogit = b.noiseLogit;
        this.structured = b.structured;
    }

    /**
     * A builder with the defaults above.
     *
     * @param shape model shape; head dimension even, 16..16384
     * @param tokens context length per layer, 1..2^30
     */
    public static Builder builder(KvShape shape, int tokens) {
        return new Builder(shape, tokens);
    }

    public KvShape shape() { return shape; }
    public int tokens() { return tokens; }
    public long seed() { return seed; }
    public double ropeTheta() { return ropeTheta; }
    public int sinkTokens() { return sinkTokens; }
    public int localWindow() { return localWindow; }
    /** Distinct topics of the context. */
    public int topics() { return topics; }
    public int minRun() { return minRun; }
    public int maxRun() { return maxRun; }
    public double popularitySkew() { return popularitySkew; }
    public double salienceSpread() { return salienceSpread; }
    public double keyNoise() { return keyNoise; }
    /** Key channels with outlier magnitude per KV head. */
    public int outlierChannels() { return outlierChannels; }
    /** Magnitude of an outlier key channel over a typical channel's (RMS). */
    public double outlierRatio() { return outlierRatio; }
    /** Spread of the logits the outlier channels contribute. */
    public double outlierLogit() { return outlierLogit; }
    public double heavyHitterFraction() { return heavyHitterFraction; }
    public double valueOutlierFraction() { return valueOutlierFraction; }
    public double valueOutlierRatio() { return valueOutlierRatio; }
    public double streamingShare() { return streamingShare; }
    public double retrievalShare() { return retrievalShare; }
    public int queryTopics() { return queryTopics; }
    public double topicRetention() { return topicRetention; }
    public int rampSteps() { return rampSteps; }
    public double noiseLogit() { return noiseLogit; }
    public boolean structured() { return structured; }

    /** A builder holding this spec's values, to change a few knobs. */
    public Builder toBuilder() {
        Builder b = new Builder(shape, tokens);
        b.seed = seed;
        b.ropeTheta = ropeTheta;
        b.sinkTokens = sinkTokens;
        b.localWindow = localWindow;
        b.topics = topics;
        b.minRun = minRun;
        b.maxRun = maxRun;
        b.popularitySkew = popularitySkew;
        b.salienceSpread = salienceSpread;
        b.keyNoise = keyNoise;
        b.outlierChannels = outlierChannels;
        b.outlierRatio = outlierRatio;
        b.outlierLogit = outlierLogit;
        b.heavyHitterFraction = heavyHitterFraction;
        b.valueOutlierFraction = valueOutlierFraction;
        b.valueOutlierRatio = valueOutlierRatio;
        b.streamingShare = streamingShare;
        b.retrievalShare = retrievalShare;
        b.queryTopics = queryTopics;
        b.topicRetention = topicRetention;
        b.rampSteps = rampSteps;
        b.noiseLogit = noiseLogit;
        b.structured = structured;
        return b;
    }

    @Override
    public String toString() {
        return "ModelLikeSpec{" + shape.fingerprint() + ", tokens=" + tokens + ", seed=" + seed + ", theta=" + ropeTheta
                + ", sinks=" + sinkTokens + ", window=" + localWindow + ", topics=" + topics + " (runs " + minRun + ".."
                + maxRun + ", skew " + popularitySkew + ", salience " + salienceSpread + ", keyNoise " + keyNoise
                + "), outliers=" + outlierChannels + "×" + outlierRatio + ", heads " + streamingShare + " streaming / "
                + retrievalShare + " retrieval, queryTopics=" + queryTopics + " (retention " + topicRetention + "), noise="
                + noiseLogit + (structured ? "" : ", CONTROL (no structure)") + "}";
    }

    /** Builder of {@link ModelLikeSpec}; every setter checks its value and returns {@code this}. */
    public static final class Builder {
        private final KvShape shape;
        private final int tokens;
        private long seed = 0x5EEDL;
        private double ropeTheta = 500_000;
        private int sinkTokens = 4;
        private int localWindow = 256;
        private int topics = 0;
        private int minRun = 8;
        private int maxRun = 256;
        private double popularitySkew = 1.0;
        private double salienceSpread = 0.25;
        private double keyNoise = 0.6;
        private int outlierChannels = -1;
        private double outlierRatio = 12;
        private double outlierLogit = 0.5;
        private double heavyHitterFraction = 0.002;
        private double valueOutlierFraction = 0.01;
        private double valueOutlierRatio = 6;
        private double streamingShare = 0.4;
        private double retrievalShare = 0.15;
        private int queryTopics = 4;
        private double topicRetention = 0.97;
        private int rampSteps = 4;
        private double noiseLogit = 1.0;
        private boolean structured = true;

        private Builder(KvShape shape, int tokens) {
            Checks.notNull("shape", shape);
            Checks.inRange("shape.headDim", shape.headDim(), 16, 16384);
            if (shape.headDim() % 2 != 0) {
                throw new IllegalArgumentException("shape.headDim = " + shape.headDim() + " is odd; allowed: even (RoPE pairs)");
            }
            Checks.inRange("tokens", tokens, 1, 1 << 30);
            this.shape = shape;
            this.tokens = tokens;
        }

        /** Seed of every random choice. */
        public Builder seed(long v) { this.seed = v; return this; }
        /** RoPE base θ, 100..1e9. */
        public Builder ropeTheta(double v) { this.ropeTheta = Checks.inRange("ropeTheta", v, 100, 1e9); return this; }
        /** Attention-sink tokens at the start, 0..tokens. */
        public Builder sinkTokens(int v) { this.sinkTokens = Checks.inRange("sinkTokens", v, 0, tokens); return this; }
        /** Recency scale in tokens, 4..2^24. */
        public Builder localWindow(int v) { this.localWindow = Checks.inRange("localWindow", v, 4, 1 << 24); return this; }
        /** Distinct topics, 1..65536; 0 for about four runs per topic (tokens / (4 × mean run), 4..4096). */
        public Builder topics(int v) { this.topics = Checks.inRange("topics", v, 0, 65536); return this; }
        /** Shortest topic run in tokens, 1..2^20. */
        public Builder minRun(int v) { this.minRun = Checks.inRange("minRun", v, 1, 1 << 20); return this; }
        /** Longest topic run in tokens, 1..2^20 (at least minRun). */
        public Builder maxRun(int v) { this.maxRun = Checks.inRange("maxRun", v, 1, 1 << 20); return this; }
        /** Zipf exponent of topic popularity, 0..4. */
        public Builder popularitySkew(double v) { this.popularitySkew = Checks.inRange("popularitySkew", v, 0, 4); return this; }
        /** Standard deviation of log-salience within a topic, 0..2. */
        public Builder salienceSpread(double v) { this.salienceSpread = Checks.inRange("salienceSpread", v, 0, 2); return this; }
        /** Key noise relative to the topic direction, 0..10. */
        public Builder keyNoise(double v) { this.keyNoise = Checks.inRange("keyNoise", v, 0, 10); return this; }
        /** Outlier key channels per KV head, 0..headDim/4. */
        public Builder outlierChannels(int v) { this.outlierChannels = Checks.inRange("outlierChannels", v, 0, shape.headDim() / 4); return this; }
        /** Outlier channel magnitude over a typical channel's, 1..1000. */
        public Builder outlierRatio(double v) { this.outlierRatio = Checks.inRange("outlierRatio", v, 1, 1000); return this; }
        /** Logit spread the outlier channels contribute, 0..10. */
        public Builder outlierLogit(double v) { this.outlierLogit = Checks.inRange("outlierLogit", v, 0, 10); return this; }
        /** Share of heavy-hitter tokens, 0..1. */
        public Builder heavyHitterFraction(double v) { this.heavyHitterFraction = Checks.inRange("heavyHitterFraction", v, 0, 1); return this; }
        /** Share of tokens whose value has outlier magnitude, 0..1. */
        public Builder valueOutlierFraction(double v) { this.valueOutlierFraction = Checks.inRange("valueOutlierFraction", v, 0, 1); return this; }
        /** Magnitude of an outlier value token over a typical one, 1..1000. */
        public Builder valueOutlierRatio(double v) { this.valueOutlierRatio = Checks.inRange("valueOutlierRatio", v, 1, 1000); return this; }
        /** Share of streaming query heads, 0..1. */
        public Builder streamingShare(double v) { this.streamingShare = Checks.inRange("streamingShare", v, 0, 1); return this; }
        /** Share of retrieval query heads, 0..1. */
        public Builder retrievalShare(double v) { this.retrievalShare = Checks.inRange("retrievalShare", v, 0, 1); return this; }
        /** Topics a query mixes, 1..64 (capped at the topics). */
        public Builder queryTopics(int v) { this.queryTopics = Checks.inRange("queryTopics", v, 1, 64); return this; }
        /** Probability a query topic stays for the next step, 0..1. */
        public Builder topicRetention(double v) { this.topicRetention = Checks.inRange("topicRetention", v, 0, 1); return this; }
        /** Steps a new query topic takes to reach full weight, 1..1024. */
        public Builder rampSteps(int v) { this.rampSteps = Checks.inRange("rampSteps", v, 1, 1024); return this; }
        /** Spread of the background logits, 0..10. */
        public Builder noiseLogit(double v) { this.noiseLogit = Checks.inRange("noiseLogit", v, 0, 10); return this; }
        /** False for the control: no topic, local or heavy-hitter structure and independent queries. */
        public Builder structured(boolean v) { this.structured = v; return this; }

        public ModelLikeSpec build() {
            return new ModelLikeSpec(this);
        }
    }
}
