package io.kvoffload.bench.compare;

import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.attention.ExactAttention;
import io.kvoffload.bench.TempDirs;
import io.kvoffload.bench.compare.IoStrategies.Layout;
import io.kvoffload.bench.compare.IoStrategies.Strategy;
import io.kvoffload.internal.select.TokenSelector;
import io.kvoffload.internal.sequence.UnitLayouts;
import io.kvoffload.internal.swarm.Clustering;
import io.kvoffload.internal.swarm.ClusteringConfig;
import io.kvoffload.internal.swarm.CoActivationClustering;
import io.kvoffload.internal.swarm.CoActivationCoverage;
import io.kvoffload.internal.swarm.CoActivationNormaliser;
import io.kvoffload.internal.swarm.CoActivationProfile;
import io.kvoffload.internal.swarm.ExpansionRule;
import io.kvoffload.internal.util.ElementCodec;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.strategy.kvswap.KvSwap;
import io.kvoffload.strategy.swarm.ClusterOptions;
import io.kvoffload.strategy.swarm.ClusterSummary;
import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.workload.Workload;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * One prefix length of {@code kvo bench compare}: the KV (stored bytes and the dense reference),
 * the in-memory selectors, the clusterings, and an engine holding every chosen layout. Reads the
 * run's settings from its {@link CompareCommand}.
 */
final class CompareFixture implements AutoCloseable {
    private final CompareCommand cmd;
    final int n;
    final Workload workload;
    /** Whether the queries are a trace's few (profile from the first half, score the second) rather than a generator's. */
    final boolean finiteQueries;
    final Map<Layout, Double> coActivationShare = new EnumMap<>(Layout.class);
    final Arena arena = Arena.ofShared();
    final MemorySegment[] keys;
    final MemorySegment[] values;
    final DenseLayerKv[] dense;
    final int firstScored;
    final ExactAttention attention;
    final ExactAttention.Result[][] exact;
    /** Per-query-head exact weights, computed for the steps a per-head view is scored at. */
    private final float[][][][] headWeights;
    final List<Map<String, TokenSelector>> selectors = new ArrayList<>();
    final Map<String, Long> indexBytes = new LinkedHashMap<>();
    final Map<Layout, int[][][]> clusters = new EnumMap<>(Layout.class);
    final Map<Layout, Long> medoidIndexBytes = new EnumMap<>(Layout.class);
    final Path root;
    List<Path> dirs;
    KvEngine engine;

    /** Each query head's exact attention weights at layer {@code l}, scored step {@code s}. */
    synchronized float[][] headWeights(int l, int s) {
        if (headWeights[l][s] == null) {
            headWeights[l][s] = attention.headWeights(dense[l], query(l, 0, s));
        }
        return headWeights[l][s];
    }

    CompareFixture(CompareCommand cmd, int n, List<Strategy> chosen) throws IOException {
        this.cmd = cmd;
        this.n = n;
        this.workload = cmd.source != null ? cmd.source : cmd.family.get().create(cmd.shape, n, cmd.seed);
        this.finiteQueries = workload.queryCount() < cmd.swarm.profileQueries * 4 + 20_000;
        this.firstScored = cmd.swarm.profileQueries * 4; // decoding continues after the profiled steps
        this.keys = new MemorySegment[cmd.layers];
        this.values = new MemorySegment[cmd.layers];
        this.dense = new DenseLayerKv[cmd.layers];
        this.attention = ExactAttention.of(cmd.shape);
        this.exact = new ExactAttention.Result[cmd.layers][cmd.steps];
        this.headWeights = new float[cmd.layers][cmd.steps][][];
        for (int l = 0; l < cmd.layers; l++) {
            keys[l] = arena.allocate((long) n * cmd.shape.halfEntryBytes(), 64);
            values[l] = arena.allocate((long) n * cmd.shape.halfEntryBytes(), 64);
            workload.writeKv(l, 0, n, cmd.shape.dtype(), keys[l], values[l]);
            // The reference reads the stored BF16 values, so only selection differs between strategies.
            dense[l] = decode(keys[l], values[l], n);
            for (int s = 0; s < cmd.steps; s++) {
                exact[l][s] = attention.compute(dense[l], query(l, 0, s));
            }
        }
        buildSelectors(chosen);
        buildClusterings(chosen);
        cmd.step();
        this.root = cmd.report.scratch("kvo-compare");
        this.dirs = TempDirs.ssdDirectories(root, cmd.devices);
        this.engine = cmd.open(dirs, null, chosen);
        store(engine, chosen);
        cmd.step();
    }

    /** Scored (and warm-up) query {@code offset + s}: after the profiled ones. */
    float[] query(int layer, int offset, int s) {
        if (finiteQueries) {
            int half = workload.queryCount() / 2;
            return workload.query(layer, half + (offset + s) % (workload.queryCount() - half));
        }
        return workload.query(layer, firstScored + offset + s);
    }

