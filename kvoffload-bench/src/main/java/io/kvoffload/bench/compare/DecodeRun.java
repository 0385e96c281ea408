package io.kvoffload.bench.compare;

import io.kvoffload.DecodeOptions;
import io.kvoffload.DecodeStats;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.LatencyHistogram;
import io.kvoffload.SparseAttention;
import io.kvoffload.attention.ExactAttention;
import io.kvoffload.attention.QualityMetrics;
import io.kvoffload.bench.compare.CompareCommand.Row;
import io.kvoffload.bench.compare.IoStrategies.Layout;
import io.kvoffload.bench.compare.IoStrategies.Strategy;
import io.kvoffload.strategy.kvswap.KvSwap;
import io.kvoffload.bench.report.NanoSamples;
import io.kvoffload.strategy.swarm.Swarm;

/**
 * One strategy's decoding run in {@code compare}: {@code batch} sequences decoded at once through the
 * library's decoder on a stored layout ({@link #decode}), and the sums the run gathers over all its
 * threads (rows, bytes, reads, quality, latencies, bit-exactness), which {@link #row} turns into a
 * table row.
 */
final class DecodeRun {
    /** Untimed steps per layer before a run's timed ones. */
    private static final int WARM_UP_STEPS = 8;

    private final CompareCommand cmd;

    long fetches;
    long rows;
    double mass;
    double topK;
    double error;
    /** Steps whose quality was scored (the first member's). */
    long qualitySteps;
    /** Each timed fetch's selection time. */
    final NanoSamples selectNanos = new NanoSamples();
    long bytes;
    long reads;
    long ioNanos;
    long cacheHits;
    long cacheMisses;
    long dram;
    long rowsChecked;
    long mismatches;
    long wallNanos;
    /** When the first thread finished its untimed warm-up step (opening a layer is not decoding). */
    long measuredFrom = Long.MAX_VALUE;
    /** The first member's counters over its timed steps (what fio's job is shaped after). */
    DecodeStats first;
    /** The timed fetches' latencies, every member's. */
    LatencyHistogram fetchLatency = LatencyHistogram.empty();
    LatencyHistogram ioLatency = LatencyHistogram.empty();

    synchronized void select(long nanos) {
        selectNanos.add(nanos);
    }

    private DecodeRun(CompareCommand cmd) {
        this.cmd = cmd;
    }

    /**
     * Decodes {@code stepCount} steps of every layer with {@code batch} sequences at once (one
     * thread, handle and decoder each, on the same stored layout, each with its own queries).
     */
    static DecodeRun decode(CompareCommand cmd, CompareFixture f, KvEngine e, Strategy s, double share, int batch,
            int stepCount, boolean quality) throws InterruptedException {
        DecodeRun run = new DecodeRun(cmd);
        KvShape shape = cmd.shape;
        int layers = cmd.layers;
        LocalTokenOptions local = cmd.local;
        int budgetTokens = (int) Math.max(1, Math.min(f.n, Math.round(share * f.n)));
        long cache = (long) (cmd.store.cacheShare * f.n * shape.entryBytes()) * layers;
        DecodeOptions.Builder ob = DecodeOptions.builder().sparsity(share).sinkTokens(local.sinks).localWindow(local.window)
                .cacheBytes(cache).strategy(Swarm.builder().maintenance(Swarm.Maintenance.OFF).build());
        if (s.layout() == Layout.KVSWAP_GROUPS) {
            // The shared budget (sinks and window inside), as every other strategy: no budgetTokens on top.
            ob.strategy(KvSwap.defaults().withRollingFlush(false));
        } else if (!s.decoderSelects()) {
            // The baseline runs inside the decoder's pipeline: same budget of rows as Swarm's (sinks and window included).
            ob.strategy(s.selector());
        }
        DecodeOptions o = ob.build();
        String id = s.sequenceId();
        Throwable[] failure = new Throwable[1];
        Thread[] threads = new Thread[batch];
        for (int b = 0; b < batch; b++) {
            int member = b;
            threads[b] = Thread.ofPlatform().name("decode-" + b).start(() -> {
                try {
                    run.decodeOne(f, e, s, id, o, budgetTokens, member, stepCount, quality && member == 0);
                } catch (Throwable t) {
                    synchronized (failure) {
                        failure[0] = t;
                    }
                }
            });
        }
        for (Thread t : threads) {
            t.join();
        }
        run.wallNanos = System.nanoTime() - Math.min(run.measuredFrom, System.nanoTime());
        if (failure[0] != null) {
            throw new IllegalStateException(s.name() + " failed: " + failure[0], failure[0]);
        }
        return run;
    }

