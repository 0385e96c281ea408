package io.kvoffload.bench.cli;

import io.kvoffload.DType;
import io.kvoffload.KvConfig;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvStats;
import io.kvoffload.PrefixMatch;
import io.kvoffload.SequenceInfo;
import io.kvoffload.bench.ProgressBars;
import io.kvoffload.bench.TempDirs;
import io.kvoffload.bench.compare.CompareCommand;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import me.tongfei.progressbar.ProgressBar;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The demo: a synthetic Llama-3-8B-shaped KV cache offloaded to several directories acting as
 * SSDs, committed, found again after a restart (also by prefix), and read back at random, every
 * byte verified.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = "Offload a synthetic KV cache to several SSD directories, restart, look up a prefix, read at"
                + " random and verify every byte.")
public final class DemoCommand implements Callable<Integer> {
    @Mixin
    WorkloadOptions workload = new WorkloadOptions(32768, 8, 42);

    @Option(names = "--dirs", split = ",", paramLabel = "DIR",
            description = "SSD directories (comma-separated). Default: --devices temporary directories.")
    List<Path> dirs = new ArrayList<>();

    @Option(names = "--devices", defaultValue = "4", description = "Temporary directories to use when --dirs is not"
            + " given (default: ${DEFAULT-VALUE}).")
    int devices;

    @Mixin
    HeadOptions heads = new HeadOptions(32, 8, 128);

    @Option(names = "--dtype", defaultValue = "BF16", description = "F32, F16 or BF16 (default: ${DEFAULT-VALUE}).")
    DType dtype;

    @Option(names = "--block-tokens", defaultValue = "16", description = "Tokens per block (default: ${DEFAULT-VALUE}).")
    int blockTokens;

    @Option(names = "--backend", defaultValue = "auto", description = "I/O backend: auto, portable, io_uring"
            + " (default: ${DEFAULT-VALUE}).")
    String backend;

    @Option(names = "--dram", defaultValue = "256MiB", description = "DRAM budget (default: ${DEFAULT-VALUE}).")
    String dram;

    @Mixin
    RandomReads reads = new RandomReads();

    @Option(names = "--keep", description = "Keep the temporary directories.")
    boolean keep;

    @Mixin
    Comparison comparison = new Comparison();

    @Option(names = "--jfr", paramLabel = "FILE",
            description = "Record the run with Java Flight Recorder (the JDK's default settings and every kvoffload"
                    + " event: fetch, commit, eviction, checksum failure, device error, degradation) into FILE.")
    Path jfr;

    private final PrintStream out = System.out;

    @Override
    public Integer call() throws Exception {
        KvShape shape = heads.shape(workload.layers, dtype);
        if (workload.tokens < 1) {
            throw new IllegalArgumentException("--tokens = " + workload.tokens + " must be positive");
        }
        reads.validate();
        List<Path> devs = dirs;
        for (Path d : devs) {
            Files.createDirectories(d); // the demo sets up what it is pointed at; the library itself does not
        }
        Path tempRoot = null;
        if (devs.isEmpty()) {
            tempRoot = TempDirs.createUnder(null, "kvo-demo");
            devs = TempDirs.ssdDirectories(tempRoot, devices);
        }
        try (FlightRecording recording = jfr == null ? null : FlightRecording.start(jfr, out)) {
            return run(shape, devs);
        } finally {
            if (tempRoot != null && !keep) {
                TempDirs.deleteRecursively(tempRoot);
            } else if (tempRoot != null) {
                out.println("kept " + tempRoot);
            }
        }
    }

