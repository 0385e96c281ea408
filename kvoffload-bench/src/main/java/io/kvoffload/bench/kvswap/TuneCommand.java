package io.kvoffload.bench.kvswap;

import io.kvoffload.KvConfig;
import io.kvoffload.KvShape;
import io.kvoffload.bench.ProgressBars;
import io.kvoffload.bench.cli.HeadOptions;
import io.kvoffload.internal.kvswap.CalibrationSet;
import io.kvoffload.internal.kvswap.FetchCostModel;
import io.kvoffload.internal.kvswap.KvSwapConfig;
import io.kvoffload.internal.kvswap.ParameterTuner;
import io.kvoffload.internal.kvswap.ReuseBuffer;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.TraceReader;
import io.kvoffload.workload.WorkloadSpec;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import me.tongfei.progressbar.ProgressBar;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * KVSwap's offline parameter tuning (§3.5, Fig. 4a) from the command line: searches G, σ, M and C
 * for a model, context, batch and DRAM budget on a calibration layer (a trace captured from a real
 * model, or the synthetic workload) and writes the JSON configuration the runtime loads.
 */
@Command(name = "kvswap-tune", mixinStandardHelpOptions = true,
        description = "KVSwap offline parameter tuning: chooses the group size G, compression ratio σ (adapter rank r), "
                + "selected groups M and reuse-buffer capacity C within a DRAM budget, measuring attention-mass recall "
                + "and reuse on a calibration layer and modelling the SSD fetch time. Writes a JSON configuration.")
public final class TuneCommand implements Callable<Integer> {

    @Mixin
    ModelShape modelShape = new ModelShape();

    @Option(names = "--max-context", defaultValue = "32768", description = "Longest context to serve (default: ${DEFAULT-VALUE}).")
    int maxContext;

    @Option(names = "--batch", defaultValue = "8", description = "Largest batch to serve (default: ${DEFAULT-VALUE}).")
    int batch;

    @Option(names = "--dram-budget", defaultValue = "2200MiB",
            description = "DRAM for compressed K caches, reuse and rolling buffers and adapters, e.g. 2200MiB "
                    + "(default: ${DEFAULT-VALUE}).")
    String dramBudget;

    @Option(names = "--budget-tokens", defaultValue = "400", description = "MG: tokens selected per step (default: ${DEFAULT-VALUE}).")
    int budgetTokens;

    @Option(names = "--group-sizes", split = ",", defaultValue = "1,2,4,8,16",
            description = "Group sizes to try (default: ${DEFAULT-VALUE}).")
    int[] groupSizes;

    @Option(names = "--sigma-max", defaultValue = "32", description = "Largest compression ratio σ (default: ${DEFAULT-VALUE}).")
    double sigmaMax;

    @Option(names = "--compute-ms", defaultValue = "2.0",
            description = "Decode time of one layer for the whole batch, ms: what I/O hides behind (default: ${DEFAULT-VALUE}).")
    double computeMs;

    @Option(names = "--alpha", defaultValue = "0", description = "Share of I/O allowed not to be hidden (default: ${DEFAULT-VALUE}).")
    double alpha;

    @Option(names = "--min-recall", defaultValue = "0", description = "Least attention-mass recall (default: ${DEFAULT-VALUE}).")
    double minRecall;

