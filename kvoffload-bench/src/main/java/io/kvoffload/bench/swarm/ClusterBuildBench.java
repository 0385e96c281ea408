package io.kvoffload.bench.swarm;

import io.kvoffload.KvShape;
import io.kvoffload.attention.ExactAttention;
import io.kvoffload.attention.QualityMetrics;
import io.kvoffload.bench.cli.HeadOptions;
import io.kvoffload.bench.cli.ProfileStepOptions;
import io.kvoffload.internal.swarm.ClusterPlacement;
import io.kvoffload.internal.swarm.Clustering;
import io.kvoffload.internal.swarm.ClusteringConfig;
import io.kvoffload.internal.swarm.ClusteringStats;
import io.kvoffload.internal.swarm.CoActivationClustering;
import io.kvoffload.internal.swarm.CoActivationNormaliser;
import io.kvoffload.internal.swarm.CoActivationProfile;
import io.kvoffload.internal.swarm.MedoidIndex;
import io.kvoffload.internal.util.TopK;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.foreign.Arena;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.function.Function;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Measures Swarm's offline phase on the synthetic workload: for each context length, the time and
 * memory of profiling, clustering (Algorithm 1), the medoid index and the placement of one layer; for
 * the smaller lengths also cluster quality against k-means on keys, on held-out decoding queries.
 * Prints markdown tables (docs/swarm-offline.md holds a measured run).
 */
@Command(name = "cluster-build", mixinStandardHelpOptions = true,
        description = "Swarm offline phase on one synthetic layer per size: co-activation profiling, Algorithm 1 "
                + "clustering, medoid index and Eq. 7 placement (time and memory), and cluster quality against "
                + "k-means on keys. Prints markdown tables.")
public final class ClusterBuildBench implements Callable<Integer> {

    @Option(names = "--sizes", split = ",", defaultValue = "32768,131072,524288,1048576",
            description = "Tokens per layer to measure (default: ${DEFAULT-VALUE}).")
    int[] sizes;

    @Option(names = "--quality-max-tokens", defaultValue = "131072",
            description = "Compare with k-means only up to this many tokens (default: ${DEFAULT-VALUE}).")
    int qualityMaxTokens;

    @Mixin
    ProfileStepOptions schedule = new ProfileStepOptions();

    @Mixin
    ProfileOptions profiling = new ProfileOptions(16);

    @Mixin
    ClusteringOptions clusteringOptions = new ClusteringOptions();

    @Option(names = "--disks", defaultValue = "4", description = "SSDs for the placement (default: ${DEFAULT-VALUE}).")
    int disks;

    @Option(names = "--budget", defaultValue = "0.1",
            description = "Entries fetched per query for the recall column, as a share of the layer (default: ${DEFAULT-VALUE}).")
    double budget;

    @Option(names = "--kmeans-iterations", defaultValue = "6", description = "Lloyd iterations per level (default: ${DEFAULT-VALUE}).")
    int kmeansIterations;

    @Mixin
    HeadOptions heads = new HeadOptions(4, 1, 128);

    private final List<String> buildRows = new ArrayList<>();
    private final List<String> memoryRows = new ArrayList<>();
    private final List<String> qualityRows = new ArrayList<>();

    public static void main(String[] args) {
        System.exit(new CommandLine(new ClusterBuildBench()).execute(args));
    }

    @Override
    public Integer call() {
        int t = schedule.threads();
        KvShape shape = heads.shape(1);
        ClusteringConfig config = clusteringOptions.config(t);
        System.out.printf(Locale.ROOT, "cluster-build: %s, %d profiled queries (every %d steps), sparsity %.2f, "
                        + "tau %.3f, cap %d, replicas %d, blocks of %d, %d disks, %d threads, seed %d, %s%n%n",
                shape.fingerprint(), profiling.queries, schedule.profileStride, profiling.sparsity, clusteringOptions.tau,
                clusteringOptions.maxClusterSize, clusteringOptions.maxReplicas, clusteringOptions.block,
                disks, t, profiling.seed, Runtime.version());
        for (int n : sizes) {
            measure(shape, n, config, t);
        }
        System.out.println("### Build time per layer\n");
        System.out.println("| tokens | keys gen s | profile s | τ | T | frequent | pairs ≤ τ | co-act. clusters | isolated blocks "
                + "| mean size | replication | storage overhead | graph ms | expansion ms | **cluster build ms** "
                + "| index ms | placement ms |");
        System.out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        buildRows.forEach(System.out::println);
        System.out.println("\n### Memory per layer\n");
        System.out.println("| tokens | keys MiB (input) | profile MiB | graph MiB (transient) | clustering MiB "
                + "| medoid index MiB | **build peak heap MiB** |");
        System.out.println("|---:|---:|---:|---:|---:|---:|---:|");
        memoryRows.forEach(System.out::println);
        if (!qualityRows.isEmpty()) {
            System.out.println("\n### Cluster quality on " + profiling.evalQueries + " held-out decoding queries\n");
            System.out.println("| tokens | method | clusters | mean size | replication | build s | member–medoid distance ↓ "
                    + "| co-activation mass captured ↑ | attention recall @ " + Math.round(budget * 100) + "% ↑ | fetched |");
            System.out.println("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|");
            qualityRows.forEach(System.out::println);
        }
        return 0;
    }

