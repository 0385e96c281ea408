package io.kvoffload.bench.swarm;

import io.kvoffload.bench.cli.HeadOptions;
import java.io.PrintWriter;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Swarm Table 4 as a table: median time of one selection step, medoid index vs naive scoring of
 * every key, per context length (see {@link SelectionFixture} for what each step does). The JMH
 * {@code MedoidSelectionBench} measures the same steps with the GC profiler; this command is the
 * quick, self-contained version (under three minutes for 128K–1M on two cores).
 */
@Command(name = "selection-latency", mixinStandardHelpOptions = true,
        description = "Swarm Table 4: median ms per selection step, medoid scoring + cluster selection vs naive "
                + "scoring of every key + top-k, per context length. Prints a markdown table.")
public final class SelectionLatencyCommand implements Callable<Integer> {
    /** Swarm Table 4 at the four doubling prefix lengths, ms. */
    private static final double[] PAPER_SWARM = {0.236, 0.374, 0.554, 0.999};
    private static final double[] PAPER_NAIVE = {1.635, 3.136, 6.176, 12.15};

    @Option(names = "--tokens", split = ",", defaultValue = "131072,262144,524288,1048576",
            description = "Context lengths (default: ${DEFAULT-VALUE}).")
    int[] tokens;

    @Mixin
    HeadOptions heads = new HeadOptions(32, 8, 128);

    @Option(names = "--cluster-size", defaultValue = "16",
            description = "Tokens per cluster; the offline clustering averages 15.7–15.9 (default: ${DEFAULT-VALUE}).")
    int clusterSize;

    @Option(names = "--budget-share", defaultValue = "0.1", description = "Share of tokens selected (default: ${DEFAULT-VALUE}).")
    double budgetShare;

    @Option(names = "--medoid-steps", defaultValue = "100", description = "Timed medoid steps per length (default: ${DEFAULT-VALUE}).")
    int medoidSteps;

    @Option(names = "--naive-steps", defaultValue = "11", description = "Timed naive steps per length (default: ${DEFAULT-VALUE}).")
    int naiveSteps;

    @Option(names = "--seed", defaultValue = "24301", description = "Key and query seed (default: ${DEFAULT-VALUE}).")
    long seed;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        if (!(budgetShare > 0 && budgetShare <= 1)) {
            throw new IllegalArgumentException("--budget-share = " + budgetShare + " is out of range; allowed: (0, 1]");
        }
        for (int t : tokens) {
            if (t < 1) {
                throw new IllegalArgumentException("--tokens = " + t + " is out of range; allowed: 1..2147483647");
            }
        }
        if (medoidSteps < 1 || naiveSteps < 1) {
            throw new IllegalArgumentException("--medoid-steps = " + medoidSteps + ", --naive-steps = " + naiveSteps
                    + "; allowed: at least 1 each");
        }
        PrintWriter out = spec.commandLine().getOut();
        long t0 = System.nanoTime();
        out.printf(Locale.ROOT, "Selection latency: %d query heads on %d KV heads × %d, float32 keys; clusters of %d "
                        + "tokens; budget %.0f%% of the tokens; medians of %d medoid and %d naive steps after warm-up; "
                        + "%d CPUs, JDK %s.%n%n", heads.queryHeads, heads.kvHeads, heads.headDim, clusterSize, 100 * budgetShare, medoidSteps,
                naiveSteps, Runtime.getRuntime().availableProcessors(), Runtime.version());
        out.println("| tokens | clusters | medoid keys MiB | medoid ms | naive keys MiB | naive ms | naive / medoid "
                + "| paper Swarm ms | paper naive ms |");
        out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (int i = 0; i < tokens.length; i++) {
            int n = tokens[i];
            double medoid, naive;
            long medoidBytes, naiveBytes;
            int clusters;
            try (SelectionFixture f = new SelectionFixture(false, n, heads.queryHeads, heads.kvHeads, heads.headDim, clusterSize, budgetShare,
                    seed)) {
                medoid = median(f, Math.max(20, medoidSteps / 2), medoidSteps);
                medoidBytes = f.scoredBytes();
                clusters = f.clusters();
            }
            String naiveMs, ratio, naiveMib;
            try (SelectionFixture f = new SelectionFixture(true, n, heads.queryHeads, heads.kvHeads, heads.headDim, clusterSize, budgetShare,
                    seed)) {
                naive = median(f, 3, naiveSteps);
                naiveBytes = f.scoredBytes();
                naiveMs = String.format(Locale.ROOT, "%.3f", naive);
                naiveMib = String.format(Locale.ROOT, "%.0f", naiveBytes / 1048576.0);
                ratio = String.format(Locale.ROOT, "%.1f×", naive / medoid);
            } catch (OutOfMemoryError e) { // 4 KiB per token off-heap: 4 GiB at 1M
                naiveMs = "– (" + e.getMessage() + ")";
                naiveMib = "–";
                ratio = "–";
            }
            int p = paperColumn(n);
            out.printf(Locale.ROOT, "| %,d | %,d | %.1f | %.3f | %s | %s | %s | %s | %s |%n", n, clusters,
                    medoidBytes / 1048576.0, medoid, naiveMib, naiveMs, ratio,
                    p < 0 ? "–" : String.valueOf(PAPER_SWARM[p]), p < 0 ? "–" : String.valueOf(PAPER_NAIVE[p]));
            out.flush();
        }
        out.printf(Locale.ROOT, "%nTotal run time %.1f s.%n", (System.nanoTime() - t0) / 1e9);
        out.flush();
        return 0;
    }

    /** Table 4's column for 128K, 256K, 512K, 1M tokens; −1 for other lengths. */
    private static int paperColumn(int tokens) {
        for (int i = 0; i < 4; i++) {
            if (tokens == (128 * 1024) << i) {
                return i;
            }
        }
        return -1;
    }

    private static double median(SelectionFixture f, int warmup, int steps) {
        long sink = 0;
        for (int i = 0; i < warmup; i++) {
            sink += f.step();
        }
        double[] ms = new double[steps];
        for (int i = 0; i < steps; i++) {
            long s = System.nanoTime();
            sink += f.step();
            ms[i] = (System.nanoTime() - s) / 1e6;
        }
        if (sink == Long.MIN_VALUE) { // keeps the steps observable
            System.out.print("");
        }
        Arrays.sort(ms);
        return steps % 2 == 1 ? ms[steps / 2] : (ms[steps / 2 - 1] + ms[steps / 2]) / 2;
    }
}
