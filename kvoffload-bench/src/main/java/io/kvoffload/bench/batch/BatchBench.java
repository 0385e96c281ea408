package io.kvoffload.bench.batch;

import io.kvoffload.DType;
import io.kvoffload.DecodeOptions;
import io.kvoffload.DecodeStats;
import io.kvoffload.KvBatch;
import io.kvoffload.KvConfig;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.bench.ClusteredSequences;
import io.kvoffload.bench.TempDirs;
import io.kvoffload.bench.cli.FioRoundsOptions;
import io.kvoffload.bench.cli.ScratchDeviceOptions;
import io.kvoffload.bench.cli.WorkloadOptions;
import io.kvoffload.bench.fio.Fio;
import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Batched decoding through the real I/O path: B sequences decoded together with {@link KvBatch}
 * (one selection each, one scheduler load for all, each sequence's reads sent as it is planned,
 * resident copies behind all the reads), against fio reading the same pool files at the same
 * request-size mix and depth, in paired rounds; and the same B sequences with each decoder
 * prefetching on its own (its own load, its resident copies inside its prefetch), the way an
 * engine batches without {@code KvBatch}.
 */
@Command(name = "batch", mixinStandardHelpOptions = true,
        description = "Batched decoding: aggregate fetch MiB/s and steps/s at several batch sizes, as a ratio of fio's"
                + " at the same request mix and depth, and against each decoder prefetching on its own.")
public final class BatchBench implements Callable<Integer> {
    @Option(names = "--batches", split = ",", defaultValue = "1,4,8,16",
            description = "Batch sizes (default: ${DEFAULT-VALUE}).")
    int[] batches;

    /** Sequence {@code i} has seed {@code --seed + i}. */
    @Mixin
    WorkloadOptions workload = new WorkloadOptions(4096, 2, 100);

    @Option(names = "--seconds", defaultValue = "1.0", description = "Seconds of decoding per run (default: ${DEFAULT-VALUE}).")
    double seconds;

    @Option(names = "--sparsity", defaultValue = "0.25", description = "Token budget (default: ${DEFAULT-VALUE}).")
    double sparsity;

    @Mixin
    FioRoundsOptions paired = new FioRoundsOptions(2);

    @Mixin
    ScratchDeviceOptions store = new ScratchDeviceOptions();

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** Layer fetches (of the whole batch) kept in flight: layer l+1 is fetched while layer l is consumed. */
    static final int IN_FLIGHT = 2;

