package io.kvoffload.bench.compare;

import io.kvoffload.KvShape;
import io.kvoffload.attention.ExactAttention;
import io.kvoffload.attention.QualityMetrics;
import io.kvoffload.bench.cli.HeadOptions;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.strategy.FetchPlan;
import io.kvoffload.strategy.LayerContext;
import io.kvoffload.strategy.LayerSelector;
import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.internal.swarm.BlockMassStrategy;
import io.kvoffload.internal.util.PartialTopK;
import io.kvoffload.workload.HeadType;
import io.kvoffload.workload.ModelLikeWorkload;
import io.kvoffload.workload.Workload;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import io.kvoffload.bench.cli.WorkloadOptions;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Selection fidelity of the plug-in strategies at equal rows (issue #16): every strategy gets the
 * same {@link FetchPlan} the decoder's pipeline would hand it — the budget {@code ⌈share × tokens⌉}
 * minus the sinks and the window, which are added to every step's set as the pipeline adds them —
 * on one synthetic workload and shape. Per strategy it reports attention-mass recall and the output's
 * relative error against dense attention (and both as a ratio to the oracle's), the rows attended,
 * the bytes a step would read from the SSDs (the default positional layout: each block of
 * {@code --block} tokens one extent, each 4 KiB page of it that holds a selected entry read once,
 * sinks and window from DRAM) and the median selection time. No I/O is done: {@code
 * kvo bench compare} runs the strategies through the real pipeline.
 */
@Command(name = "select-eval", mixinStandardHelpOptions = true,
        description = "Plug-in selection strategies at equal rows (sinks and window inside the budget): mass recall,"
                + " output error, bytes a step reads, selection time, each against the oracle's.")
public final class SelectEvalCommand implements Callable<Integer> {
    @Mixin
    WorkloadOptions size = new WorkloadOptions(16384, 2, 24301);

    @Option(names = "--budget", defaultValue = "0.1", description = "Token budget share (default: ${DEFAULT-VALUE}).")
    double budget;

    @Option(names = "--strategies", split = ",", defaultValue = "oracle,mass-auto,mass-bound,mass-mean,mass-mix,logit-mean,quest,"
            + "infllm,clusterkv,pqcache", description = "Registered strategies (default: ${DEFAULT-VALUE}).")
    List<String> strategies;

    @Mixin
    HeadOptions heads = new HeadOptions(32, 8, 128);

    @Option(names = "--steps", defaultValue = "8", description = "Scored decoding steps per layer (default: ${DEFAULT-VALUE}).")
    int steps;

    @Option(names = "--first-step", defaultValue = "256", description = "First scored decoding step (default: ${DEFAULT-VALUE}).")
    int firstStep;

    @Mixin
    LocalTokenOptions local = new LocalTokenOptions();

    @Option(names = "--block", defaultValue = "16", description = "Tokens per stored block (default: ${DEFAULT-VALUE}).")
    int block;

    @Mixin
    FamilyOption family = new FamilyOption();

    @Mixin
    HeadGroupsOption groups = new HeadGroupsOption();

    @Spec
    CommandSpec spec;

    /** The ceiling of any block ranking: blocks by their true attention mass (needs the exact weights). */
    static final String BLOCK_ORACLE = "block-oracle";

    /**
     * Swarm's medoid selection over its offline co-activation clusters (profiled from 64 decoding
     * queries, every 4th step before the scored ones, τ = 0.35, as {@code compare-quality} does); it
     * picks sinks and window itself inside the same total budget.
     */
    static final String SWARM = "swarm";

    /** Current layer's workload, for {@link #SWARM}'s profile. */
    private Workload workload;
    private int total;

    /**
     * Swarm's offline phase on the layer being opened: profiled from 64 decoding queries (every 4th
     * step before the scored ones), τ = 0.35, the medoid keys in {@code arena}.
     */
    private io.kvoffload.internal.swarm.SwarmSelector swarmOffline(LayerContext context, java.lang.foreign.Arena arena) {
        List<float[]> profile = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            profile.add(workload.query(context.layer(), i * 4));
        }
        return io.kvoffload.internal.swarm.SwarmSelector.build(context.keys(), heads.queryHeads, profile, budget,
                io.kvoffload.internal.swarm.ClusteringConfig.defaults()
                        .withRadius(io.kvoffload.internal.swarm.ClusterRadius.fixed(0.35)),
                local.sinks, local.window, arena);
    }

    private SelectionStrategy swarm() {
        return new SelectionStrategy() {
            @Override public String name() { return SWARM; }
            @Override public LayerSelector openLayer(LayerContext context) {
                java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofShared();
                io.kvoffload.internal.swarm.SwarmSelector sel = swarmOffline(context, arena);
                int[] out = new int[sel.maxSelected(total)];
                return new LayerSelector() {
                    @Override public void select(float[] query, FetchPlan plan) {
                        plan.addAll(out, sel.select(query, total, out));
                    }

                    @Override public void close() {
                        arena.close();
                    }
                };
            }
        };
    }

    /**
     * The library's {@code swarm-mass} / {@code swarm-qmass} over Swarm's offline clustering as
     * {@link #SWARM} builds it (the strategies rank the layout's units; a layer laid out by Swarm in a
     * store hands them over the same way).
     */
    static final String SWARM_MASS = "swarm-mass", SWARM_QMASS = "swarm-qmass", SWARM_MASS_FULL = "swarm-mass-full";

    private SelectionStrategy swarmMass(String strategy) {
        return new SelectionStrategy() {
            @Override public String name() { return strategy; }
            @Override public LayerSelector openLayer(LayerContext context) {
                try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
                    io.kvoffload.internal.swarm.Clustering c = swarmOffline(context, arena).index().clustering();
                    int[] offsets = c.memberOffsets(), members = c.allMembers();
                    io.kvoffload.strategy.LayoutUnits units = new io.kvoffload.strategy.LayoutUnits() {
                        @Override public int count() { return c.clusterCount(); }
                        @Override public int size(int u) { return offsets[u + 1] - offsets[u]; }
                        @Override public int member(int u, int i) { return members[offsets[u] + i]; }
                        @Override public int coActivationUnits() { return c.coActivationClusters(); }
                    };
                    return io.kvoffload.strategy.Strategies.named(name()).openLayer(new KeysContext(context.shape(),
                            context.layer(), context.keys(), local.sinks, local.window, null, units));
                }
            }
        };
    }

    /** Exact weights of the step being scored, for {@link #BLOCK_ORACLE}. */
    private float[] exactWeights;

    private SelectionStrategy blockOracle() {
        return new SelectionStrategy() {
            @Override public String name() { return BLOCK_ORACLE; }
            @Override public LayerSelector openLayer(LayerContext context) {
                int blocks = (size.tokens + block - 1) / block;
                return (query, plan) -> {
                    double[] mass = new double[blocks];
                    int windowFrom = Math.max(0, size.tokens - local.window);
                    for (int t = 0; t < size.tokens; t++) {
                        mass[t / block] += exactWeights[t];
                    }
                    Integer[] order = new Integer[blocks];
                    for (int b = 0; b < blocks; b++) {
                        order[b] = b;
                        if (Math.min(size.tokens, b * block + block) <= local.sinks || b * block >= windowFrom) {
                            mass[b] = -1;
                        }
                    }
                    Arrays.sort(order, (a, b) -> Double.compare(mass[b], mass[a]));
                    for (int i = 0; i < plan.budget() / block && mass[order[i]] >= 0; i++) {
                        for (int t = order[i] * block; t < Math.min(size.tokens, order[i] * block + block); t++) {
                            plan.add(t);
                        }
                    }
                };
            }
        };
    }

    /** Per-KV-head reference selections (the diagnosis of issue #16): one token set per KV head. */
    static final String HEAD_ORACLE = "head-oracle";
    static final String HEAD_ORACLE_POOLED = "head-oracle-pooled";
    static final String HEAD_BLOCK_ORACLE = "head-block-oracle";
    /**
     * The references above, each KV head its own set. The library's per-head strategies
     * ({@code head-mass-mix}, {@code head-qmass-mix}) run as registered strategies with
     * {@code --head-groups}.
     */
    static final List<String> HEAD_SELECTIONS = List.of(HEAD_ORACLE, HEAD_ORACLE_POOLED, HEAD_BLOCK_ORACLE);

    /**
     * One step's per-KV-head selection beyond the resident rows (sinks and window): {@code fresh}
     * rows per KV head on average. An "equal" selection gives every KV head {@code fresh} rows; a
     * "pooled" one ranks (KV head, token or block) pairs together and takes {@code kvHeads × fresh}
     * rows, so a sharp head spends few and a diffuse head many (budgets that follow each head's
     * attention entropy). With head-sharded entries both read the bytes of {@code fresh} shared rows.
     */
    interface HeadSelection {
        int[][] select(int layer, float[] q, int fresh);
    }

    /** Exact per-query-head weights of the step being scored, for the per-head references. */
    private float[][] exactHeadWeights;

    private HeadSelection headSelection(String name, KvShape shape, DenseLayerKv[] layerKv) {
        int kvHeads = shape.kvHeads(), group = shape.groupSize(), n = size.tokens;
        int blocks = (n + block - 1) / block;
        int windowFrom = local.windowFrom(n);
        return switch (name) {
            case HEAD_ORACLE, HEAD_ORACLE_POOLED -> (layer, q, fresh) -> {
                float[] pairs = new float[kvHeads * n];
                for (int qh = 0; qh < shape.queryHeads(); qh++) {
                    float[] w = exactHeadWeights[qh];
                    int base = qh / group * n;
                    for (int t = 0; t < n; t++) {
                        pairs[base + t] += w[t] / group;
                    }
                }
                for (int h = 0; h < kvHeads; h++) {
                    for (int t = 0; t < n; t++) {
                        if (t < local.sinks || t >= windowFrom) {
                            pairs[h * n + t] = Float.NEGATIVE_INFINITY; // resident: never counted twice
                        }
                    }
                }
                return topPairs(pairs, n, kvHeads, 1, fresh, name.equals(HEAD_ORACLE_POOLED));
            };
            case HEAD_BLOCK_ORACLE -> (layer, q, fresh) -> {
                float[] pairs = new float[kvHeads * blocks];
                for (int qh = 0; qh < shape.queryHeads(); qh++) {
                    float[] w = exactHeadWeights[qh];
                    int base = qh / group * blocks;
                    for (int t = 0; t < n; t++) {
                        pairs[base + t / block] += w[t] / group;
                    }
                }
                int take = maskResidentBlocks(pairs, kvHeads, blocks, windowFrom, fresh);
                return topPairs(pairs, blocks, kvHeads, block, take, true);
            };
            default -> throw new IllegalArgumentException("per-head selection " + name + " is unknown; allowed: " + HEAD_SELECTIONS);
        };
    }

    /**
     * Masks the blocks wholly in the sinks or the window; returns how many blocks each head may take
     * for {@code fresh} rows: all candidates when {@code fresh} covers the tokens they add (as {@code
     * mass-mix} does, so a full budget attends everything), else {@code ⌊fresh / block⌋}.
     */
    private int maskResidentBlocks(float[] pairs, int kvHeads, int blocks, int windowFrom, int fresh) {
        int candidates = 0;
        long adds = 0;
        for (int b = 0; b < blocks; b++) {
            int from = b * block, to = Math.min(size.tokens, from + block);
            if (to <= local.sinks || from >= windowFrom) {
                for (int h = 0; h < kvHeads; h++) {
                    pairs[h * blocks + b] = Float.NEGATIVE_INFINITY;
                }
            } else {
                candidates++;
                adds += Math.min(to, windowFrom) - Math.max(from, local.sinks);
            }
        }
        return fresh >= adds ? candidates : Math.min(candidates, fresh / block);
    }

    /**
     * Per KV head, the tokens of the chosen units (tokens or blocks of {@code unitTokens}) of
     * {@code pairs[h × units + u]}: the top {@code perHead} units of each head, or ({@code pooled})
     * the top {@code kvHeads × perHead} pairs over all heads. Masked (−∞) units are never chosen.
     */
    private int[][] topPairs(float[] pairs, int units, int kvHeads, int unitTokens, int perHead, boolean pooled) {
        List<List<Integer>> chosen = new ArrayList<>();
        for (int h = 0; h < kvHeads; h++) {
            chosen.add(new ArrayList<>());
        }
        PartialTopK topK = new PartialTopK(pairs.length);
        int[] out = new int[Math.max(1, pooled ? kvHeads * perHead : perHead)];
        for (int h = 0; h < (pooled ? 1 : kvHeads); h++) {
            int from = pooled ? 0 : h * units, to = pooled ? pairs.length : from + units;
            int got = topK.top(pairs, from, to, pooled ? kvHeads * perHead : perHead, out, 0);
            for (int i = 0; i < got; i++) {
                if (pairs[out[i]] != Float.NEGATIVE_INFINITY) {
                    chosen.get(out[i] / units).add(out[i] % units);
                }
            }
        }
        int[][] sets = new int[kvHeads][];
        for (int h = 0; h < kvHeads; h++) {
            List<Integer> rows = new ArrayList<>();
            for (int u : chosen.get(h)) {
                for (int t = u * unitTokens; t < Math.min(size.tokens, u * unitTokens + unitTokens); t++) {
                    rows.add(t);
                }
            }
            sets[h] = rows.stream().mapToInt(Integer::intValue).toArray();
        }
        return sets;
    }

    /** One strategy's sums over size.layers and steps. */
    private static final class Cell {
        final String name;
        double mass, error, rows, bytes;
        final double[] typeMass = new double[HeadType.values().length]; // summed per-query-head recall by head type
        final List<Long> nanos = new ArrayList<>();

        Cell(String name) {
            this.name = name;
        }

        double medianMicros() {
            long[] s = nanos.stream().mapToLong(Long::longValue).sorted().toArray();
            return s.length == 0 ? Double.NaN : s[s.length / 2] / 1e3;
        }
    }

    @Override
    public Integer call() {
        if (size.tokens < 1 || size.layers < 1 || steps < 1 || block < 1 || local.sinks < 0 || local.window < 0 || !(budget > 0 && budget <= 1)) {
            throw new IllegalArgumentException("--tokens = " + size.tokens + ", --layers = " + size.layers + ", --steps = " + steps
                    + ", --block = " + block + ", --sinks = " + local.sinks + ", --window = " + local.window + ", --budget = " + budget
                    + "; allowed: tokens, layers, steps, block ≥ 1, sinks and window ≥ 0, budget in (0, 1]");
        }
        KvShape shape = heads.shape(size.layers);
        groups.check(heads.kvHeads);
        List<SelectionStrategy> chosen = strategies.stream().filter(n -> !HEAD_SELECTIONS.contains(n))
                .map(n -> n.equals(BLOCK_ORACLE) ? blockOracle() : n.equals(SWARM) ? swarm()
                        : n.equals(SWARM_MASS) ? swarmMass(SWARM_MASS) : n.equals(SWARM_QMASS) ? swarmMass(SWARM_QMASS)
                        : n.equals(SWARM_MASS_FULL) ? swarmMass(SWARM_MASS_FULL)
                        : io.kvoffload.strategy.Strategies.named(n)).toList();
        DenseLayerKv[] layerKv = new DenseLayerKv[size.layers];
        List<String> headNames = strategies.stream().filter(HEAD_SELECTIONS::contains).toList();
        List<HeadSelection> headChosen = headNames.stream().map(n -> headSelection(n, shape, layerKv)).toList();
        PrintWriter out = spec.commandLine().getOut();
        out.printf(Locale.ROOT, "select-eval: family %s, %d tokens, %d layers, %d query heads on %d KV heads, head dim %d (entry %d B),"
                        + " budget %.3f, sinks %d, window %d, %d-token blocks, steps %d from %d, seed %d, %s%n",
                family.name, size.tokens, size.layers, heads.queryHeads, heads.kvHeads, heads.headDim, shape.entryBytes(), budget, local.sinks,
                local.window, block, steps, firstStep, size.seed, Runtime.version());
        out.flush();
        workload = family.get().create(shape, size.tokens, size.seed);
        ExactAttention attention = ExactAttention.of(shape);
        Cell[] cells = new Cell[chosen.size() + headChosen.size()];
        for (int i = 0; i < cells.length; i++) {
            cells[i] = new Cell(i < chosen.size() ? chosen.get(i).name() : headNames.get(i - chosen.size()));
        }
        HeadType[][] types = new HeadType[size.layers][];
        for (int layer = 0; layer < size.layers; layer++) {
            types[layer] = new HeadType[shape.queryHeads()];
            for (int qh = 0; qh < shape.queryHeads(); qh++) {
                types[layer][qh] = workload instanceof ModelLikeWorkload m ? m.headType(layer, qh) : null;
            }
        }
        int[] typeCount = new int[HeadType.values().length];
        total = (int) Math.min(size.tokens, Math.ceil(budget * size.tokens));
        for (int layer = 0; layer < size.layers; layer++) {
            DenseLayerKv kv = DenseLayerKv.materialize(workload.layer(layer), true);
            layerKv[layer] = kv;
            LayerSelector[] selectors = new LayerSelector[chosen.size()];
            for (int i = 0; i < selectors.length; i++) {
                // Opened with the first scored step's query, as a decoder opens a layer on its first prefetch.
                selectors[i] = chosen.get(i).openLayer(new KeysContext(shape, layer, kv, local.sinks, local.window, null,
                        null, groups.count, workload.query(layer, firstStep)));
            }
            FetchPlan plan = new FetchPlan();
            for (int s = 0; s < steps; s++) {
                float[] q = workload.query(layer, firstStep + s);
                ExactAttention.Result exact = attention.compute(kv, q);
                exactWeights = exact.weights();
                exactHeadWeights = attention.headWeights(kv, q);
                for (HeadType type : types[layer]) {
                    if (type != null) {
                        typeCount[type.ordinal()]++;
                    }
                }
                for (int i = 0; i < selectors.length; i++) {
                    int[][] groupSets = select(selectors[i], plan, layer, q, total, cells[i]);
                    int[][] perHead = new int[shape.kvHeads()][];
                    int perGroup = shape.kvHeads() / groups.count;
                    for (int h = 0; h < perHead.length; h++) {
                        perHead[h] = groupSets[h / perGroup];
                    }
                    if (groups.count == 1) {
                        int[] set = groupSets[0];
                        cells[i].mass += QualityMetrics.attentionMassRecall(exact.weights(), set);
                        cells[i].error += QualityMetrics.relativeError(exact.output(), attention.sparseOutput(kv, q, set));
                        cells[i].rows += set.length;
                        cells[i].bytes += readBytes(set, shape.entryBytes());
                        addTypeMass(cells[i], perHead, types[layer], shape.groupSize());
                    } else {
                        // Each head group's slice of an entry is its own extent (HEAD_SHARDED): count
                        // rows in entries and bytes per slice.
                        cells[i].mass += addTypeMass(cells[i], perHead, types[layer], shape.groupSize()) / shape.queryHeads();
                        cells[i].error += QualityMetrics.relativeError(exact.output(), attention.sparseOutput(kv, q, perHead));
                        for (int[] set : groupSets) {
                            cells[i].rows += (double) set.length / groups.count;
                            cells[i].bytes += readBytes(set, shape.entryBytes() / groups.count);
                        }
                    }
                }
                for (int i = 0; i < headChosen.size(); i++) {
                    Cell cell = cells[selectors.length + i];
                    int windowFrom = local.windowFrom(size.tokens);
                    int resident = local.resident(size.tokens);
                    long t0 = System.nanoTime();
                    int[][] fresh = headChosen.get(i).select(layer, q, Math.max(0, total - resident));
                    cell.nanos.add(System.nanoTime() - t0);
                    int[][] sets = new int[shape.kvHeads()][];
                    for (int h = 0; h < sets.length; h++) {
                        int[] set = Arrays.copyOf(fresh[h], fresh[h].length + resident);
                        int at = fresh[h].length;
                        for (int t = 0; t < local.sinkEnd(size.tokens); t++) {
                            set[at++] = t;
                        }
                        for (int t = windowFrom; t < size.tokens; t++) {
                            set[at++] = t;
                        }
                        sets[h] = set;
                        cell.rows += (double) set.length / sets.length;
                        // Head-sharded entries: each KV head's slice of an entry is its own extent.
                        cell.bytes += readBytes(set, shape.entryBytes() / shape.kvHeads());
                    }
                    cell.mass += addTypeMass(cell, sets, types[layer], shape.groupSize()) / shape.queryHeads();
                    cell.error += QualityMetrics.relativeError(exact.output(), attention.sparseOutput(kv, q, sets));
                }
            }
            for (LayerSelector sel : selectors) {
                sel.close();
            }
        }
        print(out, cells, (double) size.layers * steps);
        printTypes(out, cells, typeCount);
        return 0;
    }

    /**
     * Adds each query head's recall (its own attention weight inside its KV head's set) to the
     * cell's sum for the head's type; returns the step's sum over all query heads.
     */
    private double addTypeMass(Cell cell, int[][] perKvHead, HeadType[] types, int group) {
        double all = 0;
        for (int qh = 0; qh < types.length; qh++) {
            float[] w = exactHeadWeights[qh];
            double hit = 0;
            java.util.BitSet seen = new java.util.BitSet(w.length);
            for (int t : perKvHead[qh / group]) {
                if (!seen.get(t)) {
                    seen.set(t);
                    hit += w[t];
                }
            }
            all += hit;
            if (types[qh] != null) {
                cell.typeMass[types[qh].ordinal()] += hit;
            }
        }
        return all;
    }

    /** Recall per head type (model-like families only): where each strategy loses. */
    private static void printTypes(PrintWriter out, Cell[] cells, int[] typeCount) {
        if (Arrays.stream(typeCount).sum() == 0) {
            return;
        }
        out.println();
        StringBuilder head = new StringBuilder("| strategy");
        StringBuilder rule = new StringBuilder("|---");
        for (HeadType t : HeadType.values()) {
            if (typeCount[t.ordinal()] > 0) {
                head.append(" | ").append(t.name().toLowerCase(Locale.ROOT)).append(" heads recall");
                rule.append("|---");
            }
        }
        out.println(head.append(" |"));
        out.println(rule.append("|"));
        for (Cell c : cells) {
            StringBuilder row = new StringBuilder("| ").append(c.name);
            for (HeadType t : HeadType.values()) {
                if (typeCount[t.ordinal()] > 0) {
                    row.append(String.format(Locale.ROOT, " | %.4f", c.typeMass[t.ordinal()] / typeCount[t.ordinal()]));
                }
            }
            out.println(row.append(" |"));
        }
        out.flush();
    }

    /**
     * One step as the pipeline runs it: sinks and window first, then the strategy; per head group of
     * {@code --head-groups}, the distinct positions it attends (a position added for some KV heads
     * counts for the groups that hold one of them, as the pipeline reads it).
     */
    private int[][] select(LayerSelector sel, FetchPlan plan, int layer, float[] q, int total, Cell cell) {
        int windowFrom = local.windowFrom(size.tokens);
        int resident = local.resident(size.tokens);
        plan.heads(heads.kvHeads, groups.count);
        plan.begin(layer, size.tokens, Math.max(0, total - resident));
        for (int t = 0; t < local.sinkEnd(size.tokens); t++) {
            plan.add(t);
        }
        for (int t = windowFrom; t < size.tokens; t++) {
            plan.add(t);
        }
        long t0 = System.nanoTime();
        sel.select(q, plan);
        cell.nanos.add(System.nanoTime() - t0);
        int perGroup = heads.kvHeads / groups.count;
        int[][] sets = new int[groups.count][];
        for (int g = 0; g < groups.count; g++) {
            long bits = io.kvoffload.internal.storage.HeadShards.groupBits(g, perGroup);
            boolean[] seen = new boolean[size.tokens];
            int[] set = new int[plan.size()];
            int n = 0;
            for (int i = 0; i < plan.size(); i++) {
                int p = plan.position(i);
                if (!seen[p] && (plan.kvHeadMask(i) & bits) != 0) {
                    seen[p] = true;
                    set[n++] = p;
                }
            }
            sets[g] = Arrays.copyOf(set, n);
        }
        return sets;
    }

    /**
     * Bytes the SSD reads for {@code set} in the positional layout: sinks and window are DRAM rows;
     * every 4 KiB page of a block extent that holds part of a selected entry is read once, as the
     * pipeline's reads do (entries that share an aligned block are one read, {@code BucketScheduler}).
     */
    long readBytes(int[] set, long entryBytes) {
        int[] s = set.clone();
        Arrays.sort(s);
        int windowFrom = local.windowFrom(size.tokens);
        long pages = 0;
        int lastBlock = -1;
        long lastPage = -1; // the highest page of lastBlock counted so far
        for (int p : s) {
            if (p < local.sinks || p >= windowFrom) {
                continue;
            }
            int blockNo = p / block;
            long from = (long) (p - blockNo * block) * entryBytes;
            long first = from / 4096, last = (from + entryBytes - 1) / 4096;
            if (blockNo != lastBlock) {
                lastBlock = blockNo;
                lastPage = -1;
            }
            if (last > lastPage) {
                pages += last - Math.max(first, lastPage + 1) + 1;
                lastPage = last;
            }
        }
        return pages * 4096;
    }

    private static void print(PrintWriter out, Cell[] cells, double samples) {
        Cell oracle = Arrays.stream(cells).filter(c -> c.name.equals("oracle")).findFirst().orElse(null);
        out.println();
        out.println("| strategy | mass recall | × oracle | output rel. error | × oracle | rows/step | KiB read/step | × oracle"
                + " | select µs (median) |");
        out.println("|---|---|---|---|---|---|---|---|---|");
        for (Cell c : cells) {
            out.printf(Locale.ROOT, "| %s | %.4f | %s | %.4f | %s | %.0f | %.0f | %s | %.0f |%n", c.name, c.mass / samples,
                    ratio(c.mass, oracle == null ? 0 : oracle.mass), c.error / samples,
                    ratio(c.error, oracle == null ? 0 : oracle.error), c.rows / samples, c.bytes / samples / 1024,
                    ratio(c.bytes, oracle == null ? 0 : oracle.bytes), c.medianMicros());
        }
        out.println();
        // A few steps a layer run mostly interpreted or half-compiled code: far from a warmed-up step.
        out.println("select µs: each step's selection in this run (the layer opened beforehand, untimed), without a "
                + "JIT warm-up; a warmed-up step's time: ./kvo jmh BlockMassSelectionBench");
        out.flush();
    }

    private static String ratio(double a, double b) {
        return b > 0 ? String.format(Locale.ROOT, "%.3f", a / b) : "–";
    }
}