    @Option(names = "--policy", defaultValue = "FIFO",
            description = "Reuse-buffer policy: ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
    ReuseBuffer.Policy policy;

    @Mixin
    SsdModel ssd = new SsdModel();

    @Mixin
    Calibration calibration = new Calibration();

    @Option(names = "--seed", defaultValue = "24301", description = "Synthetic workload and SVD sample seed (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = {"-o", "--output"}, defaultValue = "kvswap.json", description = "Where to write the JSON (default: ${DEFAULT-VALUE}).")
    Path output;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    public static void main(String[] args) {
        CommandLine cl = new CommandLine(new TuneCommand());
        // A budget that fits nothing, or a bad option value, deserves its message, not a stack trace.
        cl.setExecutionExceptionHandler((ex, cmd, parsed) -> {
            cmd.getErr().println("kvswap-tune: " + ex.getMessage());
            if (!(ex instanceof IllegalArgumentException)) {
                ex.printStackTrace(cmd.getErr());
            }
            return 2;
        });
        System.exit(cl.execute(args));
    }

    @Override
    public Integer call() throws IOException {
        KvShape shape = modelShape.shape();
        long budget = KvConfig.parseSize("--dram-budget", dramBudget);
        ParameterTuner tuner = ParameterTuner.builder(shape, maxContext, batch, budget)
                .device(ssd.costModel())
                .computeSecondsPerLayer(computeMs / 1e3)
                .budgetTokens(budgetTokens)
                .groupSizes(groupSizes)
                .maxCompressionRatio(sigmaMax)
                .relaxation(alpha)
                .minRecall(minRecall)
                .reusePolicy(policy)
                .seed(seed)
                .build();
        PrintWriter out = spec.commandLine().getOut();
        KvSwapConfig config = run(tuner, calibration.load(shape, seed, out));
        config.write(output);
        KvSwapConfig.Prediction p = config.predicted();
        out.printf(Locale.ROOT, "G = %d, r = %d (σ = %.0f), M = %d, C = %d slots; memory %.1f of %.1f MiB%n",
                config.groupSize(), config.rank(), config.compressionRatio(), config.groups(), config.reuseSlots(),
                config.memory().totalBytes() / 1048576.0, budget / 1048576.0);
        out.printf(Locale.ROOT, "recall %.3f, reuse %.3f, I/O %.3f ms per layer (%s), %.1f tokens/s modelled%n",
                p.attentionMassRecall(), p.reuseRate(), p.ioSecondsPerLayer() * 1e3,
                p.ioHidden() ? "hidden" : "not hidden", p.tokensPerSecond());
        out.println("wrote " + output.toAbsolutePath());
        out.flush();
        return 0;
    }

    private static KvSwapConfig run(ParameterTuner tuner, CalibrationSet calibration) {
        try (ProgressBar pb = ProgressBars.ascii("kvswap-tune", 1, 250)) {
            return tuner.tune(calibration, (done, total, what) -> {
                pb.maxHint(total);
                pb.stepTo(done);
                pb.setExtraMessage(what);
            });
        }
    }

    /** The model whose KV is tuned for ({@code --model}, or a custom one from its layers and heads). */
    static final class ModelShape {
        @Option(names = "--model", defaultValue = "llama3-8b",
                description = "Model shape: llama3-8b, or 'custom' with --layers, --query-heads, --kv-heads, --head-dim "
                        + "(default: ${DEFAULT-VALUE}).")
        String model;

        @Option(names = "--layers", defaultValue = "32", description = "Layers of a custom model (default: ${DEFAULT-VALUE}).")
        int layers;

        @Mixin
        HeadOptions heads = new HeadOptions(32, 8, 128);

        KvShape shape() {
            return switch (model.toLowerCase(Locale.ROOT)) {
                case "llama3-8b" -> KvShape.llama3_8b();
                case "custom" -> heads.shape(layers);
                default -> throw new IllegalArgumentException("--model = '" + model + "'; allowed: llama3-8b, custom");
            };
        }
    }

    /** The SSD the fetch time is modelled on. */
    static final class SsdModel {
        @Option(names = "--bandwidth", defaultValue = "1503238553",
                description = "SSD random-read bandwidth at large reads, bytes/s (default: ${DEFAULT-VALUE}, 1.4 GiB/s).")
        double bandwidth;

        @Option(names = "--iops", defaultValue = "145000", description = "SSD random reads/s at 4 KiB (default: ${DEFAULT-VALUE}).")
        double iops;

        @Option(names = "--alignment", defaultValue = "4096", description = "Direct-I/O read alignment (default: ${DEFAULT-VALUE}).")
        int alignment;

        FetchCostModel costModel() {
            return new FetchCostModel(bandwidth, iops, alignment);
        }
    }

    /** The calibration layer: a layer of a captured trace, or the synthetic workload's first. */
    static final class Calibration {
        @Option(names = "--trace", description = "Calibrate on a captured trace (keys and decoding queries) instead of "
                + "the synthetic workload.")
        Path trace;

        @Option(names = "--trace-layer", defaultValue = "0", description = "Layer of the trace to calibrate on (default: ${DEFAULT-VALUE}).")
        int traceLayer;

        @Option(names = "--calibration-tokens", defaultValue = "16384",
                description = "Context of the synthetic calibration layer (default: ${DEFAULT-VALUE}).")
        int calibrationTokens;

        @Option(names = "--calibration-steps", defaultValue = "32",
                description = "Consecutive decoding queries of the synthetic calibration (default: ${DEFAULT-VALUE}).")
        int calibrationSteps;

        /** The calibration set, the synthetic one of {@code shape} from {@code seed}; says which on {@code out}. */
        CalibrationSet load(KvShape shape, long seed, PrintWriter out) throws IOException {
            if (trace != null) {
                try (TraceReader reader = TraceReader.open(trace)) {
                    float[][] queries = reader.queries(traceLayer);
                    DenseLayerKv keys = DenseLayerKv.materialize(reader.layer(traceLayer), false);
                    out.println("calibrating on " + trace + " layer " + traceLayer + ": " + keys.tokens() + " tokens, "
                            + queries.length + " queries");
                    return new CalibrationSet(keys, null, queries, reader.header().queryHeads());
                }
            }
            out.println("calibrating on the synthetic workload: " + calibrationTokens + " tokens, " + calibrationSteps
                    + " decoding steps");
            SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(shape, calibrationTokens).seed(seed).build());
            return CalibrationSet.of(w.layer(0), w.queries(0, calibrationSteps), w.shape().queryHeads());
        }
    }
}