    private KvShape shape;
    private SyntheticWorkload[] workloads;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        int maxBatch = Arrays.stream(batches).max().orElse(0);
        for (int b : batches) {
            if (b < 1 || b > 64) {
                throw new IllegalArgumentException("--batches has " + b + "; allowed: 1..64");
            }
        }
        if (workload.layers < IN_FLIGHT) {
            throw new IllegalArgumentException("--layers = " + workload.layers + "; allowed: at least " + IN_FLIGHT);
        }
        if (!Fio.available()) {
            throw new IllegalStateException("fio is not installed; the batch bench reports bandwidth as a ratio of fio's");
        }
        shape = new KvShape(workload.layers, 32, 8, 128, DType.BF16);
        Path root = store.scratch("kvo-batch");
        List<Path> dirs = store.ssdDirectories(root);
        long seqBytes = (long) workload.tokens * shape.entryBytes() * workload.layers;
        KvConfig cfg = store.config(dirs, seqBytes * maxBatch)
                .dramBudgetBytes(1L << 30).queueDepth(paired.queueDepth).build();
        try (KvEngine engine = KvEngine.open(cfg)) {
            long t0 = System.nanoTime();
            workloads = new SyntheticWorkload[maxBatch];
            for (int i = 0; i < maxBatch; i++) {
                workloads[i] = new SyntheticWorkload(WorkloadSpec.builder(shape, workload.tokens).seed(workload.seed + i).build());
                ClusteredSequences.store(engine, "s" + i, workloads[i], workload.tokens);
            }
            double load = loadAverage();
            out.printf("# Batched decoding through real I/O%n%n%d sequences of %d layers × %,d tokens (Llama-3-8B-shaped:"
                    + " 32 query heads, 8 KV heads × 128, BF16, %d B entries) on %d directories, backend %s,"
                    + " queueDepth %d; budget %.0f%% of tokens; %.1f s of decoding per run, %d layer fetches of the batch in"
                    + " flight, no cache; stored and clustered in %.1f s; load average %.1f at the start.%n%n",
                    maxBatch, workload.layers, workload.tokens, shape.entryBytes(), store.devices, engine.stats().ioBackend(), paired.queueDepth,
                    sparsity * 100, seconds, IN_FLIGHT, (System.nanoTime() - t0) / 1e9, load);
            long fileSize = Fio.poolFileSize(engine.stats());
            int n = batches.length;
            List<List<Double>> batched = lists(n);
            List<List<Double>> separate = lists(n);
            List<List<Double>> fio = lists(n);
            List<List<Double>> stepsPerSecond = lists(n);
            List<List<Double>> cpuBatched = lists(n);
            List<List<Double>> cpuSeparate = lists(n);
            String[] mix = new String[n];
            int[] depth = new int[n];
            for (int round = 0; round <= paired.rounds; round++) {
                for (int k = 0; k < n; k++) {
                    int b = batches[k];
                    // Alternating which goes first leaves neither the other's warm-up or page state.
                    Result s = round % 2 == 1 ? run(engine, b, false) : null;
                    Result r = run(engine, b, true);
                    if (s == null) {
                        s = run(engine, b, false);
                    }
                    if (mix[k] == null) {
                        mix[k] = Fio.bssplit(r.stats);
                        depth[k] = Fio.depth((double) IN_FLIGHT * r.stats.readRequests() / (r.stats.steps() / b),
                                paired.queueDepth, store.devices);
                    }
                    double f = round == 0 ? 0 : Fio.randRead(dirs, fileSize, mix[k], depth[k], paired.fioSeconds);
                    if (round > 0) {
                        batched.get(k).add(r.mibs);
                        separate.get(k).add(s.mibs);
                        stepsPerSecond.get(k).add(r.stepsPerSecond);
                        cpuBatched.get(k).add(r.cpuMsPerMib);
                        cpuSeparate.get(k).add(s.cpuMsPerMib);
                        fio.get(k).add(f);
                    }
                }
            }
            out.printf("Medians of %d paired rounds after one unreported warm-up round; fio: randread, io_uring, O_DIRECT,"
                    + " registered files and buffers, best of two submit batchings, the batch's request-size mix as"
                    + " bssplit and depth = reads of %d layer fetches of the batch (at most queueDepth × devices; also the devices' request queue, where smaller), the"
                    + " same pool files (first %d MiB of each), %d s per run, right after the decode runs of its"
                    + " round. A step is one token of every sequence of the batch (all layers).%n%n",
                    paired.rounds, IN_FLIGHT, fileSize >> 20, paired.fioSeconds);
            out.println("| batch | KvBatch MiB/s | fio MiB/s | KvBatch / fio (median of rounds) | batch steps/s |"
                    + " tokens/s | decoders' own prefetch MiB/s | KvBatch / own | decoding thread CPU ms"
                    + " per MiB, KvBatch / own | fio depth | bssplit |");
            out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
            for (int k = 0; k < n; k++) {
                List<Double> ratios = new ArrayList<>();
                List<Double> gain = new ArrayList<>();
                for (int i = 0; i < paired.rounds; i++) {
                    ratios.add(batched.get(k).get(i) / fio.get(k).get(i));
                    gain.add(batched.get(k).get(i) / separate.get(k).get(i));
                }
                double sps = median(stepsPerSecond.get(k));
                out.printf("| %d | %.0f | %.0f | %.2f | %.1f | %.0f | %.0f | %.2f | %.3f / %.3f | %d | %s |%n", batches[k],
                        median(batched.get(k)), median(fio.get(k)), median(ratios), sps, sps * batches[k],
                        median(separate.get(k)), median(gain), median(cpuBatched.get(k)),
                        median(cpuSeparate.get(k)), depth[k], mix[k]);
            }
            out.println();
            out.printf("Per round, KvBatch / fio: %s; load average %.1f at the end.%n", perRound(batched, fio),
                    loadAverage());
        } finally {
            TempDirs.deleteRecursively(root);
        }
        out.flush();
        return 0;
    }

    private String perRound(List<List<Double>> a, List<List<Double>> b) {
        StringBuilder sb = new StringBuilder();
        for (int k = 0; k < batches.length; k++) {
            sb.append(k == 0 ? "" : "; ").append("batch ").append(batches[k]).append(':');
            for (int i = 0; i < a.get(k).size(); i++) {
                sb.append(String.format(" %.2f", a.get(k).get(i) / b.get(k).get(i)));
            }
        }
        return sb.toString();
    }

    private static List<List<Double>> lists(int n) {
        List<List<Double>> l = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            l.add(new ArrayList<>());
        }
        return l;
    }

    private static double loadAverage() {
        try {
            return Double.parseDouble(Files.readString(Path.of("/proc/loadavg")).split(" ")[0]);
        } catch (Exception e) {
            return Double.NaN;
        }
    }

    /** {@code cpuMsPerMib}: CPU time of the decoding thread per MiB fetched (user + kernel). */
    private record Result(DecodeStats stats, double mibs, double stepsPerSecond, double cpuMsPerMib) {}

    /**
     * Decodes {@link #seconds} of steps of the first {@code b} sequences, every layer, {@link #IN_FLIGHT}
     * layer fetches of the whole batch in flight: through one {@link KvBatch} or decoder by decoder.
     */
    private Result run(KvEngine engine, int b, boolean shared) {
        DecodeOptions o = DecodeOptions.builder().strategy(Swarm.defaults()).sparsity(sparsity).cacheBytes(0)
                .pipelineDepth(IN_FLIGHT + 1).build();
        List<KvSequence> seqs = new ArrayList<>();
        List<KvDecoder> decs = new ArrayList<>();
        try {
            for (int i = 0; i < b; i++) {
                seqs.add(engine.openSequence("s" + i));
                decs.add(seqs.get(i).decoder(o));
            }
            KvBatch batch = KvBatch.of(decs);
            float[][][][] q = new float[QUERY_STEPS][workload.layers][b][];
            for (int step = 0; step < q.length; step++) {
                for (int l = 0; l < workload.layers; l++) {
                    for (int i = 0; i < b; i++) {
                        q[step][l][i] = workloads[i].query(l, step);
                    }
                }
            }
            // Two steps warm up each layer's window, medoid index and buffers.
            decode(batch, q, 0, shared);
            DecodeStats[] warm = new DecodeStats[b];
            for (int i = 0; i < b; i++) {
                warm[i] = decs.get(i).stats();
            }
            var threads = java.lang.management.ManagementFactory.getThreadMXBean();
            long cpu0 = threads.getCurrentThreadCpuTime();
            long t = System.nanoTime();
            int fetches = decode(batch, q, (long) (this.seconds * 1e9), shared);
            double seconds = (System.nanoTime() - t) / 1e9;
            double cpuMs = (threads.getCurrentThreadCpuTime() - cpu0) / 1e6;
            DecodeStats total = null;
            for (int i = 0; i < b; i++) {
                DecodeStats st = decs.get(i).stats().since(warm[i]);
                total = total == null ? st : total.plus(st);
            }
            double mib = total.bytesRead() / (double) (1 << 20);
            return new Result(total, mib / seconds, (double) fetches / workload.layers / seconds, cpuMs / mib);
        } finally {
            for (KvDecoder d : decs) {
                d.close();
            }
            for (KvSequence s : seqs) {
                s.close();
            }
        }
    }

    /** Queries of this many steps are made up front and cycled through. */
    static final int QUERY_STEPS = 16;

    /**
     * Decodes for {@code nanos} (whole steps; two steps when 0, to warm up): fetch i is (step
     * i / layers, layer i % layers), {@link #IN_FLIGHT} in flight. Returns the fetches done.
     */
    private int decode(KvBatch batch, float[][][][] q, long nanos, boolean shared) {
        int b = batch.size();
        long end = System.nanoTime() + nanos;
        int total = nanos == 0 ? 2 * workload.layers : Integer.MAX_VALUE;
        KvView[][] ring = new KvView[IN_FLIGHT][b];
        int issued = 0;
        int done = 0;
        for (; done < total; done++) {
            if (total == Integer.MAX_VALUE && issued % workload.layers == 0 && System.nanoTime() >= end) {
                total = issued; // finish the steps begun
            }
            while (issued < total && issued - done < IN_FLIGHT) {
                int l = issued % workload.layers;
                float[][] qs = q[(issued / workload.layers) % QUERY_STEPS][l];
                KvView[] views = ring[issued % IN_FLIGHT];
                if (shared) {
                    batch.prefetch(l, qs, views);
                } else {
                    for (int i = 0; i < b; i++) {
                        views[i] = batch.decoder(i).prefetch(l, qs[i]);
                    }
                }
                issued++;
            }
            if (done == total) {
                break;
            }
            for (KvView v : ring[done % IN_FLIGHT]) {
                v.await().close();
            }
        }
        return done;
    }

    private static double median(List<Double> xs) {
        return io.kvoffload.bench.report.Medians.of(xs);
    }
}
