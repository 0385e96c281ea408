package io.kvoffload.workload;

import io.kvoffload.KvShape;
import io.kvoffload.internal.util.Checks;

/**
 * Every knob of the {@link SyntheticWorkload}, with defaults chosen so the generated attention
 * shows what the papers report. Build one with {@link #builder(KvShape, int)}; values are checked
 * when {@link Builder#build()} runs.
 *
 * <p>Logit knobs are in units of the softmax input {@code q·k/√headDim}: a token whose logit is
 * {@code x} above another receives {@code e^x} times its attention weight.
 *
 * <table>
 * <caption>Knobs and the property each one controls</caption>
 * <tr><th>knob</th><th>default</th><th>property (source)</th></tr>
 * <tr><td>{@code sinkTokens}, {@code sinkLogit}</td><td>4, 14</td><td>attention sinks: the first
 *     tokens draw a large share of every query's attention (StreamingLLM; InfLLM keeps them)</td></tr>
 * <tr><td>{@code localWindow}, {@code localLogit}</td><td>256, 4</td><td>recency: tokens within
 *     about {@code localWindow} positions of the query get a boost that fades with distance, through
 *     RoPE-like rotating key/query dimensions (Swarm keeps a 256-token local window in DRAM)</td></tr>
 * <tr><td>{@code heavyHitterFraction}, {@code heavyHitterLogit}</td><td>0.002, 5</td><td>heavy
 *     hitters: scattered tokens every query attends to (H2O)</td></tr>
 * <tr><td>{@code spanLength}, {@code spansPerGroup}, {@code topicLogit}</td><td>8, 8, 8</td><td>
 *     co-activation groups: consecutive spans of {@code spanLength} tokens belong to one group, a
 *     group is {@code spansPerGroup} spans scattered over the context; a query attends to all members
 *     of the groups it is "about" (Swarm §3.1)</td></tr>
 * <tr><td>{@code bridgeFraction}</td><td>0.05</td><td>overlapping groups: this fraction of tokens
 *     also belongs to a second, random group, so it is co-activated with two groups that rarely
 *     co-activate with each other (Swarm §5.1, the case that needs replicas)</td></tr>
 * <tr><td>{@code activeGroups}, {@code popularitySkew}</td><td>6, 1.0</td><td>how many groups a
 *     query attends to, and the Zipf exponent of group popularity: a few groups recur often (KVSwap
 *     Fig. 8: fewer than 22% of groups make 80% of occurrences)</td></tr>
 * <tr><td>{@code groupRetention}</td><td>0.9</td><td>temporal overlap: the probability that a group
 *     attended at one decoding step is attended at the next. KVSwap Fig. 8 reports that 75–80% of the
 *     selected groups recur between adjacent steps; selected sets also hold noise tokens that do not
 *     recur, so a retention of 0.9 is what makes the measured overlap of the top-100 KVSwap groups
 *     (4 consecutive tokens each) land at about 0.75–0.8</td></tr>
 * <tr><td>{@code driftPerStep}</td><td>0.02</td><td>slow drift: the popularity ranking rotates by this
 *     many ranks per step, so the hot groups of step 0 cool down over hundreds of steps (Swarm
 *     Challenge #4)</td></tr>
 * <tr><td>{@code gqaCorrelation}</td><td>0.8</td><td>GQA: cosine similarity between the semantic parts
 *     of two query heads that share a KV head</td></tr>
 * <tr><td>{@code keyNoise}</td><td>0.5</td><td>per-token key noise relative to a group direction;
 *     it spreads the background logits so the tail of a top-k set changes from query to query</td></tr>
 * <tr><td>{@code seed}</td><td>0x5eed</td><td>every number is a pure function of the seed and its
 *     coordinates</td></tr>
 * </table>
 */
public final class WorkloadSpec {
    private final KvShape shape;
    private final int tokens;
    private final long seed;
    private final int sinkTokens;
    private final double sinkLogit;
    private final int localWindow;
    private final double localLogit;
    private final int positionalPairs;
    private final double heavyHitterFraction;
    private final double heavyHitterLogit;
    private final int spanLength;
    private final int spansPerGroup;
    private final double topicLogit;
    private final double bridgeFraction;
    private final int activeGroups;
    private final double popularitySkew;
    private final double groupRetention;
    private final double driftPerStep;
    private final double gqaCorrelation;
    private final double keyNoise;