    private int run(KvShape shape, List<Path> devs) throws IOException {
        long extent = ((long) blockTokens * shape.entryBytes() + 4095) & -4096L;
        long blocks = (long) workload.layers * ((workload.tokens + blockTokens - 1) / blockTokens);
        long perDevice = ((blocks * extent / devs.size()) * 5 / 4 + (64L << 20)) & -(1L << 20);
        KvConfig config = KvConfig.builder()
                .ssdDirectories(devs)
                .ioBackend(backend)
                .dramBudgetBytes(KvConfig.parseSize("--dram", dram))
                .deviceCapacityBytes(perDevice)
                .blockTokens(blockTokens)
                .build();
        long kvBytes = (long) workload.layers * workload.tokens * shape.entryBytes();
        out.printf("kvoffload demo: %d layers x %d tokens, %d KV heads x %d dims, %s: %s of KV on %d devices%n",
                workload.layers, workload.tokens, heads.kvHeads, heads.headDim, dtype, mib(kvBytes), devs.size());

        String id = "demo-" + Long.toHexString(workload.seed);
        long[] written = new long[devs.size()];
        // 1. Prefill and commit.
        try (KvEngine engine = KvEngine.open(config)) {
            KvStats s0 = engine.stats();
            out.printf("I/O backend: %s%n", engine.ioBackend());
            for (KvStats.Device d : s0.devices()) {
                out.printf("  device %d: %s (pool %s, O_DIRECT %s)%n", d.index(), d.directory(), mib(d.capacityBytes()),
                        d.directIo() ? "yes" : "no");
            }
            engine.deleteSequence(id);
            long t0 = System.nanoTime();
            try (KvSequence seq = engine.createSequence(id, shape); Arena arena = Arena.ofConfined()) {
                int[] ids = new int[workload.tokens];
                for (int t = 0; t < workload.tokens; t++) {
                    ids[t] = DemoData.tokenId(workload.seed, t);
                }
                seq.appendTokens(ids);
                int chunk = Math.min(workload.tokens, 2048);
                int half = shape.halfEntryBytes();
                MemorySegment k = arena.allocate((long) chunk * half, 64);
                MemorySegment v = arena.allocate((long) chunk * half, 64);
                int chunks = (workload.tokens + chunk - 1) / chunk;
                try (ProgressBar pb = bar("prefill", (long) workload.layers * chunks)) {
                    for (int l = 0; l < workload.layers; l++) {
                        for (int from = 0; from < workload.tokens; from += chunk) {
                            int n = Math.min(chunk, workload.tokens - from);
                            DemoData.fill(k, v, workload.seed, l, from, n, half);
                            seq.appendKv(l, k.asSlice(0, (long) n * half), v.asSlice(0, (long) n * half));
                            pb.step();
                        }
                    }
                }
                seq.commit();
            }
            double secs = (System.nanoTime() - t0) / 1e9;
            for (KvStats.Device d : engine.stats().devices()) {
                written[d.index()] = d.bytesWritten();
            }
            out.printf("prefill + commit: %s in %.2f s (%.0f MiB/s, data generation included)%n", mib(kvBytes), secs,
                    kvBytes / secs / (1 << 20));
        }

        // 2. Restart: a fresh engine finds the committed sequence and the prefix of a new prompt.
        boolean ok;
        try (KvEngine engine = KvEngine.open(config)) {
            List<SequenceInfo> found = engine.sequences();
            out.printf("restart: %d committed sequence(s) found: %s%n", found.size(),
                    found.stream().map(i -> i.id() + " (" + i.tokenCount() + " tokens, " + mib(i.storedBytes()) + ")")
                            .toList());
            int shared = workload.tokens * 3 / 4;
            int[] prompt = new int[shared + 64];
            for (int t = 0; t < prompt.length; t++) {
                prompt[t] = t < shared ? DemoData.tokenId(workload.seed, t) : DemoData.tokenId(workload.seed, t) + 1;
            }
            Optional<PrefixMatch> match = engine.findLongestPrefix(shape, prompt);
            out.printf("prefix lookup: a new %d-token prompt shares %s tokens with %s (expected %d)%n", prompt.length,
                    match.map(m -> String.valueOf(m.matchedTokens())).orElse("no"),
                    match.map(PrefixMatch::sequenceId).orElse("nothing"), shared);
            ok = match.isPresent() && match.get().matchedTokens() == shared;

            // 3. Random sparse reads, every byte verified.
            KvStats before = engine.stats();
            int perRound = reads.perRound(workload.tokens);
            long verified = 0;
            long mismatches = 0;
            long nanos = 0;
            SplittableRandom rnd = new SplittableRandom(workload.seed);
            int half = shape.halfEntryBytes();
            try (KvSequence seq = engine.openSequence(id); Arena arena = Arena.ofConfined();
                    ProgressBar pb = bar("random reads", reads.readRounds)) {
                MemorySegment k = arena.allocate((long) perRound * half, 64);
                MemorySegment v = arena.allocate((long) perRound * half, 64);
                int[] positions = new int[perRound];
                for (int r = 0; r < reads.readRounds; r++) {
                    int layer = rnd.nextInt(workload.layers);
                    for (int i = 0; i < perRound; i++) {
                        positions[i] = rnd.nextInt(workload.tokens);
                    }
                    long t0 = System.nanoTime();
                    seq.read(layer, positions, k, v);
                    nanos += System.nanoTime() - t0;
                    for (int i = 0; i < perRound; i++) {
                        if (DemoData.matches(k, v, i, workload.seed, layer, positions[i], half)) {
                            verified++;
                        } else {
                            mismatches++;
                        }
                    }
                    pb.step();
                }
            }
            KvStats after = engine.stats();
            long devBytes = after.totalBytesRead() - before.totalBytesRead();
            double secs = nanos / 1e9;
            out.println();
            out.println("| device | directory | written | read | reads | free |");
            out.println("|---:|---|---:|---:|---:|---:|");
            for (KvStats.Device d : after.devices()) {
                out.printf("| %d | %s | %s | %s | %d | %s |%n", d.index(), d.directory(), mib(written[d.index()]),
                        mib(d.bytesRead()), d.reads(), mib(d.freeBytes()));
            }
            out.println();
            out.printf("random reads: %d rounds x %d positions (%.0f%% of a layer) in %.2f s%n", reads.readRounds, perRound,
                    reads.sparsity * 100, secs);
            out.printf("read bandwidth: %.0f MiB/s from the devices (whole blocks), %.0f MiB/s of gathered KV%n",
                    devBytes / secs / (1 << 20), (double) reads.readRounds * perRound * shape.entryBytes() / secs / (1 << 20));
            out.printf("checksums: %d extents verified, %d failed%n", after.checksumsVerified(),
                    after.checksumFailures());
            out.printf("bit-exact: %d of %d entries read back exactly%n", verified, verified + mismatches);
            ok &= mismatches == 0 && after.checksumFailures() == 0;
            engine.deleteSequence(id);
        }
        if (comparison.enabled()) {
            ok &= compare();
        }
        out.println(ok ? "demo: OK" : "demo: FAILED");
        return ok ? 0 : 1;
    }

