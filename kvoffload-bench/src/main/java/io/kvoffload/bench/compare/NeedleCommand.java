package io.kvoffload.bench.compare;

import io.kvoffload.KvShape;
import io.kvoffload.bench.cli.HeadOptions;
import io.kvoffload.bench.cli.WorkloadOptions;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.strategy.FetchPlan;
import io.kvoffload.strategy.LayerSelector;
import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.strategy.Strategies;
import io.kvoffload.workload.Needles;
import java.io.PrintWriter;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Passkey retrieval at a budget: does a strategy's step hold the token a query looks for? Each layer
 * has Gaussian keys and, per KV head, a needle: a token whose key is moved along a random direction
 * that one query head of the KV head (or every one, {@code --lookers all}) looks along, so that it
 * draws {@code --shares} of that head's attention; the other query heads look in random directions.
 * The needle is the same token in every KV head ({@code --needles shared}) or each KV head's own
 * ({@code each}). Per strategy, share and budget it counts the needles a step holds for their KV head
 * and the layers whose needles it holds all of, each strategy handed the plan the decoder's pipeline
 * would hand it (the sinks and window inside the budget). In memory: the selection only, as {@code
 * select-eval}. {@code NeedleRetrievalTest} checks the default through the decoder and the SSDs.
 */
@Command(name = "needle", mixinStandardHelpOptions = true,
        description = "Passkey retrieval: the share of needles (a token one query head of each KV head looks for) each"
                + " strategy's step holds, per needle attention share and budget. Prints a markdown table.")
public final class NeedleCommand implements Callable<Integer> {
    @Mixin
    WorkloadOptions size = new WorkloadOptions(16384, 8, 24301);

    @Mixin
    HeadOptions heads = new HeadOptions(32, 8, 128);

    @Mixin
    LocalTokenOptions local = new LocalTokenOptions();

    @Mixin
    HeadGroupsOption groups = new HeadGroupsOption();

    @Option(names = "--budgets", split = ",", defaultValue = "0.02,0.05,0.1",
            description = "Token budget shares (default: ${DEFAULT-VALUE}).")
    double[] budgets;

    @Option(names = "--shares", split = ",", defaultValue = "0.01,0.1,0.5",
            description = "The needle's share of its looking query head's attention, in (0, 1) (default: ${DEFAULT-VALUE}).")
    double[] shares;

    @Option(names = "--lookers", defaultValue = "one", description = "Query heads of a KV head that look for its needle:"
            + " one or all (default: ${DEFAULT-VALUE}).")
    String lookers;

    @Option(names = "--needles", defaultValue = "each", description = "each: a needle per KV head; shared: one token for"
            + " all (default: ${DEFAULT-VALUE}).")
    String needles;