    private WorkloadSpec(Builder b) {
        this.shape = b.shape;
        this.tokens = b.tokens;
        this.seed = b.seed;
        this.sinkTokens = b.sinkTokens;
        this.sinkLogit = b.sinkLogit;
        this.localWindow = b.localWindow;
        this.localLogit = b.localLogit;
        this.positionalPairs = b.positionalPairs > 0 ? b.positionalPairs
                : Math.max(1, Math.min(8, b.shape.headDim() / 16));
        this.heavyHitterFraction = b.heavyHitterFraction;
        this.heavyHitterLogit = b.heavyHitterLogit;
        this.spanLength = b.spanLength;
        this.spansPerGroup = b.spansPerGroup;
        this.topicLogit = b.topicLogit;
        this.bridgeFraction = b.bridgeFraction;
        this.activeGroups = b.activeGroups;
        this.popularitySkew = b.popularitySkew;
        this.groupRetention = b.groupRetention;
        this.driftPerStep = b.driftPerStep;
        this.gqaCorrelation = b.gqaCorrelation;
        this.keyNoise = b.keyNoise;
    }

    /**
     * A builder with the defaults above.
     *
     * @param shape model shape: layers, query and KV heads, head dimension (at least 8) and the dtype
     *     the byte emitters default to
     * @param tokens context length per layer, 1..2^30
     */
    public static Builder builder(KvShape shape, int tokens) {
        return new Builder(shape, tokens);
    }

    public KvShape shape() { return shape; }
    public int tokens() { return tokens; }
    public long seed() { return seed; }
    public int sinkTokens() { return sinkTokens; }
    public double sinkLogit() { return sinkLogit; }
    public int localWindow() { return localWindow; }
    public double localLogit() { return localLogit; }
    /** Rotating (cos, sin) dimension pairs per head that carry position; default headDim/16 in 1..8. */
    public int positionalPairs() { return positionalPairs; }
    public double heavyHitterFraction() { return heavyHitterFraction; }
    public double heavyHitterLogit() { return heavyHitterLogit; }
    public int spanLength() { return spanLength; }
    public int spansPerGroup() { return spansPerGroup; }
    public double topicLogit() { return topicLogit; }
    public double bridgeFraction() { return bridgeFraction; }
    public int activeGroups() { return activeGroups; }
    public double popularitySkew() { return popularitySkew; }
    public double groupRetention() { return groupRetention; }
    public double driftPerStep() { return driftPerStep; }
    public double gqaCorrelation() { return gqaCorrelation; }
    public double keyNoise() { return keyNoise; }

    /** Number of co-activation groups per layer: {@code ceil(tokens / (spanLength × spansPerGroup))}. */
    public int groups() {
        long perGroup = (long) spanLength * spansPerGroup;
        return (int) Math.max(1, (tokens + perGroup - 1) / perGroup);
    }

    /** A builder holding this spec's values, to change a few knobs. */
    public Builder toBuilder() {
        Builder b = new Builder(shape, tokens);
        b.seed = seed;
        b.sinkTokens = sinkTokens;
        b.sinkLogit = sinkLogit;
        b.localWindow = localWindow;
        b.localLogit = localLogit;
        b.positionalPairs = positionalPairs;
        b.heavyHitterFraction = heavyHitterFraction;
        b.heavyHitterLogit = heavyHitterLogit;
        b.spanLength = spanLength;
        b.spansPerGroup = spansPerGroup;
        b.topicLogit = topicLogit;
        b.bridgeFraction = bridgeFraction;
        b.activeGroups = activeGroups;
        b.popularitySkew = popularitySkew;
        b.groupRetention = groupRetention;
        b.driftPerStep = driftPerStep;
        b.gqaCorrelation = gqaCorrelation;
        b.keyNoise = keyNoise;
        return b;
    }

    @Override
    public String toString() {
        return "WorkloadSpec{" + shape.fingerprint() + ", tokens=" + tokens + ", seed=" + seed
                + ", sinks=" + sinkTokens + "@" + sinkLogit + ", window=" + localWindow + "@" + localLogit
                + ", heavyHitters=" + heavyHitterFraction + "@" + heavyHitterLogit
                + ", groups=" + groups() + " (span " + spanLength + " × " + spansPerGroup + ", @" + topicLogit
                + ", bridges " + bridgeFraction + ", active " + activeGroups + ", skew " + popularitySkew
                + ", retention " + groupRetention + ", drift " + driftPerStep + "), gqa=" + gqaCorrelation
                + ", keyNoise=" + keyNoise + "}";
    }