    private void measure(KvShape shape, int n, ClusteringConfig config, int t) {
        WorkloadSpec spec = WorkloadSpec.builder(shape, n).seed(profiling.seed).build();
        SyntheticWorkload w = new SyntheticWorkload(spec);
        long t0 = System.nanoTime();
        DenseLayerKv kv = DenseLayerKv.materialize(w.layer(0), false);
        long t1 = System.nanoTime();
        BitSet pinned = new BitSet(n); // what the engine keeps in DRAM anyway: sinks and the local window
        pinned.set(0, Math.min(n, spec.sinkTokens()));
        pinned.set(Math.max(0, n - spec.localWindow()), n);
        List<float[]> profiled = schedule.queries(w, 0, profiling.queries);
        CoActivationProfile profile = CoActivationProfile.fromQueries(kv, profiled, heads.queryHeads, profiling.sparsity, pinned,
                CoActivationNormaliser.perQuery(), t);
        long t2 = System.nanoTime();

        System.gc();
        long baseline = heapUsed();
        resetPeaks();
        long b0 = System.nanoTime();
        Clustering clustering = new CoActivationClustering(config).cluster(profile);
        long b1 = System.nanoTime();
        ClusterPlacement placement = ClusterPlacement.of(clustering, disks);
        long b2 = System.nanoTime();
        try (Arena arena = Arena.ofConfined()) {
            MedoidIndex index = MedoidIndex.build(clustering, kv, heads.queryHeads, arena);
            long b3 = System.nanoTime();
            long peak = heapPeak() - baseline;
            ClusteringStats s = clustering.stats();
            buildRows.add(String.format(Locale.ROOT,
                    "| %,d | %.2f | %.2f | %.3f | %d | %,d | %,d | %,d | %,d | %.1f | %.3f | %.1f%% | %.0f | %.0f | **%.0f** | %.0f | %.1f |",
                    n, sec(t1 - t0), sec(t2 - t1), s.tau(), s.pairThreshold(), s.frequentEntries(), s.edges(),
                    s.coActivationClusters(), s.isolatedClusters(), s.meanClusterSize(), s.replicationFactor(),
                    100 * s.storageOverhead(), ms(s.graphNanos()), ms(s.expansionNanos()), ms(b1 - b0), ms(b3 - b2),
                    ms(b2 - b1)));
            memoryRows.add(String.format(Locale.ROOT, "| %,d | %.1f | %.1f | %.1f | %.1f | %.2f | **%.1f** |", n,
                    mib(4L * n * heads.kvHeads * heads.headDim), mib(profile.memoryBytes()), mib(s.graphBytes()),
                    mib(clustering.memoryBytes()), mib(index.memoryBytes()), mib(peak)));
            if (placement.clusterCount() != clustering.clusterCount()) {
                throw new IllegalStateException("placement lost clusters");
            }
            if (n <= qualityMaxTokens) {
                quality(w, kv, pinned, profile, clustering, index, b1 - b0, t);
            }
        }
    }