    /**
     * The closing comparison: every strategy decodes a few steps through the same scheduler and I/O
     * path (a short {@code kvo bench compare}); prints its table and checks every row bit-exact.
     */
    private boolean compare() throws IOException {
        comparison.validate();
        Path tmp = TempDirs.createUnder(null, "kvo-demo-compare");
        try {
            out.printf("%nstrategy comparison (%d tokens, 10%% budget, %d steps; kvo bench compare for the full run):%n",
                    comparison.compareTokens, comparison.compareSteps);
            java.io.PrintWriter pw = new java.io.PrintWriter(out, true);
            List<CompareCommand.Row> rows = CompareCommand.quick(comparison.compareTokens, comparison.compareSteps)
                    .out(tmp.resolve("reports")).work(tmp).execute(pw);
            out.println(CompareCommand.summaryTable(rows, 0.1));
            long bad = rows.stream().mapToLong(CompareCommand.Row::mismatches).sum();
            long checked = rows.stream().mapToLong(CompareCommand.Row::rowsChecked).sum();
            out.printf("comparison bit-exact: %d of %d view rows equal the source KV%n", checked - bad, checked);
            return bad == 0;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        } finally {
            if (keep) {
                out.println("kept " + tmp);
            } else {
                TempDirs.deleteRecursively(tmp);
            }
        }
    }

    private static ProgressBar bar(String task, long max) {
        return ProgressBars.ascii(task, max, 250);
    }

    static String mib(long bytes) {
        return String.format("%.1f MiB", bytes / (double) (1 << 20));
    }

    /** Part 3, the random sparse reads: how many rounds, each reading a share of a random layer. */
    static final class RandomReads {
        @Option(names = "--read-rounds", defaultValue = "32", description = "Random read rounds (default: ${DEFAULT-VALUE}).")
        int readRounds;

        @Option(names = "--sparsity", defaultValue = "0.1", description = "Share of a layer's tokens read per round"
                + " (default: ${DEFAULT-VALUE}).")
        double sparsity;

        void validate() {
            if (!(sparsity > 0 && sparsity <= 1)) {
                throw new IllegalArgumentException("--sparsity = " + sparsity + " is out of range; allowed: (0, 1]");
            }
        }

        /** Positions read per round from a layer of {@code tokens}. */
        int perRound(int tokens) {
            return Math.max(1, (int) Math.round(tokens * sparsity));
        }
    }

    /** The closing strategy comparison (a short {@code kvo bench compare}), or none. */
    static final class Comparison {
        @Option(names = "--compare-tokens", defaultValue = "8192",
                description = "Prefix of the closing strategy comparison (kvo bench compare, short); 0 skips it"
                        + " (default: ${DEFAULT-VALUE}).")
        int compareTokens;

        @Option(names = "--compare-steps", defaultValue = "4",
                description = "Decoding steps of the closing comparison (default: ${DEFAULT-VALUE}).")
        int compareSteps;

        boolean enabled() {
            return compareTokens > 0;
        }

        void validate() {
            if (compareTokens < 1024 || compareTokens > (1 << 20)) {
                throw new IllegalArgumentException("--compare-tokens = " + compareTokens
                        + " is out of range; allowed: 0 (skip) or 1024.." + (1 << 20));
            }
        }
    }
}
