package io.kvoffload.bench.kvswap;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.attention.ExactAttention;
import io.kvoffload.attention.QualityMetrics;
import io.kvoffload.bench.cli.HeadOptions;
import io.kvoffload.internal.kvswap.CompressedKCache;
import io.kvoffload.internal.kvswap.FetchCostModel;
import io.kvoffload.internal.kvswap.GroupPredictor;
import io.kvoffload.internal.kvswap.LowRankAdapter;
import io.kvoffload.internal.kvswap.MemoryFootprint;
import io.kvoffload.internal.kvswap.ReuseBuffer;
import io.kvoffload.internal.kvswap.ReusePlan;
import io.kvoffload.internal.kvswap.RollingBuffer;
import io.kvoffload.internal.util.TopK;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.io.PrintWriter;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Measures KVSwap's algorithms on the synthetic workload and prints markdown tables
 * (docs/kvswap.md holds a measured run):
 * <ol>
 * <li>quality (attention-mass recall, output error) and modelled I/O vs the group size G (Fig. 12);</li>
 * <li>quality vs the compression ratio σ;</li>
 * <li>reuse rate and modelled step I/O with and without the reuse buffer (Table 5);</li>
 * <li>compressed K-cache memory vs a full K cache;</li>
 * <li>the time of one prediction step.</li>
 * </ol>
 * Selections come from the synthetic layer; the I/O columns price them for Llama-3-8B-sized
 * entries (8 KV heads × 128 × BF16 = 4 KiB per token) with {@link FetchCostModel}.
 */
@Command(name = "kvswap-bench", mixinStandardHelpOptions = true,
        description = "KVSwap on the synthetic workload: quality and modelled I/O vs group size, quality vs "
                + "compression ratio, reuse-buffer hit rates and step I/O with and without reuse, compressed K memory, "
                + "prediction time. Prints markdown tables.")
public final class KvSwapBench implements Callable<Integer> {

    @Option(names = "--tokens", defaultValue = "32768", description = "Context length (default: ${DEFAULT-VALUE}).")
    int tokens;

    @Mixin
    HeadOptions heads = new HeadOptions(8, 2, 128);

    @Option(names = "--rank", defaultValue = "0",
            description = "Adapter rank r for the G and reuse tables; 0 = head dim, the paper's default (default: ${DEFAULT-VALUE}).")
    int rank;

    @Mixin
    GroupSweepOptions sweep = new GroupSweepOptions(32, 200);

    @Option(names = "--reuse-layers", defaultValue = "4", description = "Layers the reuse table covers (default: ${DEFAULT-VALUE}).")
    int reuseLayers;

    @Option(names = "--batch", defaultValue = "8", description = "Batch of the modelled I/O (default: ${DEFAULT-VALUE}).")
    int batch;

    @Option(names = "--timing-calls", defaultValue = "200", description = "Prediction calls timed (default: ${DEFAULT-VALUE}).")
    int timingCalls;

    @Option(names = "--seed", defaultValue = "24301", description = "Workload seed (default: ${DEFAULT-VALUE}).")
    long seed;

    /** The model the I/O is priced for. */
    private static final KvShape LLAMA = KvShape.llama3_8b();
    private static final FetchCostModel NVME = FetchCostModel.measuredNvme();

    private PrintWriter out;