    @Option(names = "--strategies", split = ",", defaultValue = "oracle,mass-auto,quest,infllm,clusterkv,pqcache",
            description = "Registered strategies (default: ${DEFAULT-VALUE}).")
    List<String> strategies;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        KvShape shape = heads.shape(1);
        int tokens = size.tokens, kv = shape.kvHeads(), d = shape.headDim();
        check(tokens > local.resident(tokens) + 2 * 64, "--tokens", tokens, "more than the sinks, the window and 128");
        groups.check(kv);
        check(lookers.equals("one") || lookers.equals("all"), "--lookers", lookers, "one, all");
        check(needles.equals("each") || needles.equals("shared"), "--needles", needles, "each, shared");
        for (double s : shares) {
            check(s > 0 && s < 1, "--shares", s, "values in (0, 1)");
        }
        for (double b : budgets) {
            check(b > 0 && b <= 1, "--budgets", b, "values in (0, 1]");
        }
        List<SelectionStrategy> chosen = strategies.stream().map(Strategies::named).toList();
        int[][][] found = new int[chosen.size()][shares.length][budgets.length]; // needles held for their head
        int[][][] whole = new int[chosen.size()][shares.length][budgets.length]; // layers with every needle held
        for (int si = 0; si < shares.length; si++) {
            for (int layer = 0; layer < size.layers; layer++) {
                long seed = size.seed * 1_000_003L + 7919L * si + layer;
                SplittableRandom rnd = new SplittableRandom(seed);
                float[][] keys = new float[kv][tokens * d];
                for (float[] k : keys) {
                    for (int i = 0; i < k.length; i++) {
                        k[i] = (float) rnd.nextGaussian();
                    }
                }
                Needles planted = Needles.draw(shape, tokens, local.sinkEnd(tokens) + 64, local.windowFrom(tokens) - 64,
                        shares[si], 1f, lookers.equals("all"), needles.equals("shared"), ~seed); // apart from the keys' stream
                planted.plantHeadMajor(keys);
                float[] query = planted.query();
                DenseLayerKv layerKv = new DenseLayerKv(tokens, d, keys, null);
                for (int c = 0; c < chosen.size(); c++) {
                    try (Closing sel = new Closing(chosen.get(c).openLayer(new KeysContext(shape, layer, layerKv, local.sinks,
                            local.window, null, null, groups.count, query.clone())))) {
                        for (int bi = 0; bi < budgets.length; bi++) {
                            FetchPlan plan = new FetchPlan();
                            plan.heads(kv, groups.count);
                            int budget = (int) Math.ceil(budgets[bi] * tokens) - local.resident(tokens);
                            plan.begin(layer, tokens, Math.max(0, budget));
                            sel.selector().select(query, plan);
                            int held = held(plan, planted, kv);
                            found[c][si][bi] += held;
                            whole[c][si][bi] += held == kv ? 1 : 0;
                        }
                    }
                }
            }
        }
        print(found, whole);
        return 0;
    }

    /** The KV heads whose needle the plan holds for that head. */
    private static int held(FetchPlan plan, Needles needles, int kvHeads) {
        int n = 0;
        for (int h = 0; h < kvHeads; h++) {
            for (int i = 0; i < plan.size(); i++) {
                long m = plan.kvHeadMask(i);
                if (plan.position(i) == needles.position(h) && (m == FetchPlan.ALL_HEADS || (m >>> h & 1) != 0)) {
                    n++;
                    break;
                }
            }
        }
        return n;
    }

    private void print(int[][][] found, int[][][] whole) {
        PrintWriter out = spec.commandLine().getOut();
        KvShape shape = heads.shape(1);
        out.printf(Locale.ROOT, "needle: %d tokens, %d layers, %d query heads on %d KV heads × %d, head groups %d, %s looker(s),"
                + " %s needle(s), sinks %d, window %d, seed %d%n%n", size.tokens, size.layers, shape.queryHeads(),
                shape.kvHeads(), shape.headDim(), groups.count, lookers, needles, local.sinks, local.window, size.seed);
        StringBuilder head = new StringBuilder("| strategy |");
        StringBuilder rule = new StringBuilder("|---|");
        for (double s : shares) {
            for (double b : budgets) {
                head.append(String.format(Locale.ROOT, " share %.2f, budget %.2f |", s, b));
                rule.append("---:|");
            }
        }
        out.println(head);
        out.println(rule);
        int needlesTotal = size.layers * shape.kvHeads();
        for (int c = 0; c < strategies.size(); c++) {
            StringBuilder row = new StringBuilder("| " + strategies.get(c) + " |");
            for (int si = 0; si < shares.length; si++) {
                for (int bi = 0; bi < budgets.length; bi++) {
                    row.append(String.format(Locale.ROOT, " %d/%d (%d/%d) |", found[c][si][bi], needlesTotal, whole[c][si][bi],
                            size.layers));
                }
            }
            out.println(row);
        }
        out.println();
        out.println("Each cell: needles held for their KV head / needles, (layers with every needle held / layers).");
        out.flush();
    }

    private static void check(boolean ok, String option, Object value, String allowed) {
        if (!ok) {
            throw new IllegalArgumentException(option + " = " + value + "; allowed: " + allowed);
        }
    }

    /** A layer's selector, closed with try-with-resources. */
    private record Closing(LayerSelector selector) implements AutoCloseable {
        @Override
        public void close() {
            selector.close();
        }
    }
}