    /** Swarm's profiled queries. */
    List<float[]> profile(int layer) {
        List<float[]> profile = new ArrayList<>();
        if (finiteQueries) {
            int half = workload.queryCount() / 2;
            for (int i = 0; i < Math.min(cmd.swarm.profileQueries, half); i++) {
                profile.add(workload.query(layer, (int) ((long) i * half / Math.min(cmd.swarm.profileQueries, half))));
            }
        } else {
            for (int i = 0; i < cmd.swarm.profileQueries; i++) {
                profile.add(workload.query(layer, i * 4));
            }
        }
        return profile;
    }

    private DenseLayerKv decode(MemorySegment k, MemorySegment v, int tokens) {
        float[][] kf = new float[cmd.heads.kvHeads][tokens * cmd.heads.headDim];
        float[][] vf = new float[cmd.heads.kvHeads][tokens * cmd.heads.headDim];
        int es = cmd.shape.dtype().bytes();
        for (int t = 0; t < tokens; t++) {
            for (int h = 0; h < cmd.heads.kvHeads; h++) {
                long off = ((long) t * cmd.heads.kvHeads + h) * cmd.heads.headDim * es;
                ElementCodec.read(cmd.shape.dtype(), k, off, kf[h], t * cmd.heads.headDim, cmd.heads.headDim);
                ElementCodec.read(cmd.shape.dtype(), v, off, vf[h], t * cmd.heads.headDim, cmd.heads.headDim);
            }
        }
        return new DenseLayerKv(tokens, cmd.heads.headDim, kf, vf);
    }

    private void buildSelectors(List<Strategy> chosen) {
        for (int l = 0; l < cmd.layers; l++) {
            Map<String, TokenSelector> m = new LinkedHashMap<>();
            Strategies.Params p = new Strategies.Params(cmd.heads.queryHeads, cmd.local.window, cmd.seed + l, 0, cmd.local.sinks, List.of(), 0.1,
                    ClusteringConfig.defaults());
            for (Strategy s : chosen) {
                if (s.decoderSelects() || s.layout() == Layout.OWN) {
                    continue; // OWN: the index is measured over the stored layout (storeOwn)
                }
                if (!Strategies.ALL.contains(s.selector())) {
                    // A library strategy with no in-memory twin: its DRAM index is what its layer selector holds.
                    try (var layer = io.kvoffload.strategy.Strategies.named(s.selector()).openLayer(
                            new KeysContext(cmd.shape, l, dense[l], cmd.local.sinks, cmd.local.window))) {
                        indexBytes.merge(s.name(), layer.memoryBytes(), Long::sum);
                    }
                    continue;
                }
                TokenSelector sel = Strategies.build(s.selector(), dense[l], p, arena);
                m.put(s.name(), sel);
                indexBytes.merge(s.name(), sel.indexBytes(), Long::sum);
            }
            selectors.add(m);
        }
    }

    /** Adds one layer's co-activation share to the layout's mean over layers. */
    private void share(Layout layout, Clustering c) {
        coActivationShare.merge(layout, CoActivationCoverage.share(c) / cmd.layers, Double::sum);
    }

    private void buildClusterings(List<Strategy> chosen) {
        boolean any = chosen.stream().anyMatch(s -> s.decoderSelects() && s.layout() != Layout.KVSWAP_GROUPS);
        if (chosen.stream().anyMatch(s -> s.layout() == Layout.POSITIONAL)) {
            int[][][] pos = new int[cmd.layers][][];
            Arrays.fill(pos, CompareCommand.positional(n, cmd.group));
            clusters.put(Layout.POSITIONAL, pos);
        }
        if (!any) {
            return;
        }
        int threads = Runtime.getRuntime().availableProcessors();
        ClusteringConfig base = ClusteringConfig.defaults().withRadius(cmd.swarm.radius())
                .withParallelism(Math.min(256, threads));
        int[][][] swarm = new int[cmd.layers][][];
        int[][][] medoidOnly = new int[cmd.layers][][];
        int[][][] noReplica = new int[cmd.layers][][];
        for (int l = 0; l < cmd.layers; l++) {
            List<float[]> profile = profile(l);
            BitSet excluded = new BitSet(n);
            excluded.set(0, cmd.local.sinkEnd(n));
            excluded.set(Math.max(0, n - cmd.local.window), n);
            CoActivationProfile prof = CoActivationProfile.fromQueries(dense[l], profile, cmd.heads.queryHeads, 0.1, excluded,
                    CoActivationNormaliser.perQuery(), Math.min(256, threads));
            Clustering sw = new CoActivationClustering(base).cluster(prof);
            swarm[l] = CompareCommand.arrays(sw);
            share(Layout.SWARM, sw);
            share(Layout.NO_BALANCE, sw);
            if (chosen.stream().anyMatch(s -> s.layout() == Layout.MEDOID_ONLY)) {
                Clustering c = new CoActivationClustering(base.withExpansion(ExpansionRule.MEDOID_ONLY)).cluster(prof);
                medoidOnly[l] = CompareCommand.arrays(c);
                share(Layout.MEDOID_ONLY, c);
            }
            if (chosen.stream().anyMatch(s -> s.layout() == Layout.NO_REPLICA)) {
                Clustering c = new CoActivationClustering(base.withMaxReplicas(1)).cluster(prof);
                noReplica[l] = CompareCommand.arrays(c);
                share(Layout.NO_REPLICA, c);
            }
        }
        double swarmShare = coActivationShare.getOrDefault(Layout.SWARM, Double.NaN);
        cmd.console.printf(Locale.ROOT, "compare: %,d tokens: %.2f%% of tokens are in Swarm's co-activation clusters"
                + " (mean of %d layers, τ = %.2f)%s%n", n, 100 * swarmShare, cmd.layers, cmd.swarm.tau,
                swarmShare < ClusterSummary.LOW_CO_ACTIVATION_SHARE
                        ? " — WARNING: near zero, Swarm's index is in effect positional blocks" : "");
        cmd.console.flush();
        clusters.put(Layout.SWARM, swarm);
        clusters.put(Layout.NO_BALANCE, swarm);
        clusters.put(Layout.MEDOID_ONLY, medoidOnly);
        clusters.put(Layout.NO_REPLICA, noReplica);
    }