    public static void main(String[] args) {
        System.exit(new CommandLine(new KvSwapBench()).execute(args));
    }

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        out = spec.commandLine().getOut();
        long t0 = System.nanoTime();
        int r = rank > 0 ? rank : heads.headDim;
        KvShape shape = heads.shape(Math.max(1, reuseLayers));
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(shape, tokens).seed(seed).build());
        DenseLayerKv kv = DenseLayerKv.materialize(w.layer(0), true);
        int d = heads.kvHeads * heads.headDim;
        long fit0 = System.nanoTime();
        LowRankAdapter full = LowRankAdapter.fit(kv, d, LowRankAdapter.DEFAULT_MAX_ROWS, seed);
        double fitSeconds = (System.nanoTime() - fit0) / 1e9;
        out.printf(Locale.ROOT, "Setup: %d tokens, %d query heads on %d KV heads × %d (GQA %d), synthetic workload "
                        + "seed %d; adapter SVD of %d sampled rows × %d columns in %.2f s; MG = %d; I/O priced for "
                        + "Llama-3-8B entries (%d B/token) at batch %d on the measured NVMe model (%.0f IOPS, %.2f GiB/s).%n%n",
                tokens, heads.queryHeads, heads.kvHeads, heads.headDim, heads.queryHeads / heads.kvHeads, seed, full.calibrationRows(), d, fitSeconds,
                sweep.budget, LLAMA.entryBytes(), batch, NVME.iops(), NVME.bandwidthBytesPerSecond() / (1L << 30));

        ExactAttention exact = ExactAttention.of(shape);
        float[][] weights = new float[sweep.qualityQueries][];
        float[][] outputs = new float[sweep.qualityQueries][];
        float[][] queries = new float[sweep.qualityQueries][];
        for (int s = 0; s < sweep.qualityQueries; s++) {
            queries[s] = w.query(0, s);
            ExactAttention.Result res = exact.compute(kv, queries[s]);
            weights[s] = res.weights();
            outputs[s] = res.output();
        }
        LowRankAdapter adapter = full.truncate(Math.min(r, d));
        CompressedKCache cache = new CompressedKCache(adapter, DType.F16, tokens);
        cache.appendFrom(kv, 0, tokens);

        groupSizeTable(w, kv, exact, cache, weights, outputs, queries);
        compressionTable(kv, exact, full, weights, queries);
        reuseTable(w, full.truncate(Math.min(r, d)));
        memoryTable(full, cache);
        timingTable(kv, adapter);
        out.printf(Locale.ROOT, "%nTotal run time %.1f s.%n", (System.nanoTime() - t0) / 1e9);
        out.flush();
        return 0;
    }

    // ---------------------------------------------------------------- quality vs G (Fig. 12)

    private void groupSizeTable(SyntheticWorkload w, DenseLayerKv kv, ExactAttention exact, CompressedKCache cache,
            float[][] weights, float[][] outputs, float[][] queries) {
        out.println("### Quality and modelled I/O vs group size (Fig. 12)");
        out.println();
        out.printf(Locale.ROOT, "r = %d (σ = %.0f), MG = %d, %d queries; reuse over %d consecutive steps with C = M "
                + "(FIFO). I/O per layer and step for batch %d; tokens/s is the I/O bound, %d layers / max(I/O).%n%n",
                cache.rank(), cache.adapter().compressionRatio(), sweep.budget, queries.length, sweep.steps, batch, LLAMA.layers());
        out.println("| G | M | recall ↑ | top-" + sweep.budget + " recall ↑ | output rel. err ↓ | read size | I/O util. "
                + "| reuse | I/O ms no reuse | I/O ms reuse | tok/s no reuse | tok/s reuse |");
        out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        double oracleRecall = 0, oracleErr = 0, oracleTop = 0;
        for (int s = 0; s < queries.length; s++) {
            int[] top = TopK.indices(weights[s], Math.min(sweep.budget, kv.tokens()));
            oracleRecall += QualityMetrics.attentionMassRecall(weights[s], top);
            oracleTop += QualityMetrics.topKRecall(weights[s], top, Math.min(sweep.budget, kv.tokens()));
            oracleErr += QualityMetrics.relativeError(outputs[s], exact.sparseOutput(kv, queries[s], top));
        }
        for (int g : sweep.groupSizes) {
            GroupPredictor p = new GroupPredictor(cache, heads.queryHeads, g, kv.tokens());
            RollingBuffer rolling = new RollingBuffer(g, 1);
            rolling.reset(kv.tokens());
            int m = GroupPredictor.groupsFor(sweep.budget, g);
            int[] positions = new int[p.maxSelected(sweep.budget) + rolling.capacity()];
            double recall = 0, topRecall = 0, err = 0;
            for (int s = 0; s < queries.length; s++) {
                int n = rolling.addTo(positions, p.select(queries[s], sweep.budget, positions));
                int[] sel = Arrays.copyOf(positions, n);
                recall += QualityMetrics.attentionMassRecall(weights[s], sel);
                topRecall += QualityMetrics.topKRecall(weights[s], sel, Math.min(sweep.budget, kv.tokens()));
                err += QualityMetrics.relativeError(outputs[s], exact.sparseOutput(kv, queries[s], sel));
            }
            double reuse = replay(w, 0, cache, g, m, m, ReuseBuffer.Policy.FIFO);
            long readBytes = (long) g * LLAMA.entryBytes();
            double ioNo = NVME.seconds((double) batch * m, readBytes);
            double ioReuse = NVME.seconds(batch * m * (1 - reuse), readBytes);
            double util = NVME.effectiveBandwidth(readBytes) / NVME.bandwidthBytesPerSecond();
            int q = queries.length;
            out.printf(Locale.ROOT, "| %d | %d | %.3f | %.3f | %.3f | %s | %.0f%% | %.1f%% | %.2f | %.2f | %.1f | %.1f |%n",
                    g, m, recall / q, topRecall / q, err / q, kib(readBytes), 100 * util, 100 * reuse, ioNo * 1e3,
                    ioReuse * 1e3, batch / (LLAMA.layers() * ioNo), batch / (LLAMA.layers() * ioReuse));
        }
        int q = queries.length;
        out.printf(Locale.ROOT, "| exact top-%d tokens (oracle, full keys) | – | %.3f | %.3f | %.3f | – | – | – | – | – | – | – |%n%n",
                sweep.budget, oracleRecall / q, oracleTop / q, oracleErr / q);
    }

    /** Replays {@link #steps} consecutive decoding steps of a layer through a reuse buffer; returns its reuse rate. */
    private double replay(SyntheticWorkload w, int layer, CompressedKCache cache, int g, int m, int slots,
            ReuseBuffer.Policy policy) {
        int[][] picks = selections(w, layer, cache, g, m);
        return reuseRate(picks, slots, policy);
    }

    private int[][] selections(SyntheticWorkload w, int layer, CompressedKCache cache, int g, int m) {
        GroupPredictor p = new GroupPredictor(cache, heads.queryHeads, g, cache.tokens());
        int[][] picks = new int[sweep.steps][];
        float[] q = new float[heads.queryHeads * heads.headDim];
        for (int s = 0; s < sweep.steps; s++) {
            w.query(layer, s, q, 0);
            int[] groups = new int[m];
            int n = p.selectGroups(q, m, groups);
            picks[s] = Arrays.copyOf(groups, n);
        }
        return picks;
    }

    private static double reuseRate(int[][] picks, int slots, ReuseBuffer.Policy policy) {
        ReuseBuffer rb = new ReuseBuffer(1, slots, policy);
        ReusePlan plan = rb.newPlan();
        for (int s = 0; s < picks.length; s++) {
            rb.request(0, picks[s], picks[s].length, plan);
            if (s == 0) {
                rb.resetCounters(); // cold start
            }
        }
        return rb.reuseRate();
    }

    // ---------------------------------------------------------------- quality vs σ

    private void compressionTable(DenseLayerKv kv, ExactAttention exact, LowRankAdapter full, float[][] weights,
            float[][] queries) {
        int g = sweep.reuseGroup;
        out.println("### Quality vs compression ratio σ (G = " + g + ", MG = " + sweep.budget + ")");
        out.println();
        out.println("| r | σ | energy kept | recall ↑ | compressed K of this layer | full K (BF16) |");
        out.println("|---:|---:|---:|---:|---:|---:|");
        int d = full.inputDim();
        for (int r = d; r >= Math.max(1, d / 32); r /= 2) {
            LowRankAdapter a = full.truncate(r);
            CompressedKCache c = new CompressedKCache(a, DType.F16, kv.tokens());
            c.appendFrom(kv, 0, kv.tokens());
            GroupPredictor p = new GroupPredictor(c, heads.queryHeads, g, kv.tokens());
            int[] positions = new int[p.maxSelected(sweep.budget)];
            double recall = 0;
            for (int s = 0; s < queries.length; s++) {
                int n = p.select(queries[s], sweep.budget, positions);
                recall += QualityMetrics.attentionMassRecall(weights[s], Arrays.copyOf(positions, n));
            }
            out.printf(Locale.ROOT, "| %d | %.0f | %.3f | %.3f | %s | %s |%n", r, a.compressionRatio(), a.retainedEnergy(),
                    recall / queries.length, mib(c.bytes()), mib(c.fullKBytes(DType.BF16)));
        }
        out.println();
    }

    // ---------------------------------------------------------------- reuse (Table 5)

    private void reuseTable(SyntheticWorkload w, LowRankAdapter adapter) {
        int g = sweep.reuseGroup;
        int m = GroupPredictor.groupsFor(sweep.budget, g);
        out.println("### Reuse buffer: hit rate and step I/O (Table 5)");
        out.println();
        out.printf(Locale.ROOT, "G = %d, M = %d, r = %d; %d consecutive decoding steps on each of %d layers (the first "
                + "step, a cold start, not counted); min / mean / max over layers. Bytes and I/O per layer and step for "
                + "batch %d with Llama-3-8B entries.%n%n", g, m, adapter.rank(), sweep.steps, reuseLayers, batch);
        int[][][] picks = new int[reuseLayers][][];
        double overlap = 0;
        for (int l = 0; l < reuseLayers; l++) {
            DenseLayerKv kv = DenseLayerKv.materialize(w.layer(l), false);
            // Every layer has its own adapter (the paper fits one per layer).
            LowRankAdapter a = l == 0 ? adapter : LowRankAdapter.fit(kv, adapter.rank(), LowRankAdapter.DEFAULT_MAX_ROWS, seed + l);
            CompressedKCache cache = new CompressedKCache(a, DType.F16, kv.tokens());
            cache.appendFrom(kv, 0, kv.tokens());
            picks[l] = selections(w, l, cache, g, m);
            overlap += reuseRate(picks[l], m, ReuseBuffer.Policy.REPLACE_UNREQUESTED);
        }
        out.printf(Locale.ROOT, "Adjacent-step overlap of the selected groups (Fig. 8's OLR, mean over layers): %.1f%%.%n%n",
                100 * overlap / reuseLayers);
        long readBytes = (long) g * LLAMA.entryBytes();
        double ioNo = NVME.seconds((double) batch * m, readBytes);
        out.println("| policy | C (slots) | reuse min | reuse mean | reuse max | MiB read no reuse | MiB read reuse "
                + "| I/O ms no reuse | I/O ms reuse | I/O speed-up |");
        out.println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (ReuseBuffer.Policy policy : ReuseBuffer.Policy.values()) {
            for (int slots : new int[] {m, m * 3 / 2, 2 * m, 4 * m}) {
                double min = 1, max = 0, sum = 0;
                for (int l = 0; l < reuseLayers; l++) {
                    double rr = reuseRate(picks[l], slots, policy);
                    min = Math.min(min, rr);
                    max = Math.max(max, rr);
                    sum += rr;
                }
                double mean = sum / reuseLayers;
                double ioReuse = NVME.seconds(batch * m * (1 - mean), readBytes);
                out.printf(Locale.ROOT, "| %s | %d | %.1f%% | %.1f%% | %.1f%% | %.2f | %.2f | %.2f | %.2f | %.2f× |%n",
                        policy, slots, 100 * min, 100 * mean, 100 * max, (double) batch * m * readBytes / (1 << 20),
                        batch * m * (1 - mean) * readBytes / (1 << 20), ioNo * 1e3, ioReuse * 1e3, ioNo / ioReuse);
            }
        }
        out.println();
    }

    // ---------------------------------------------------------------- memory

    private void memoryTable(LowRankAdapter full, CompressedKCache cache) {
        out.println("### Compressed K cache vs full K cache");
        out.println();
        out.printf(Locale.ROOT, "Measured on this layer (%d tokens, r = %d, F16 elements): compressed %s vs full K %s in "
                        + "BF16, %.1f× smaller (%s reserved in %d-token chunks; adapter %s).%n%n",
                cache.tokens(), cache.rank(), mib(cache.bytes()), mib(cache.fullKBytes(DType.BF16)),
                cache.compressionRatio(DType.BF16), mib(cache.reservedBytes()), CompressedKCache.CHUNK_TOKENS,
                kib(cache.adapter().bytes()));
        int context = 32768;
        out.println("Modelled for Llama-3-8B (32 layers, 8 KV heads × 128, BF16 cache, 16-bit compressed K) at a 32K "
                + "context, G = 4, M = C = 100, one rolling group:");
        out.println();
        out.println("| batch | σ | r | full K cache | compressed K | + reuse + rolling + adapters | full KV cache | KVSwap / full KV |");
        out.println("|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (int b : new int[] {1, 8}) {
            for (int sigma : new int[] {8, 16, 32}) {
                int r = LLAMA.elementsPerToken() / sigma;
                MemoryFootprint f = MemoryFootprint.of(LLAMA, context, b, r, DType.F16, 4, 100, 1);
                long fullK = MemoryFootprint.fullKBytes(LLAMA, context, b);
                out.printf(Locale.ROOT, "| %d | %d | %d | %s | %s | %s | %s | 1/%.0f |%n", b, sigma, r, mib(fullK),
                        mib(f.compressedKBytes()), mib(f.totalBytes()), mib(2 * fullK), 2.0 * fullK / f.totalBytes());
            }
        }
        out.println();
    }

    // ---------------------------------------------------------------- timing

    private void timingTable(DenseLayerKv kv, LowRankAdapter adapter) {
        out.println("### One prediction step (single thread, " + kv.tokens() + " tokens)");
        out.println();
        out.println("| storage | r | G | ms per step | tokens scored per µs |");
        out.println("|---|---:|---:|---:|---:|");
        float[] q = new float[heads.queryHeads * heads.headDim];
        for (DType storage : new DType[] {DType.F32, DType.F16, DType.BF16}) {
            CompressedKCache c = new CompressedKCache(adapter, storage, kv.tokens());
            c.appendFrom(kv, 0, kv.tokens());
            GroupPredictor p = new GroupPredictor(c, heads.queryHeads, sweep.reuseGroup, kv.tokens());
            int[] positions = new int[p.maxSelected(sweep.budget)];
            for (int i = 0; i < timingCalls; i++) { // warm-up
                q[i % q.length] += 1e-3f;
                p.select(q, sweep.budget, positions);
            }
            long t = System.nanoTime();
            int sink = 0;
            for (int i = 0; i < timingCalls; i++) {
                q[i % q.length] += 1e-3f;
                sink += p.select(q, sweep.budget, positions);
            }
            double ms = (System.nanoTime() - t) / 1e6 / timingCalls;
            out.printf(Locale.ROOT, "| %s | %d | %d | %.3f | %.0f |%s%n", storage, c.rank(), sweep.reuseGroup, ms,
                    kv.tokens() / (ms * 1e3), sink < 0 ? " " : "");
        }
    }

    /** {@code bytes} in MiB, one decimal (shared with {@link KvSwapIoBench}). */
    static String mib(long bytes) {
        return String.format(Locale.ROOT, "%.1f MiB", bytes / 1048576.0);
    }

    private static String kib(long bytes) {
        return String.format(Locale.ROOT, "%d KiB", bytes / 1024);
    }
}