    /** Builder of {@link WorkloadSpec}; every setter returns {@code this}. */
    public static final class Builder {
        private final KvShape shape;
        private final int tokens;
        private long seed = 0x5EEDL;
        private int sinkTokens = 4;
        private double sinkLogit = 14;
        private int localWindow = 256;
        private double localLogit = 4;
        private int positionalPairs = 0;
        private double heavyHitterFraction = 0.002;
        private double heavyHitterLogit = 5;
        private int spanLength = 8;
        private int spansPerGroup = 8;
        private double topicLogit = 8;
        private double bridgeFraction = 0.05;
        private int activeGroups = 6;
        private double popularitySkew = 1.0;
        private double groupRetention = 0.9;
        private double driftPerStep = 0.02;
        private double gqaCorrelation = 0.8;
        private double keyNoise = 0.5;

        private Builder(KvShape shape, int tokens) {
            Checks.notNull("shape", shape);
            Checks.inRange("shape.headDim", shape.headDim(), 8, 16384);
            Checks.inRange("tokens", tokens, 1, 1 << 30);
            this.shape = shape;
            this.tokens = tokens;
        }

        /** Seed of every random choice. */
        public Builder seed(long seed) { this.seed = seed; return this; }
        /** Number of attention-sink tokens at the start of the context, 0..tokens. */
        public Builder sinkTokens(int v) { this.sinkTokens = Checks.inRange("sinkTokens", v, 0, tokens); return this; }
        /** Logit boost of a sink token, 0..50. */
        public Builder sinkLogit(double v) { this.sinkLogit = Checks.inRange("sinkLogit", v, 0, 50); return this; }
        /** Recency scale in tokens, 1..2^30: the boost halves at roughly this distance. */
        public Builder localWindow(int v) { this.localWindow = Checks.inRange("localWindow", v, 1, 1 << 30); return this; }
        /** Logit boost of the token at distance 0, 0..50. */
        public Builder localLogit(double v) { this.localLogit = Checks.inRange("localLogit", v, 0, 50); return this; }
        /** Rotating dimension pairs carrying position, 1..8 and at most (headDim − 2) / 4. */
        public Builder positionalPairs(int v) {
            this.positionalPairs = Checks.inRange("positionalPairs", v, 1, Math.min(8, (shape.headDim() - 2) / 4));
            return this;
        }
        /** Fraction of tokens that are heavy hitters, 0..1. */
        public Builder heavyHitterFraction(double v) { this.heavyHitterFraction = Checks.inRange("heavyHitterFraction", v, 0, 1); return this; }
        /** Logit boost of a heavy hitter, 0..50. */
        public Builder heavyHitterLogit(double v) { this.heavyHitterLogit = Checks.inRange("heavyHitterLogit", v, 0, 50); return this; }
        /** Consecutive tokens that share a group, 1..65536. */
        public Builder spanLength(int v) { this.spanLength = Checks.inRange("spanLength", v, 1, 65536); return this; }
        /** Spans per group on average, 1..65536. */
        public Builder spansPerGroup(int v) { this.spansPerGroup = Checks.inRange("spansPerGroup", v, 1, 65536); return this; }
        /** Logit boost of a member of a group the query attends to, 0..50. */
        public Builder topicLogit(double v) { this.topicLogit = Checks.inRange("topicLogit", v, 0, 50); return this; }
        /** Fraction of tokens that also belong to a second group, 0..1. */
        public Builder bridgeFraction(double v) { this.bridgeFraction = Checks.inRange("bridgeFraction", v, 0, 1); return this; }
        /** Groups each query attends to, 0..4096 (capped at the number of groups). */
        public Builder activeGroups(int v) { this.activeGroups = Checks.inRange("activeGroups", v, 0, 4096); return this; }
        /** Zipf exponent of group popularity, 0..4 (0: uniform). */
        public Builder popularitySkew(double v) { this.popularitySkew = Checks.inRange("popularitySkew", v, 0, 4); return this; }
        /** Probability an attended group stays attended at the next step, 0..1. */
        public Builder groupRetention(double v) { this.groupRetention = Checks.inRange("groupRetention", v, 0, 1); return this; }
        /** Popularity ranks the ranking rotates by per step, 0..1000. */
        public Builder driftPerStep(double v) { this.driftPerStep = Checks.inRange("driftPerStep", v, 0, 1000); return this; }
        /** Cosine similarity of query heads sharing a KV head, 0..1. */
        public Builder gqaCorrelation(double v) { this.gqaCorrelation = Checks.inRange("gqaCorrelation", v, 0, 1); return this; }
        /** Key noise relative to a group direction, 0..10. */
        public Builder keyNoise(double v) { this.keyNoise = Checks.inRange("keyNoise", v, 0, 10); return this; }

        public WorkloadSpec build() {
            return new WorkloadSpec(this);
        }
    }
}
