package io.kvoffload.bench.engine;

import io.kvoffload.DecodeOptions;
import io.kvoffload.KvConfig;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.bench.TempDirs;
import io.kvoffload.bench.cli.KvHeadOptions;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code kvo bench engine-loop}: a Llama-architecture decoder's decode loop on kvoffload (see
 * {@link EngineLoop}) against the same loop with the whole KV cache in DRAM, with where each
 * millisecond of a generated token goes. docs/integration.md explains the loop.
 */
@Command(name = "engine-loop", mixinStandardHelpOptions = true,
        description = "An inference engine's decode loop on kvoffload: a Llama-architecture decoder (RMSNorm, RoPE, "
                + "GQA, SwiGLU; random weights) prefills a context into a sequence (Swarm-clustered, BF16), then "
                + "decodes with layer l+1 prefetched while layer l computes and DecodeAttention over each view. "
                + "Prints ms per token (selection, I/O wait, attention, the rest), tokens/s against the same loop "
                + "with the KV in DRAM, and the share of fetch time hidden behind compute.")
public final class EngineLoopCommand implements Callable<Integer> {
    @Option(names = "--dirs", split = ",", description = "Directories standing for SSDs (default: 4 under a temporary directory).")
    Path[] dirs;

    @Option(names = "--layers", defaultValue = "4", description = "Decoder layers (default: ${DEFAULT-VALUE}).")
    int layers;

    @Option(names = "--context", defaultValue = "16384", description = "Prompt tokens prefilled (default: ${DEFAULT-VALUE}).")
    int context;

    @Option(names = "--tokens", defaultValue = "16", description = "Generated tokens measured (default: ${DEFAULT-VALUE}).")
    int tokens;

    @Option(names = "--warmup", defaultValue = "4", description = "Generated tokens before measuring (default: ${DEFAULT-VALUE}).")
    int warmup;

    @Option(names = "--hidden", defaultValue = "1024", description = "Model width (default: ${DEFAULT-VALUE}).")
    int hidden;

    @Option(names = "--ffn", defaultValue = "3584", description = "MLP width (default: ${DEFAULT-VALUE}).")
    int ffn;

    @Option(names = "--vocab", defaultValue = "512", description = "Vocabulary (default: ${DEFAULT-VALUE}).")
    int vocab;

    @Mixin
    KvHeadOptions heads = new KvHeadOptions(8, 128);

    @Option(names = "--group", defaultValue = "4", description = "Query heads per KV head (default: ${DEFAULT-VALUE}).")
    int group;

    @Option(names = "--sparsity", defaultValue = "0.1", description = "Share of tokens attended per step (default: ${DEFAULT-VALUE}).")
    double sparsity;

    @Option(names = "--predict", defaultValue = "INPUT",
            description = "Early query of layer l+1: INPUT (from layer l's input, as InfiniGen/KVSwap) or PREVIOUS "
                    + "(the previous step's query of layer l+1) (default: ${DEFAULT-VALUE}).")
    EngineLoop.Predict predict;

    @Option(names = "--no-dram", description = "Skip the all-in-DRAM comparison.")
    boolean noDram;