    private void quality(SyntheticWorkload w, DenseLayerKv kv, BitSet pinned, CoActivationProfile profile,
            Clustering clustering, MedoidIndex index, long swarmNanos, int t) {
        int n = kv.tokens();
        ExactAttention attention = new ExactAttention(heads.queryHeads, heads.kvHeads, heads.headDim);
        int firstEval = schedule.firstScored(profiling.queries);
        List<float[]> queries = new ArrayList<>();
        List<float[]> weights = new ArrayList<>();
        List<int[]> sets = new ArrayList<>();
        int eligible = n - pinned.cardinality();
        int k = (int) Math.ceil(profiling.sparsity * eligible);
        for (int i = 0; i < profiling.evalQueries; i++) {
            float[] q = w.query(0, firstEval + i);
            float[] wt = attention.weights(kv, q);
            float[] masked = wt.clone();
            for (int e = pinned.nextSetBit(0); e >= 0; e = pinned.nextSetBit(e + 1)) {
                masked[e] = Float.NEGATIVE_INFINITY;
            }
            queries.add(q);
            weights.add(wt);
            sets.add(TopK.indices(masked, k));
        }
        CoActivationProfile eval = CoActivationProfile.fromActivationSets(n, sets, CoActivationNormaliser.perQuery());
        List<int[]> cores = new ArrayList<>();
        for (float[] wt : weights) {
            float[] masked = wt.clone();
            for (int e = pinned.nextSetBit(0); e >= 0; e = pinned.nextSetBit(e + 1)) {
                masked[e] = Float.NEGATIVE_INFINITY;
            }
            cores.add(TopK.indices(masked, Math.max(2, eligible / 100)));
        }
        int budgetEntries = (int) Math.round(budget * n);

        ClusterSet swarm = ClusterSet.of("Swarm (Algorithm 1)", clustering);
        float[] scores = new float[clustering.clusterCount()];
        double swarmRecall = 0;
        long swarmFetched = 0;
        for (int i = 0; i < profiling.evalQueries; i++) {
            index.score(queries.get(i), scores);
            ClusterQuality.Selection sel = ClusterQuality.select(swarm, scores, weights.get(i), budgetEntries, pinned);
            swarmRecall += sel.recall();
            swarmFetched += sel.fetched();
        }
        addQuality(n, swarm, clustering.stats().replicationFactor(), sec(swarmNanos),
                ClusterQuality.meanMedoidDistance(swarm, eval), captured(swarm, cores),
                swarmRecall / profiling.evalQueries, swarmFetched / profiling.evalQueries);

        int dim = heads.kvHeads * heads.headDim;
        float[] data = new float[n * dim]; // entry-major: all KV heads of one token together
        for (int e = 0; e < n; e++) {
            for (int h = 0; h < heads.kvHeads; h++) {
                System.arraycopy(kv.keyArray(h), e * heads.headDim, data, e * dim + h * heads.headDim, heads.headDim);
            }
        }
        long k0 = System.nanoTime();
        KMeansClustering km = KMeansClustering.fit(data, n, dim, clustering.clusterCount(), kmeansIterations, profiling.seed);
        long k1 = System.nanoTime();
        ClusterSet kmeans = ClusterSet.of("k-means on keys", n, km.members, km.medoids);
        double kmRecall = 0;
        long kmFetched = 0;
        float[] kmScores = new float[km.centroids.length];
        int group = heads.queryHeads / heads.kvHeads;
        float scale = (float) (1 / Math.sqrt(heads.headDim));
        for (int i = 0; i < profiling.evalQueries; i++) {
            float[] q = queries.get(i);
            float[] summed = new float[dim]; // GQA: query heads of one KV head summed, as the medoid index does
            for (int h = 0; h < heads.queryHeads; h++) {
                for (int d = 0; d < heads.headDim; d++) {
                    summed[(h / group) * heads.headDim + d] += q[h * heads.headDim + d];
                }
            }
            for (int c = 0; c < km.centroids.length; c++) {
                float s = 0;
                for (int d = 0; d < dim; d++) {
                    s += summed[d] * km.centroids[c][d];
                }
                kmScores[c] = scale * s;
            }
            ClusterQuality.Selection sel = ClusterQuality.select(kmeans, kmScores, weights.get(i), budgetEntries, pinned);
            kmRecall += sel.recall();
            kmFetched += sel.fetched();
        }
        addQuality(n, kmeans, 1.0, sec(k1 - k0), ClusterQuality.meanMedoidDistance(kmeans, eval),
                captured(kmeans, cores), kmRecall / profiling.evalQueries, kmFetched / profiling.evalQueries);

        double oracle = 0;
        for (int i = 0; i < profiling.evalQueries; i++) {
            BitSet chosen = new BitSet(n);
            for (int e : sets.get(i)) {
                chosen.set(e);
            }
            chosen.or(pinned);
            oracle += QualityMetrics.attentionMassRecall(weights.get(i), chosen.stream().toArray());
        }
        qualityRows.add(String.format(Locale.ROOT, "| %,d | exact top-%d%% (oracle, no clusters) | – | – | – | – | – | – | %.3f | %,d |",
                n, Math.round(profiling.sparsity * 100), oracle / profiling.evalQueries, k));
    }

    private static double captured(ClusterSet cs, List<int[]> cores) {
        double sum = 0;
        for (int[] core : cores) {
            sum += ClusterQuality.pairsCaptured(cs, core);
        }
        return sum / cores.size();
    }

    private void addQuality(int n, ClusterSet cs, double replication, double buildSec, double distance, double mass,
            double recall, long fetched) {
        qualityRows.add(String.format(Locale.ROOT, "| %,d | %s | %,d | %.1f | %.3f | %.2f | %.3f | %.3f | %.3f | %,d |", n,
                cs.name(), cs.members().length, cs.memberships() / (double) cs.members().length, replication, buildSec,
                distance, mass, recall, fetched));
    }

    private static long heapUsed() {
        return heapSum(MemoryPoolMXBean::getUsage);
    }

    private static void resetPeaks() {
        for (MemoryPoolMXBean p : heapPools()) {
            p.resetPeakUsage();
        }
    }

    private static long heapPeak() {
        return heapSum(MemoryPoolMXBean::getPeakUsage);
    }

    /** Bytes used over the heap's pools, by {@code usage} (now, or the peak since {@link #resetPeaks}). */
    private static long heapSum(Function<MemoryPoolMXBean, MemoryUsage> usage) {
        long sum = 0;
        for (MemoryPoolMXBean p : heapPools()) {
            sum += usage.apply(p).getUsed();
        }
        return sum;
    }

    private static List<MemoryPoolMXBean> heapPools() {
        return ManagementFactory.getMemoryPoolMXBeans().stream().filter(p -> p.getType() == MemoryType.HEAP).toList();
    }

    private static double sec(long nanos) {
        return nanos / 1e9;
    }

    private static double ms(long nanos) {
        return nanos / 1e6;
    }

    private static double mib(long bytes) {
        return bytes / (1024.0 * 1024.0);
    }
}