    private void decodeOne(CompareFixture f, KvEngine e, Strategy s, String id, DecodeOptions o, int budgetTokens, int member,
            int stepCount, boolean quality) {
        KvShape shape = cmd.shape;
        int layers = cmd.layers;
        SparseAttention sparse = new SparseAttention(shape);
        float[] output = new float[cmd.heads.queryHeads * cmd.heads.headDim];
        try (KvSequence seq = e.openSequence(id); KvDecoder d = seq.decoder(o)) {
            // Untimed steps first: the first opens the layers (window, medoid index); all warm the JIT,
            // which otherwise bills the first strategy's few timed steps for compiling the shared path.
            for (int warm = 0; warm < WARM_UP_STEPS * layers; warm++) {
                int l = warm % layers;
                float[] q = f.query(l, 10_000 + member, warm / layers);
                d.prefetch(l, q).await().close();
            }
            synchronized (this) {
                measuredFrom = Math.min(measuredFrom, System.nanoTime());
            }
            DecodeStats warm = d.stats();
            DecodeStats before = warm;
            for (int step = 0; step < stepCount; step++) {
                for (int l = 0; l < layers; l++) {
                    float[] q = f.query(l, member * stepCount, step);
                    // Every strategy selects inside the decoder (a baseline through its SelectionStrategy).
                    KvView view = d.prefetch(l, q);
                    try (KvView v = view.await()) {
                        DecodeStats after = d.stats();
                        select(after.selectNanos() - before.selectNanos());
                        synchronized (this) {
                            fetches++;
                            rows += ViewScores.entryRows(v);
                            bytes += after.bytesRead() - before.bytesRead();
                            reads += after.readRequests() - before.readRequests();
                            ioNanos += after.ioNanos() - before.ioNanos();
                        }
                        before = after;
                        long bad = ViewScores.mismatches(v, f.keys[l], f.values[l]);
                        synchronized (this) {
                            rowsChecked += v.tokenCount();
                            mismatches += bad;
                        }
                        if (quality) {
                            int[] positions = ViewScores.positions(v);
                            ExactAttention.Result ex = f.exact[l][step];
                            sparse.attend(v, q, output);
                            // A per-head view: each query head's mass on the rows that hold its KV head.
                            double mass = v.partialRows()
                                    ? QualityMetrics.attentionMassRecall(f.headWeights(l, step), shape.groupSize(), v)
                                    : QualityMetrics.attentionMassRecall(ex.weights(), positions);
                            double topK = v.partialRows() ? ViewScores.headTopK(v, ex.weights(), budgetTokens)
                                    : QualityMetrics.topKRecall(ex.weights(), positions, budgetTokens);
                            synchronized (this) {
                                this.mass += mass;
                                this.topK += topK;
                                error += QualityMetrics.relativeError(ex.output(), output);
                                qualitySteps++;
                            }
                        }
                    }
                }
            }
            DecodeStats st = d.stats();
            DecodeStats timed = st.since(warm);
            synchronized (this) {
                fetchLatency = fetchLatency.plus(timed.fetchLatency());
                ioLatency = ioLatency.plus(timed.ioLatency());
                cacheHits += st.cacheHits();
                cacheMisses += st.cacheMisses();
                // Every DRAM tier a strategy keeps: window, hot cache, KVSwap's reuse buffer (with its
                // compressed K cache, which the index column counts too).
                dram += st.cacheBytes() + st.windowBytes() + st.reuseBytes();
                if (first == null) {
                    first = timed;
                }
            }
        }
    }

    /** This run as a row of {@code section}'s table. */
    Row row(String section, CompareFixture f, Strategy s, double share, int batch, int ssds, boolean simulated,
            int stepCount, double fioMiBs, long index) {
        double stepsDone = (double) stepCount * batch;
        double io = ioNanos / 1e9;
        long hits = cacheHits + cacheMisses;
        return new Row(section, f.n, share, batch, ssds, simulated, s.name(), rows / (double) fetches,
                qualitySteps == 0 ? Double.NaN : mass / qualitySteps, qualitySteps == 0 ? Double.NaN : topK / qualitySteps,
                qualitySteps == 0 ? Double.NaN : error / qualitySteps, selectNanos.medianMicros(), bytes / stepsDone,
                reads / stepsDone, ioNanos / 1e6 / stepsDone, io > 0 ? bytes / io / CompareCommand.MIB : 0, fioMiBs,
                bytes / (wallNanos / 1e9) / CompareCommand.MIB, stepsDone / (wallNanos / 1e9),
                hits == 0 ? 0 : cacheHits / (double) hits, dram / batch, index, rowsChecked, mismatches,
                f.coActivationShare.getOrDefault(s.layout(), Double.NaN), fetchLatency, ioLatency);
    }
}