    @Option(names = "--seed", defaultValue = "18", description = "Weights and prompt seed (default: ${DEFAULT-VALUE}).")
    long seed;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        check("--layers", layers, 1, 128);
        check("--context", context, 64, 1 << 20);
        check("--tokens", tokens, 1, 1 << 16);
        check("--warmup", warmup, 0, 1 << 16);
        check("--hidden", hidden, 8, 1 << 14);
        check("--ffn", ffn, 8, 1 << 16);
        check("--vocab", vocab, 2, 1 << 16);
        check("--kv-heads", heads.kvHeads, 1, 64);
        check("--group", group, 1, 16);
        check("--head-dim", heads.headDim, 2, 256);
        if (heads.headDim % 2 != 0) {
            throw new IllegalArgumentException("--head-dim = " + heads.headDim + " is odd; allowed: even (RoPE rotates pairs)");
        }
        PrintWriter out = spec.commandLine().getOut();
        long t0 = System.nanoTime();
        int kvHeads = heads.kvHeads;
        LlamaModel model = new LlamaModel(layers, hidden, ffn, vocab, kvHeads * group, kvHeads, heads.headDim, seed);
        EngineLoop loop = new EngineLoop(model, context, warmup, tokens, seed);
        out.printf(Locale.ROOT, "Engine loop: %d layers, hidden %d, MLP %d, %d query heads on %d KV heads × %d (BF16 KV, "
                        + "%d bytes per token and layer), context %d tokens, %.0f%% attended; %d tokens measured after %d; "
                        + "early query: %s; %d CPUs, JDK %s.%n", layers, hidden, ffn, kvHeads * group, kvHeads, heads.headDim,
                model.shape.entryBytes(), context, 100 * sparsity, tokens, warmup, predict,
                Runtime.getRuntime().availableProcessors(), Runtime.version());
        Path root = dirs == null ? TempDirs.givenOrTemp(null, "kvo-engine-loop") : null;
        EngineLoop.Breakdown offload;
        try {
            java.util.List<Path> devices = dirs != null ? java.util.List.of(dirs) : TempDirs.ssdDirectories(root, 4);
            for (Path d : devices) {
                java.nio.file.Files.createDirectories(d);
            }
            long bytes = (long) layers * (context + warmup + tokens + 1) * model.shape.entryBytes();
            KvConfig config = KvConfig.builder().ssdDirectories(devices)
                    .deviceCapacityBytes(Math.max(64L << 20, 2 * bytes / devices.size() + (64L << 20)))
                    .dramBudgetBytes(Math.max(256L << 20, bytes / 2)).build();
            try (KvEngine engine = KvEngine.open(config); KvSequence seq = engine.createSequence(model.shape)) {
                long p0 = System.nanoTime();
                loop.prefill(seq, 32);
                out.printf(Locale.ROOT, "prefill: %d tokens × %d layers appended, clustered and committed in %.1f s%n",
                        context, layers, (System.nanoTime() - p0) / 1e9);
                offload = loop.offload(seq, DecodeOptions.builder().sparsity(sparsity).build(), predict);
            }
        } finally {
            if (dirs == null) {
                TempDirs.deleteRecursively(root);
            }
        }
        EngineLoop.Breakdown dram = noDram ? null : loop.dram();
        out.println();
        out.println("| loop | tokens/s | ms/token | selection | I/O wait | attention | query prediction | the rest "
                + "| fetch unhidden | hidden | KiB read/token |");
        out.println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        row(out, "offload (SSD)", offload);
        if (dram != null) {
            row(out, "all in DRAM, dense", dram);
            out.printf(Locale.ROOT, "%noffload / DRAM tokens/s: %.2f%n", offload.tokensPerSecond() / dram.tokensPerSecond());
        }
        out.printf(Locale.ROOT, "share of fetch time hidden behind compute: %.0f%% (1 - I/O wait / fetch time when "
                + "awaited at once, %.2f ms per token)%n", 100 * offload.hiddenShare(), offload.serialFetchMs());
        if (!Double.isNaN(offload.predictorCosine())) {
            out.printf(Locale.ROOT, "query predicted from the previous layer's input: cosine to the actual query %.3f "
                    + "(previous step's query: %.3f)%n", offload.predictorCosine(), offload.previousCosine());
        } else {
            out.printf(Locale.ROOT, "previous step's query: cosine to the actual query %.3f%n", offload.previousCosine());
        }
        out.printf(Locale.ROOT, "attention mass (actual query, over the prompt) in the views prefetched with the early "
                + "query: %.1f%%; fetched with the actual query: %.1f%%%n", 100 * offload.recallEarly(),
                100 * offload.recallActual());
        out.printf(Locale.ROOT, "engine-loop: OK in %.1f s%n", (System.nanoTime() - t0) / 1e9);
        out.flush();
        return 0;
    }

    private static void row(PrintWriter out, String name, EngineLoop.Breakdown b) {
        out.printf(Locale.ROOT, "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %s | %s | %d |%n", name,
                b.tokensPerSecond(), b.totalMs(), b.selectMs(), b.ioWaitMs(), b.attentionMs(), b.predictMs(), b.restMs(),
                b.serialFetchMs() > 0 ? String.format(Locale.ROOT, "%.2f", b.serialFetchMs()) : "-",
                b.serialFetchMs() > 0 ? String.format(Locale.ROOT, "%.0f%%", 100 * b.hiddenShare()) : "-",
                b.bytesPerToken() / 1024);
    }

    private static void check(String name, int value, int min, int max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(name + " = " + value + " is out of range; allowed: " + min + ".." + max);
        }
    }
}
