package io.kvoffload.bench.swarm;

import io.kvoffload.KvShape;
import io.kvoffload.attention.ExactAttention;
import io.kvoffload.bench.cli.HeadOptions;
import io.kvoffload.internal.swarm.Clustering;
import io.kvoffload.internal.swarm.ClusteringConfig;
import io.kvoffload.internal.swarm.CoActivationClustering;
import io.kvoffload.internal.swarm.CoActivationNormaliser;
import io.kvoffload.internal.swarm.CoActivationProfile;
import io.kvoffload.internal.swarm.MaintenancePolicy;
import io.kvoffload.internal.swarm.OnlineClusterMaintenance;
import io.kvoffload.internal.util.TopK;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.function.IntPredicate;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Swarm Table 5 on the synthetic workload: how well clusters keep their shape while decoding appends
 * tokens, under online maintenance (Eq. 9) and the two comparison policies Min-Size and Min-Diff.
 *
 * <p>Timeline (one layer): tokens {@code [0, P − W)} are clustered offline (Algorithm 1 on a
 * co-activation profile); tokens {@code [P − W, P)} are the local window when decoding starts. Decoding
 * step {@code j} admits token {@code P − W + j} and, once the window is full, evicts the oldest one,
 * which maintenance assigns. Every step's activation is the exact top-k (sinks aside) over the
 * tokens generated so far; a window token is activated when it is in it, a cluster when its medoid is
 * (the co-activation Eq. 9 counts; a deployed decoder feeds its medoid index's selection instead).
 * All three policies see the same steps. After {@code n} tokens have left the window, the normalised
 * cluster distance is Table 5's "average distance between cluster entries and their medoid,
 * normalised by the initial distance calculated offline", with distances from a profile of held-out
 * queries over the whole context.
 */
@Command(name = "cluster-drift", mixinStandardHelpOptions = true,
        description = "Swarm Table 5: normalised cluster distance after N decoding steps of online cluster maintenance "
                + "(Eq. 9) against Min-Size and Min-Diff, on one synthetic layer. Prints markdown tables.")
public final class ClusterDriftBench implements Callable<Integer> {

    @Option(names = "--tokens", defaultValue = "32768", description = "Context length P when decoding starts (default: ${DEFAULT-VALUE}).")
    int prefix;

    @Option(names = "--steps", split = ",", defaultValue = "1,10,100,1000",
            description = "Decoding steps (tokens that left the window) to report (default: ${DEFAULT-VALUE}).")
    int[] report;

    @Option(names = "--window", defaultValue = "256", description = "Local window W (default: ${DEFAULT-VALUE}).")
    int window;

    @Mixin
    ProfileOptions profiling = new ProfileOptions(32);

    @Mixin
    ClusteringOptions clusteringOptions = new ClusteringOptions();

    @Mixin
    HeadOptions heads = new HeadOptions(4, 1, 128);

    public static void main(String[] args) {
        System.exit(new CommandLine(new ClusterDriftBench()).execute(args));
    }

    /** One policy's run: the maintenance and the memberships it appended. */
    private static final class Track {
        final String name;
        final OnlineClusterMaintenance om;
        final List<int[]> appended = new ArrayList<>(); // (cluster, token) pairs
        int[] clusterOfMedoid;
        long joins;
        int created;
        long nanos;
        final double[] all;
        final double[] coAct;

        Track(String name, OnlineClusterMaintenance om, int tokens, Clustering offline, int reports) {
            this.name = name;
            this.om = om;
            clusterOfMedoid = new int[tokens];
            Arrays.fill(clusterOfMedoid, -1);
            for (int c = 0; c < offline.clusterCount(); c++) {
                clusterOfMedoid[offline.medoid(c)] = c;
            }
            all = new double[reports];
            coAct = new double[reports];
        }
    }

    @Override
    public Integer call() {
        if (report.length == 0) {
            throw new IllegalArgumentException("--steps names no step count; allowed: at least one");
        }
        int maxSteps = Arrays.stream(report).max().getAsInt();
        if (Arrays.stream(report).min().getAsInt() < 1) {
            throw new IllegalArgumentException("--steps must be at least 1");
        }
        if (window < 1 || window >= prefix) {
            throw new IllegalArgumentException("--window = " + window + " is out of range; allowed: 1.." + (prefix - 1));
        }
        long t0 = System.nanoTime();
        KvShape shape = heads.shape(1);
        int total = prefix + maxSteps; // every token decoding will generate exists in the workload
        WorkloadSpec spec = WorkloadSpec.builder(shape, total).seed(profiling.seed).build();
        SyntheticWorkload w = new SyntheticWorkload(spec);
        DenseLayerKv kv = DenseLayerKv.materialize(w.layer(0), false);
        ExactAttention attention = new ExactAttention(heads.queryHeads, heads.kvHeads, heads.headDim);
        int sinks = Math.min(spec.sinkTokens(), prefix - window);
        int offline = prefix - window;

        // Offline phase: profile the first queries over the clustered prefix, then Algorithm 1.
        List<int[]> profileSets = new ArrayList<>();
        for (int i = 0; i < profiling.queries; i++) {
            profileSets.add(activated(attention, kv, w.query(0, i), sinks, offline));
        }
        CoActivationProfile profile = CoActivationProfile.fromActivationSets(offline, profileSets,
                CoActivationNormaliser.perQuery());
        ClusteringConfig config = clusteringOptions.config(Runtime.getRuntime().availableProcessors());
        Clustering clustering = new CoActivationClustering(config).cluster(profile);
        int coActivation = clustering.coActivationClusters();
        int maxActivated = (int) Math.ceil(profiling.sparsity * total) + 1; // medoids in one top-k, at most

        // The key difference Min-Diff uses: L2 over all KV heads.
        float[][] keys = new float[heads.kvHeads][];
        for (int h = 0; h < heads.kvHeads; h++) {
            keys[h] = kv.keyArray(h);
        }
        OnlineClusterMaintenance.KeyDifference l2 = (a, b) -> {
            double s = 0;
            for (int h = 0; h < heads.kvHeads; h++) {
                float[] k = keys[h];
                int ia = a * heads.headDim, ib = b * heads.headDim;
                for (int d = 0; d < heads.headDim; d++) {
                    double x = k[ia + d] - k[ib + d];
                    s += x * x;
                }
            }
            return Math.sqrt(s);
        };
        List<Track> tracks = new ArrayList<>();
        tracks.add(new Track("Swarm (Eq. 9)", OnlineClusterMaintenance.of(clustering, MaintenancePolicy.SWARM, window,
                maxActivated, clusteringOptions.maxReplicas, null), total, clustering, report.length));
        tracks.add(new Track("Min-Size", OnlineClusterMaintenance.of(clustering, MaintenancePolicy.MIN_SIZE, window,
                maxActivated, clusteringOptions.maxReplicas, null), total, clustering, report.length));
        tracks.add(new Track("Min-Diff (key L2)", OnlineClusterMaintenance.of(clustering, MaintenancePolicy.MIN_DIFF,
                window, maxActivated, clusteringOptions.maxReplicas, l2), total, clustering, report.length));

        // Held-out evaluation profile over the whole final context.
        int firstEval = profiling.queries + window + maxSteps;
        List<int[]> evalSets = new ArrayList<>();
        for (int i = 0; i < profiling.evalQueries; i++) {
            evalSets.add(activated(attention, kv, w.query(0, firstEval + i), sinks, total));
        }
        CoActivationProfile eval = CoActivationProfile.fromActivationSets(total, evalSets, CoActivationNormaliser.perQuery());
        int[] offOffsets = clustering.memberOffsets();
        int[] offMembers = clustering.allMembers();
        int[] offMedoids = clustering.medoids();
        double d0All = OnlineClusterMaintenance.meanMedoidDistance(offOffsets, offMembers, offMedoids, eval, null);
        IntPredicate coActOffline = c -> c < coActivation;
        double d0Co = OnlineClusterMaintenance.meanMedoidDistance(offOffsets, offMembers, offMedoids, eval, coActOffline);
        long t1 = System.nanoTime();

        // Decoding.
        int[] clusterBuf = new int[maxActivated];
        int[] windowBuf = new int[window];
        int next = 0;
        for (int j = 0; j < window + maxSteps; j++) {
            int token = offline + j;
            int evicted = j - window; // tokens that have left the window after this step's eviction
            if (evicted >= 0) {
                for (Track t : tracks) {
                    long s0 = System.nanoTime();
                    int n = t.om.evict(token - window);
                    t.nanos += System.nanoTime() - s0;
                    t.joins += n;
                    for (int i = 0; i < n; i++) {
                        t.appended.add(new int[] {t.om.lastCluster(i), token - window});
                    }
                    if (t.om.lastCreatedCluster()) {
                        t.created++;
                        t.clusterOfMedoid[token - window] = t.om.lastCluster(0);
                    }
                    t.om.drainAssignments(); // a decoder would write them (ClusterLayoutWriter.append) every block
                }
                if (next < report.length && evicted + 1 == sortedReport()[next]) {
                    for (Track t : tracks) {
                        measure(t, next, clustering, eval);
                    }
                    next++;
                }
            }
            for (Track t : tracks) {
                t.om.admit(token);
            }
            if (evicted + 1 >= maxSteps) {
                break; // the last report needs no further step
            }
            int[] top = activated(attention, kv, w.query(0, profiling.queries + j), sinks, token + 1);
            int nw = 0;
            for (int e : top) {
                if (e > token - window && e >= offline && e <= token) { // admitted, not yet evicted
                    windowBuf[nw++] = e;
                }
            }
            for (Track t : tracks) {
                int na = 0;
                for (int e : top) {
                    int c = t.clusterOfMedoid[e];
                    if (c >= 0) {
                        clusterBuf[na++] = c;
                    }
                }
                long s0 = System.nanoTime();
                t.om.observeStep(clusterBuf, na, windowBuf, nw);
                t.nanos += System.nanoTime() - s0;
            }
        }
        long t2 = System.nanoTime();

        System.out.printf(Locale.ROOT, "cluster-drift: %s, P = %,d tokens (%,d clustered offline), W = %d, %d profiled and "
                        + "%d held-out queries, top %.0f%%, tau %.2f, cap %d, replicas %d, blocks of %d, seed %d, %s%n%n",
                shape.fingerprint(), prefix, offline, window, profiling.queries, profiling.evalQueries, 100 * profiling.sparsity,
                clusteringOptions.tau, clusteringOptions.maxClusterSize, clusteringOptions.maxReplicas,
                clusteringOptions.block, profiling.seed, Runtime.version());
        System.out.printf(Locale.ROOT, "offline: %,d clusters (%,d co-activation, %,d positional blocks); member–medoid "
                        + "distance on held-out queries %.4f over all clusters, %.4f over co-activation clusters%n%n",
                clustering.clusterCount(), coActivation, clustering.clusterCount() - coActivation, d0All, d0Co);
        int[] steps = sortedReport();
        System.out.println("### Normalised cluster distance (Table 5), co-activation clusters\n");
        header(steps);
        for (Track t : tracks) {
            row(t.name, t.coAct, d0Co, steps.length);
        }
        System.out.println("\n### Normalised cluster distance, all clusters (positional blocks included)\n");
        header(steps);
        for (Track t : tracks) {
            row(t.name, t.all, d0All, steps.length);
        }
        System.out.println("\n### Assignments after " + maxSteps + " steps\n");
        System.out.println("| policy | tokens | clusters joined per token | new clusters | maintenance µs per step |");
        System.out.println("|---|---:|---:|---:|---:|");
        for (Track t : tracks) {
            System.out.printf(Locale.ROOT, "| %s | %,d | %.3f | %,d | %.1f |%n", t.name, maxSteps,
                    t.joins / (double) maxSteps, t.created, t.nanos / 1e3 / (window + maxSteps));
        }
        System.out.printf(Locale.ROOT, "%nset-up %.1f s, decoding %.1f s%n", (t1 - t0) / 1e9, (t2 - t1) / 1e9);
        return 0;
    }

    private int[] sortedReport() {
        int[] s = report.clone();
        Arrays.sort(s);
        return s;
    }

    private static void header(int[] steps) {
        StringBuilder h = new StringBuilder("| policy |");
        StringBuilder a = new StringBuilder("|---|");
        for (int s : steps) {
            h.append(String.format(Locale.ROOT, " %,d |", s));
            a.append("---:|");
        }
        System.out.println(h);
        System.out.println(a);
    }

    private static void row(String name, double[] values, double base, int n) {
        StringBuilder r = new StringBuilder("| " + name + " |");
        for (int i = 0; i < n; i++) {
            r.append(String.format(Locale.ROOT, " %.4f |", values[i] / base));
        }
        System.out.println(r);
    }

    /** The track's clusters now (offline members plus appended ones) under the evaluation profile. */
    private static void measure(Track t, int at, Clustering offline, CoActivationProfile eval) {
        int clusters = t.om.clusterCount();
        int[] sizes = new int[clusters];
        for (int c = 0; c < offline.clusterCount(); c++) {
            sizes[c] = offline.size(c);
        }
        for (int[] p : t.appended) {
            sizes[p[0]]++;
        }
        int[] offsets = new int[clusters + 1];
        for (int c = 0; c < clusters; c++) {
            offsets[c + 1] = offsets[c] + sizes[c];
        }
        int[] members = new int[offsets[clusters]];
        int[] fill = Arrays.copyOf(offsets, clusters);
        for (int c = 0; c < offline.clusterCount(); c++) {
            for (int i = 0; i < offline.size(c); i++) {
                members[fill[c]++] = offline.member(c, i);
            }
        }
        for (int[] p : t.appended) {
            members[fill[p[0]]++] = p[1];
        }
        int[] medoids = new int[clusters];
        for (int c = 0; c < clusters; c++) {
            medoids[c] = t.om.medoid(c);
        }
        int coAct = offline.coActivationClusters();
        int offlineClusters = offline.clusterCount();
        t.all[at] = OnlineClusterMaintenance.meanMedoidDistance(offsets, members, medoids, eval, null);
        // Co-activation clusters: Algorithm 1's and those created online (grown by Eq. 9 the same way).
        t.coAct[at] = OnlineClusterMaintenance.meanMedoidDistance(offsets, members, medoids, eval,
                c -> c < coAct || c >= offlineClusters);
    }

    /** Exact top-k of a query over tokens {@code [0, limit)}, sinks aside. */
    private int[] activated(ExactAttention attention, DenseLayerKv kv, float[] query, int sinks, int limit) {
        float[] wt = attention.weights(kv, query);
        for (int e = 0; e < sinks; e++) {
            wt[e] = Float.NEGATIVE_INFINITY;
        }
        for (int e = limit; e < wt.length; e++) {
            wt[e] = Float.NEGATIVE_INFINITY;
        }
        int k = (int) Math.ceil(profiling.sparsity * (limit - sinks));
        return TopK.indices(wt, k);
    }
}