    /** Stores the layouts the chosen strategies read, one sequence each, every layer laid out by cluster. */
    void store(KvEngine e, List<Strategy> chosen) {
        int[] ids = new int[n];
        for (int t = 0; t < n; t++) {
            ids[t] = t % 32000;
        }
        for (Strategy own : chosen) {
            if (own.layout() == Layout.OWN) {
                storeOwn(e, own, ids);
            }
        }
        for (Layout layout : CompareCommand.layouts(chosen)) {
            if (layout == Layout.OWN) {
                continue;
            }
            ClusterOptions o = ClusterOptions.defaults().withRadius(cmd.swarm.tau).withPlacement(
                    layout == Layout.NO_BALANCE ? ClusterOptions.Placement.FIRST_DEVICE
                            : ClusterOptions.Placement.ROUND_ROBIN);
            long index = 0;
            try (KvSequence s = e.createSequence(layout.name().toLowerCase(Locale.ROOT), cmd.shape)) {
                s.appendTokens(ids);
                for (int l = 0; l < cmd.layers; l++) {
                    s.appendKv(l, keys[l], values[l]);
                    if (layout == Layout.KVSWAP_GROUPS) {
                        // The paper's NVMe setting: G = 4, σ = 8 (or --kvswap-rank); the compressed K cache is its index.
                        index += KvSwap.groupLayer(s, l, cmd.store.kvswap()).compressedKeyBytes();
                        continue;
                    }
                    if (layout == Layout.POSITIONAL) {
                        // The plug-in strategies' default page layout (SelectionStrategy.layOut), as the library writes it.
                        UnitLayouts.write(s, l, clusters.get(layout)[l]);
                        continue;
                    }
                    ClusterSummary sum = Swarm.clusterLayer(s, l, clusters.get(layout)[l], o);
                    index += sum.medoidIndexBytes() + sum.layoutBytes();
                }
                s.commit();
            }
            medoidIndexBytes.put(layout, index);
        }
    }

    /**
     * Stores one sequence laid out by {@code s}'s own offline phase, and measures the DRAM its layer
     * selectors hold over that layout (for SparF: the unit tables and per-step scratch, not K).
     */
    private void storeOwn(KvEngine e, Strategy s, int[] ids) {
        io.kvoffload.strategy.SelectionStrategy strategy = io.kvoffload.strategy.Strategies.named(s.selector());
        try (KvSequence seq = e.createSequence(s.sequenceId(), cmd.shape)) {
            seq.appendTokens(ids);
            for (int l = 0; l < cmd.layers; l++) {
                seq.appendKv(l, keys[l], values[l]);
                strategy.layOut(seq, l);
            }
            seq.commit();
            for (int l = 0; l < cmd.layers; l++) {
                var u = io.kvoffload.internal.sequence.SequenceAccess.of(seq).ledger().layer(l).units();
                var stored = u == null ? null : new io.kvoffload.strategy.StoredUnits(u.owner(), u.version(),
                        u.params(), u.unitCount(), u.unitBytes(), u.memoryBytes());
                try (var layer = strategy.openLayer(new KeysContext(cmd.shape, l, dense[l], cmd.local.sinks, cmd.local.window,
                        stored))) {
                    indexBytes.merge(s.name(), layer.memoryBytes(), Long::sum);
                }
            }
        }
    }

    @Override
    public void close() throws IOException {
        try {
            if (engine != null) {
                engine.close();
            }
        } finally {
            arena.close();
            TempDirs.deleteRecursively(root);
        }
    }
}
