package io.kvoffload.internal.kvswap;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.attention.ExactAttention;
import io.kvoffload.attention.QualityMetrics;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * KVSwap's offline parameter tuning (§3.5, Appendix A.4): for a model, a maximum context, a batch
 * size and a DRAM budget, chooses the group size G, the adapter rank r (compression ratio σ), the
 * selected groups M and the reuse-buffer capacity C, and records them as a {@link KvSwapConfig}.
 *
 * <h2>What is measured and what is modelled</h2>
 * <ul>
 * <li><b>Quality</b> is measured on a {@link CalibrationSet}: the mean attention-mass recall
 *     ({@link QualityMetrics#attentionMassRecall}) of the predicted groups plus the rolling buffer,
 *     against exact attention, over the calibration queries.</li>
 * <li><b>Reuse</b> is measured too: the calibration queries are consecutive decoding steps, and a
 *     {@link ReuseBuffer} of C slots replays the predictor's selections (the paper precomputes a
 *     lookup table from C to the reuse rate, Appendix A.1; here it is computed for each candidate).
 *     The first step is a cold start and is not counted.</li>
 * <li><b>Memory</b> is {@link MemoryFootprint#of} for the maximum context and batch.</li>
 * <li><b>I/O time</b> per layer and step is modelled by {@link FetchCostModel}: the batch misses
 *     {@code b × M × (1 − reuse)} groups of {@code G × entryBytes} bytes.</li>
 * <li><b>Throughput</b> is modelled as {@code b / (layers × max(compute, io))}: the prediction and
 *     reads for layer {@code i} overlap layer {@code i − 1}'s compute (§3.3), whose time per layer
 *     for the batch is given ({@link Builder#computeSecondsPerLayer}).</li>
 * </ul>
 *
 * <h2>The greedy search (Appendix A.4)</h2>
 * MG is fixed to {@code budgetTokens} (the paper's Const, 400). Starting with C = MG tokens (reuse
 * budget = fetch budget), for each G in ascending order the smallest σ whose memory fits the budget
 * is taken (quality prefers small σ and small G), and the first candidate whose I/O is hidden,
 * {@code (1 − α) × io ≤ compute}, and whose recall reaches {@code minRecall} is chosen. If none is
 * found, part of the budget moves to the reuse buffer (C grows by {@code reuseStepTokens}, σ grows
 * to stay within budget) and the search restarts from the smallest G; it stops when nothing fits at
 * {@code σ_max} or after {@code maxReuseLevels} levels. Without a hiding candidate, the evaluated
 * candidate with the highest modelled throughput among those reaching {@code minRecall} (else the
 * one with the highest recall) is chosen. Every evaluated candidate is recorded in
 * {@link KvSwapConfig#search()}.
 */
public final class ParameterTuner {
    /** The group sizes of the paper's study (Fig. 12). */
    public static final int[] DEFAULT_GROUP_SIZES = {1, 2, 4, 8, 16};

    /** Receives progress: {@code done} of about {@code total} units of work, and what runs now. */
    @FunctionalInterface
    public interface Progress {
        void update(long done, long total, String message);

        /** Ignores progress. */
        Progress NONE = (done, total, message) -> { };
    }

    private final KvShape shape;
    private final int maxContext;
    private final int batchSize;
    private final long dramBudgetBytes;
    private final FetchCostModel device;
    private final double computeSecondsPerLayer;
    private final int budgetTokens;
    private final int[] groupSizes;
    private final double maxCompressionRatio;
    private final DType compressedKDtype;
    private final ReuseBuffer.Policy reusePolicy;
    private final int reuseStepTokens;
    private final int maxReuseLevels;
    private final int rollingGroups;
    private final double relaxation;
    private final double minRecall;
    private final int adapterMaxRows;
    private final long seed;

    private ParameterTuner(Builder b) {
        this.shape = b.shape;
        this.maxContext = b.maxContext;
        this.batchSize = b.batchSize;
        this.dramBudgetBytes = b.dramBudgetBytes;
        this.device = b.device;
        this.computeSecondsPerLayer = b.computeSecondsPerLayer;
        this.budgetTokens = b.budgetTokens;
        this.groupSizes = b.groupSizes.clone();
        Arrays.sort(this.groupSizes);
        this.maxCompressionRatio = b.maxCompressionRatio;
        this.compressedKDtype = b.compressedKDtype;
        this.reusePolicy = b.reusePolicy;
        this.reuseStepTokens = b.reuseStepTokens > 0 ? b.reuseStepTokens : Math.max(1, b.budgetTokens / 2);
        this.maxReuseLevels = b.maxReuseLevels;
        this.rollingGroups = b.rollingGroups;
        this.relaxation = b.relaxation;
        this.minRecall = b.minRecall;
        this.adapterMaxRows = b.adapterMaxRows;
        this.seed = b.seed;
    }

    /**
     * A tuner for a model and its constraints (the paper's {@code max_context_len},
     * {@code max_batch_size}, {@code max_kv_mem}).
     *
     * @param maxContext 1..2^30 tokens
     * @param batchSize 1..65536 sequences
     * @param dramBudgetBytes > 0: compressed K caches + reuse buffers + rolling buffers + adapters
     */
    public static Builder builder(KvShape shape, int maxContext, int batchSize, long dramBudgetBytes) {
        return new Builder(shape, maxContext, batchSize, dramBudgetBytes);
    }

    /** The ranks tried: {@code kvHeads·headDim / σ} for σ = 1, 2, 4, … up to the maximum, descending. */
    public int[] rankCandidates() {
        int d = shape.elementsPerToken();
        List<Integer> ranks = new ArrayList<>();
        for (double sigma = 1; sigma <= maxCompressionRatio + 1e-9; sigma *= 2) {
            int r = (int) Math.max(1, Math.round(d / sigma));
            if (ranks.isEmpty() || ranks.get(ranks.size() - 1) != r) {
                ranks.add(r);
            }
        }
        return ranks.stream().mapToInt(Integer::intValue).toArray();
    }

    /**
     * Runs the search on {@code calibration}, whose layer must have this shape's KV heads, head
     * dimension and query heads.
     *
     * @throws IllegalArgumentException if the calibration does not match, or if no configuration
     *     fits the DRAM budget (the message gives the least budget that would)
     */
    public KvSwapConfig tune(CalibrationSet calibration, Progress progress) {
        Checks.notNull("calibration", calibration);
        Checks.notNull("progress", progress);
        if (calibration.keys().kvHeads() != shape.kvHeads() || calibration.keys().headDim() != shape.headDim()
                || calibration.queryHeads() != shape.queryHeads()) {
            throw new IllegalArgumentException("calibration has queryHeads = " + calibration.queryHeads() + ", kvHeads = "
                    + calibration.keys().kvHeads() + ", headDim = " + calibration.keys().headDim() + "; the shape has "
                    + shape.queryHeads() + ", " + shape.kvHeads() + ", " + shape.headDim());
        }
        int[] ranks = rankCandidates();
        int minRank = ranks[ranks.length - 1];
        long least = MemoryFootprint.of(shape, maxContext, batchSize, minRank, compressedKDtype, groupSizes[0],
                GroupPredictor.groupsFor(budgetTokens, groupSizes[0]), rollingGroups).totalBytes();
        if (least > dramBudgetBytes) {
            throw new IllegalArgumentException("dramBudgetBytes = " + dramBudgetBytes + " is too small; allowed: at least "
                    + least + " (σ = " + maxCompressionRatio + ", G = " + groupSizes[0] + ", C = M)");
        }
        Evaluation eval = new Evaluation(calibration, ranks[0], progress,
                calibration.steps() + (long) groupSizes.length * (maxReuseLevels + 1));
        List<KvSwapConfig.Candidate> tried = new ArrayList<>();
        KvSwapConfig.Candidate chosen = null;
        int reuseTokens = budgetTokens;
        search:
        for (int level = 0; level <= maxReuseLevels; level++) {
            boolean anyFits = false;
            for (int g : groupSizes) {
                int m = GroupPredictor.groupsFor(budgetTokens, g);
                int slots = Math.max(m, GroupPredictor.groupsFor(reuseTokens, g));
                int rank = largestFittingRank(ranks, g, slots);
                if (rank < 0) {
                    continue;
                }
                anyFits = true;
                KvSwapConfig.Candidate c = eval.candidate(g, rank, m, slots);
                tried.add(c);
                if (c.predicted().ioHidden() && c.predicted().attentionMassRecall() >= minRecall) {
                    chosen = c;
                    break search;
                }
            }
            if (!anyFits || (long) reuseTokens + reuseStepTokens > maxContext) {
                break;
            }
            reuseTokens += reuseStepTokens;
        }
        if (chosen == null) {
            chosen = bestOf(tried);
        }
        progress.update(eval.total, eval.total, "done");
        MemoryFootprint memory = MemoryFootprint.of(shape, maxContext, batchSize, chosen.rank(), compressedKDtype,
                chosen.groupSize(), chosen.reuseSlots(), rollingGroups);
        return new KvSwapConfig(shape, maxContext, batchSize, dramBudgetBytes, chosen.groupSize(), chosen.rank(),
                compressedKDtype, budgetTokens, chosen.groups(), chosen.reuseSlots(), reusePolicy, rollingGroups, memory,
                chosen.predicted(), device, tried);
    }

    private int largestFittingRank(int[] ranks, int groupSize, int slots) {
        for (int r : ranks) { // descending
            long bytes = MemoryFootprint.of(shape, maxContext, batchSize, r, compressedKDtype, groupSize, slots,
                    rollingGroups).totalBytes();
            if (bytes <= dramBudgetBytes) {
                return r;
            }
        }
        return -1;
    }

    private KvSwapConfig.Candidate bestOf(List<KvSwapConfig.Candidate> tried) {
        KvSwapConfig.Candidate best = null;
        for (KvSwapConfig.Candidate c : tried) {
            if (best == null || better(c, best)) {
                best = c;
            }
        }
        return best;
    }

    private boolean better(KvSwapConfig.Candidate a, KvSwapConfig.Candidate b) {
        boolean aOk = a.predicted().attentionMassRecall() >= minRecall;
        boolean bOk = b.predicted().attentionMassRecall() >= minRecall;
        if (aOk != bOk) {
            return aOk;
        }
        if (!aOk) {
            return a.predicted().attentionMassRecall() > b.predicted().attentionMassRecall();
        }
        if (a.predicted().tokensPerSecond() != b.predicted().tokensPerSecond()) {
            return a.predicted().tokensPerSecond() > b.predicted().tokensPerSecond();
        }
        return a.predicted().attentionMassRecall() > b.predicted().attentionMassRecall();
    }

    /** The figures of one (G, r, M, C) on the calibration set: the expensive parts cached. */
    private final class Evaluation {
        private final CalibrationSet calibration;
        private final Progress progress;
        private final long total;
        private long done;
        private final float[][] weights;
        private final LowRankAdapter adapter;
        private final Map<Integer, CompressedKCache> caches = new HashMap<>();
        private final Map<Long, int[][]> selections = new HashMap<>();
        private final Map<Long, Double> recalls = new HashMap<>();

        Evaluation(CalibrationSet calibration, int maxRank, Progress progress, long total) {
            this.calibration = calibration;
            this.progress = progress;
            this.total = total;
            ExactAttention exact = new ExactAttention(shape.queryHeads(), shape.kvHeads(), shape.headDim());
            this.weights = new float[calibration.steps()][];
            for (int s = 0; s < calibration.steps(); s++) {
                progress.update(done++, total, "exact attention, query " + (s + 1) + "/" + calibration.steps());
                weights[s] = exact.weights(calibration.keys(), calibration.query(s));
            }
            progress.update(done, total, "low-rank adapter (SVD)");
            this.adapter = LowRankAdapter.fit(calibration.adapterKeys(), maxRank, adapterMaxRows, seed);
        }

        KvSwapConfig.Candidate candidate(int g, int rank, int m, int slots) {
            progress.update(Math.min(done++, total - 1), total, "G=" + g + " r=" + rank + " C=" + slots);
            long key = ((long) g << 32) | rank;
            int[][] picks = selections.computeIfAbsent(key, k -> select(g, rank, m));
            double recall = recalls.get(key);
            double reuse = reuseRate(picks, slots);
            double expectedReads = batchSize * m * (1 - reuse);
            double io = device.seconds(expectedReads, (long) g * shape.entryBytes());
            double layerTime = Math.max(computeSecondsPerLayer, io);
            double tps = batchSize / (shape.layers() * layerTime);
            boolean hidden = (1 - relaxation) * io <= computeSecondsPerLayer;
            long bytes = MemoryFootprint.of(shape, maxContext, batchSize, rank, compressedKDtype, g, slots, rollingGroups)
                    .totalBytes();
            KvSwapConfig.Prediction p = new KvSwapConfig.Prediction(Math.min(1, recall), reuse, io,
                    computeSecondsPerLayer, tps, hidden);
            return new KvSwapConfig.Candidate(g, rank, m, slots, bytes, p);
        }

        /** The predictor's groups for every calibration query; records the recall on the way. */
        private int[][] select(int g, int rank, int m) {
            CompressedKCache cache = caches.computeIfAbsent(rank, r -> {
                CompressedKCache c = new CompressedKCache(adapter.truncate(r), compressedKDtype, calibration.tokens());
                c.appendFrom(calibration.keys(), 0, calibration.tokens());
                return c;
            });
            int tokens = calibration.tokens();
            // The offloaded part is what the predictor sees; the tail that does not fill a group is
            // in the rolling buffer and always attended.
            RollingBuffer rolling = new RollingBuffer(g, rollingGroups);
            rolling.reset(tokens);
            GroupPredictor predictor = new GroupPredictor(cache, shape.queryHeads(), g, tokens);
            int[] positions = new int[m * g + rolling.capacity()];
            int[][] picks = new int[calibration.steps()][];
            double sum = 0;
            for (int s = 0; s < calibration.steps(); s++) {
                int n = predictor.select(calibration.query(s), m * g, positions);
                int[] groups = new int[predictor.lastGroupCount()];
                for (int i = 0; i < groups.length; i++) {
                    groups[i] = predictor.lastGroup(i);
                }
                picks[s] = groups;
                int all = rolling.addTo(positions, n);
                sum += QualityMetrics.attentionMassRecall(weights[s], Arrays.copyOf(positions, all));
            }
            recalls.put(((long) g << 32) | rank, sum / calibration.steps());
            return picks;
        }

        private double reuseRate(int[][] picks, int slots) {
            ReuseBuffer buffer = new ReuseBuffer(1, slots, reusePolicy);
            ReusePlan plan = buffer.newPlan();
            for (int s = 0; s < picks.length; s++) {
                buffer.request(0, picks[s], picks[s].length, plan);
                if (s == 0) {
                    buffer.resetCounters(); // the first step is a cold start
                }
            }
            double r = buffer.reuseRate();
            return Double.isNaN(r) ? 0 : r;
        }
    }

    /** Settings of a {@link ParameterTuner}; every setter checks its argument and returns {@code this}. */
    public static final class Builder {
        private final KvShape shape;
        private final int maxContext;
        private final int batchSize;
        private final long dramBudgetBytes;
        private FetchCostModel device = FetchCostModel.measuredNvme();
        private double computeSecondsPerLayer = 0.002;
        private int budgetTokens = 400;
        private int[] groupSizes = DEFAULT_GROUP_SIZES;
        private double maxCompressionRatio = 32;
        private DType compressedKDtype = DType.F16;
        private ReuseBuffer.Policy reusePolicy = ReuseBuffer.Policy.FIFO;
        private int reuseStepTokens = 0;
        private int maxReuseLevels = 8;
        private int rollingGroups = 1;
        private double relaxation = 0;
        private double minRecall = 0;
        private int adapterMaxRows = LowRankAdapter.DEFAULT_MAX_ROWS;
        private long seed = 0x5EEDL;

        private Builder(KvShape shape, int maxContext, int batchSize, long dramBudgetBytes) {
            this.shape = Checks.notNull("shape", shape);
            this.maxContext = Checks.inRange("maxContext", maxContext, 1, 1 << 30);
            this.batchSize = Checks.inRange("batchSize", batchSize, 1, 65536);
            this.dramBudgetBytes = Checks.positive("dramBudgetBytes", dramBudgetBytes);
        }

        /** The I/O model (default: {@link FetchCostModel#measuredNvme()}). */
        public Builder device(FetchCostModel v) { this.device = Checks.notNull("device", v); return this; }

        /**
         * Decode time of one transformer layer for the whole batch, in seconds, 1e-7..10 (default
         * 0.002): measure it on the target; it is what I/O must hide behind.
         */
        public Builder computeSecondsPerLayer(double v) {
            this.computeSecondsPerLayer = Checks.inRange("computeSecondsPerLayer", v, 1e-7, 10);
            return this;
        }

        /** MG, tokens selected per step (the paper's Const), 1..2^20 (default 400). */
        public Builder budgetTokens(int v) { this.budgetTokens = Checks.inRange("budgetTokens", v, 1, 1 << 20); return this; }

        /** Group sizes to try, each 1..4096 (default 1, 2, 4, 8, 16). */
        public Builder groupSizes(int... v) {
            Checks.notNull("groupSizes", v);
            Checks.inRange("groupSizes.length", v.length, 1, 64);
            for (int g : v) {
                Checks.inRange("groupSize", g, 1, 4096);
            }
            this.groupSizes = v.clone();
            return this;
        }

        /** σ_max, 1..65536 (default 32, the paper's). */
        public Builder maxCompressionRatio(double v) {
            this.maxCompressionRatio = Checks.inRange("maxCompressionRatio", v, 1, 65536);
            return this;
        }

        /** Element type of the compressed K cache (default F16: half the bytes of F32 and the fastest to score). */
        public Builder compressedKDtype(DType v) { this.compressedKDtype = Checks.notNull("compressedKDtype", v); return this; }

        /** Reuse-buffer policy (default FIFO). */
        public Builder reusePolicy(ReuseBuffer.Policy v) { this.reusePolicy = Checks.notNull("reusePolicy", v); return this; }

        /** δ: tokens added to the reuse buffer per level, 1..2^24 (default budgetTokens / 2). */
        public Builder reuseStepTokens(int v) { this.reuseStepTokens = Checks.inRange("reuseStepTokens", v, 1, 1 << 24); return this; }

        /** Reuse-capacity levels tried after C = MG, 0..64 (default 8). */
        public Builder maxReuseLevels(int v) { this.maxReuseLevels = Checks.inRange("maxReuseLevels", v, 0, 64); return this; }

        /** Rolling-buffer capacity in groups, 1..1024 (default 1, the artifact's). */
        public Builder rollingGroups(int v) { this.rollingGroups = Checks.inRange("rollingGroups", v, 1, 1024); return this; }

        /** α: the share of I/O allowed not to be hidden, 0..1 (default 0). */
        public Builder relaxation(double v) { this.relaxation = Checks.inRange("relaxation", v, 0, 1); return this; }

        /** Least acceptable attention-mass recall, 0..1 (default 0: no floor). */
        public Builder minRecall(double v) { this.minRecall = Checks.inRange("minRecall", v, 0, 1); return this; }

        /** Calibration rows sampled for the SVD, 1..2^30 (default {@link LowRankAdapter#DEFAULT_MAX_ROWS}). */
        public Builder adapterMaxRows(int v) { this.adapterMaxRows = Checks.inRange("adapterMaxRows", v, 1, 1 << 30); return this; }

        /** Seed of the SVD row sample. */
        public Builder seed(long v) { this.seed = v; return this; }

        public ParameterTuner build() {
            return new ParameterTuner(this);
        }
    }
}
