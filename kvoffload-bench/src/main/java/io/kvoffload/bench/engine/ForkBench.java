package io.kvoffload.bench.engine;

import io.kvoffload.DType;
import io.kvoffload.KvConfig;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvStats;
import io.kvoffload.bench.cli.DeviceOptions;
import io.kvoffload.bench.cli.PrefixOptions;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Reusing a matched prompt prefix: {@link KvEngine#fork} (shares the prefix's blocks) against what
 * an engine does without it (create a sequence, read the prefix back layer by layer, append it,
 * commit), same source, same run, alternating order; median time and the pool bytes each writes
 * and reads.
 */
@Command(name = "fork", mixinStandardHelpOptions = true,
        description = "Prefix reuse: fork (shared blocks) vs read back + append + commit, time and bytes.")
public final class ForkBench implements Callable<Integer> {
    @Mixin
    PrefixOptions reuse = new PrefixOptions();

    @Option(names = "--layers", defaultValue = "4",
            description = "Layers (8 KV heads × 128, BF16: 4 KiB entries) (default: ${DEFAULT-VALUE}).")
    int layers;

    @Mixin
    DeviceOptions store = new DeviceOptions(2);

    @Override
    public Integer call() throws Exception {
        if (reuse.prefixTokens < 1 || layers < 1 || reuse.blockTokens < 1 || store.devices < 1 || reuse.reps < 1) {
            throw new IllegalArgumentException("--prefix-tokens, --layers, --block-tokens, --devices and --reps must be"
                    + " at least 1; got " + reuse.prefixTokens + ", " + layers + ", " + reuse.blockTokens + ", " + store.devices + ", " + reuse.reps);
        }
        KvShape shape = new KvShape(layers, 32, 8, 128, DType.BF16);
        int sourceTokens = reuse.prefixTokens + reuse.blockTokens / 2; // the source goes on past the prefix
        long sourceBytes = (long) sourceTokens * shape.entryBytes() * layers;
        Path root = store.root("kvo-bench-fork-");
        try {
            KvConfig cfg = store.config(store.ssdDirectories(root), sourceBytes).blockTokens(reuse.blockTokens).dramBudgetBytes(512L << 20).build();
            try (KvEngine e = KvEngine.open(cfg)) {
                System.out.printf("source: %d tokens × %d layers × %d B entries = %.0f MiB on %d device(s), backend %s%n",
                        sourceTokens, layers, shape.entryBytes(), sourceBytes / 1048576.0, store.devices, e.ioBackend());
                writeSource(e, shape, sourceTokens);
                long[][] fork = new long[4][reuse.reps];
                long[][] copy = new long[4][reuse.reps];
                for (int r = -1; r < reuse.reps; r++) { // run -1 warms both paths up and is not counted
                    for (int side = 0; side < 2; side++) {
                        boolean forkFirst = (r & 1) == 0;
                        boolean isFork = (side == 0) == forkFirst;
                        long[] m = isFork ? forkOnce(e) : copyOnce(e, shape);
                        if (r >= 0) {
                            long[][] into = isFork ? fork : copy;
                            for (int x = 0; x < m.length; x++) {
                                into[x][r] = m[x];
                            }
                        }
                    }
                }
                double fm = median(fork[0]) / 1e6;
                double cm = median(copy[0]) / 1e6;
                System.out.printf("%n| prefix reuse of %d tokens | median ms | pool bytes written | pool bytes read |%n",
                        reuse.prefixTokens);
                System.out.println("|---|---|---|---|");
                System.out.printf("| read back + append + commit | %.1f | %d | %d |%n", cm, median(copy[1]), median(copy[2]));
                System.out.printf("| fork + commit | %.2f | %d | %d |%n", fm, median(fork[1]), median(fork[2]));
                System.out.printf("| fork alone (before its commit) | %.2f | 0 | 0 |%n", median(fork[3]) / 1e6);
                System.out.printf("%nfork is %.0f× faster (median of %d runs each)%n", cm / fm, reuse.reps);
            }
        } finally {
            store.release(root);
        }
        return 0;
    }

    private static void writeSource(KvEngine e, KvShape shape, int tokens) {
        int[] ids = new int[tokens];
        Arrays.setAll(ids, t -> (t * 7919) % 32000);
        try (KvSequence s = e.createSequence("source", shape); Arena a = Arena.ofConfined()) {
            s.appendTokens(ids);
            int chunk = 4096;
            MemorySegment k = a.allocate((long) chunk * shape.halfEntryBytes());
            MemorySegment v = a.allocate((long) chunk * shape.halfEntryBytes());
            for (int l = 0; l < shape.layers(); l++) {
                for (int from = 0; from < tokens; from += chunk) {
                    int n = Math.min(chunk, tokens - from);
                    long bytes = (long) n * shape.halfEntryBytes();
                    for (long i = 0; i < bytes; i += 8) {
                        k.set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, i, mix(l, from, i));
                        v.set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, i, ~mix(l, from, i));
                    }
                    s.appendKv(l, k.asSlice(0, bytes), v.asSlice(0, bytes));
                }
            }
            s.commit();
        }
    }

    private static long mix(int layer, int from, long i) {
        long z = layer * 0x9E3779B97F4A7C15L + from * 0xBF58476D1CE4E5B9L + i;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        return z ^ (z >>> 31);
    }

    /**
     * {time ns, pool bytes written, pool bytes read, time of the fork call alone} of a fork committed
     * (its commit writes the manifest copies and syncs them), then deleted (untimed).
     */
    private long[] forkOnce(KvEngine e) {
        long[] before = io(e);
        long t0 = System.nanoTime();
        long forked;
        try (KvSequence f = e.fork("source", "reuse", reuse.prefixTokens)) {
            forked = System.nanoTime() - t0;
            f.commit();
        }
        long t = System.nanoTime() - t0;
        long[] after = io(e);
        e.deleteSequence("reuse");
        return new long[] {t, after[0] - before[0], after[1] - before[1], forked};
    }

    /** The same reuse without fork: a new sequence, the prefix read back and appended layer by layer, committed. */
    private long[] copyOnce(KvEngine e, KvShape shape) {
        long[] before = io(e);
        long t0 = System.nanoTime();
        try (KvSequence src = e.openSequence("source"); KvSequence c = e.createSequence("reuse", shape);
                Arena a = Arena.ofConfined()) {
            c.appendTokens(Arrays.copyOf(src.tokenIds(), reuse.prefixTokens));
            int chunk = 4096;
            MemorySegment k = a.allocate((long) chunk * shape.halfEntryBytes());
            MemorySegment v = a.allocate((long) chunk * shape.halfEntryBytes());
            for (int l = 0; l < shape.layers(); l++) {
                for (int from = 0; from < reuse.prefixTokens; from += chunk) {
                    int n = Math.min(chunk, reuse.prefixTokens - from);
                    long bytes = (long) n * shape.halfEntryBytes();
                    src.read(l, from, n, k, v);
                    c.appendKv(l, k.asSlice(0, bytes), v.asSlice(0, bytes));
                }
            }
            c.commit();
        }
        long t = System.nanoTime() - t0;
        long[] after = io(e);
        e.deleteSequence("reuse");
        return new long[] {t, after[0] - before[0], after[1] - before[1], 0};
    }

    private static long[] io(KvEngine e) {
        List<KvStats.Device> ds = e.stats().devices();
        return new long[] {ds.stream().mapToLong(KvStats.Device::bytesWritten).sum(),
            ds.stream().mapToLong(KvStats.Device::bytesRead).sum()};
    }

    private static long median(long[] xs) {
        long[] s = xs.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }
}
