package io.kvoffload.bench.faults;

import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.FaultInjection;
import io.kvoffload.KvConfig;
import io.kvoffload.KvEngine;
import io.kvoffload.KvException;
import io.kvoffload.KvSequence;
import io.kvoffload.KvStats;
import io.kvoffload.SequenceInfo;
import io.kvoffload.bench.cli.DeviceOptions;
import io.kvoffload.bench.report.MarkdownTable;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The fault campaign of the reliability work (docs/reliability.md). Part 1 runs rounds of commits,
 * appends, reads and deletions on a real store through a {@link FaultInjection} backend (EIO, torn
 * and bit-flipped reads, media bit flips and torn writes, ENOSPC, latency spikes, a device
 * vanishing) and checks every outcome against a model of what was acknowledged: an operation
 * either succeeds with exactly the right data or fails with a {@link KvException}; after each round
 * the store is reopened without faults and every acknowledged sequence must be there, bit-exact or
 * (where injected media damage hit it) refused by its checksum. Part 2 kills a writer process with
 * SIGKILL at random points and checks that every acknowledged commit survives. Each operation runs
 * under a time limit, so a hang is counted rather than waited for.
 */
@Command(name = "faults", mixinStandardHelpOptions = true,
        description = "Fault campaign: injected I/O faults and kill -9 of a writer; prints what was injected, "
                + "detected, failed cleanly, lost or silently corrupted (all must be 0 for the last two).")
public final class FaultCampaignCommand implements Callable<Integer> {
    @Option(names = "--rounds", defaultValue = "60", description = "Injected-fault rounds (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--kills", defaultValue = "100", description = "kill -9 of a writer (default: ${DEFAULT-VALUE}).")
    int kills;

    @Option(names = "--rate", defaultValue = "0.02",
            description = "Probability of each fault kind per request (default: ${DEFAULT-VALUE}).")
    double rate;

    @Option(names = "--ops", defaultValue = "60", description = "Operations per round (default: ${DEFAULT-VALUE}).")
    int opsPerRound;

    @Mixin
    DeviceOptions store = new DeviceOptions(3);

    @Option(names = "--seed", defaultValue = "20261124", description = "Random seed (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--op-timeout-seconds", defaultValue = "60",
            description = "An operation running longer counts as a hang (default: ${DEFAULT-VALUE}).")
    int opTimeoutSeconds;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    private PrintWriter out;
    private final Map<String, Long> outcomes = new TreeMap<>();
    private long silent;
    private long failovers;
    private long repairs;
    private long rereads;
    private long hangs;
    private long otherExceptions;
    private final List<String> incidents = new ArrayList<>();

    /** An acknowledged sequence: its data seed and committed length. */
    record Acked(long seed, int tokens) {}

    @Override
    public Integer call() throws Exception {
        out = spec.commandLine().getOut();
        if (rounds < 0 || kills < 0 || store.devices < 1 || store.devices > 16 || !(rate >= 0 && rate <= 0.1)) {
            throw new IllegalArgumentException("--rounds and --kills must be >= 0, --devices 1..16, --rate 0..0.1; got "
                    + rounds + ", " + kills + ", " + store.devices + ", " + rate);
        }
        Path root = store.root("kvo-faults");
        ExecutorService ops = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "fault-campaign-op");
            t.setDaemon(true);
            return t;
        });
        try {
            long t0 = System.nanoTime();
            Map<String, Long> injected = injectedRounds(root.resolve("injected"), ops);
            long t1 = System.nanoTime();
            KillResult k = killRounds(root.resolve("kill"));
            long t2 = System.nanoTime();
            report(injected, k, (t1 - t0) / 1e9, (t2 - t1) / 1e9);
            boolean ok = silent == 0 && hangs == 0 && otherExceptions == 0 && k.lost == 0 && k.silent == 0
                    && outcomes.getOrDefault("verify: lost", 0L) == 0;
            out.println(ok ? "RESULT: PASS (0 silent corruptions, 0 lost commits, 0 hangs, 0 foreign exceptions)"
                    : "RESULT: FAIL");
            out.flush();
            return ok ? 0 : 1;
        } finally {
            ops.shutdownNow();
            store.release(root);
        }
    }

    private KvConfig.Builder config(List<Path> dirs) {
        return campaignConfig(dirs, store.backend);
    }

    /**
     * The store every part of the campaign opens, the {@link WriterChild} included: small devices,
     * DRAM and slabs so faults hit often, on {@code dirs} with {@code backend}.
     */
    static KvConfig.Builder campaignConfig(List<Path> dirs, String backend) {
        return KvConfig.builder().ssdDirectories(dirs).ioBackend(backend).deviceCapacityBytes(24L << 20)
                .dramBudgetBytes(64L << 20).dramSlabBytes(1L << 20).blockTokens(16);
    }

    private void count(String what) {
        outcomes.merge(what, 1L, Long::sum);
    }

    /** Runs {@code op} under the time limit; classifies its outcome; returns true when it succeeded. */
    private boolean run(ExecutorService ops, String name, Callable<String> op) {
        Future<String> f = ops.submit(op);
        try {
            String wrong = f.get(opTimeoutSeconds, TimeUnit.SECONDS);
            if (wrong != null) {
                silent++;
                incidents.add("SILENT " + name + ": " + wrong);
                count(name + ": SILENT CORRUPTION");
                return false;
            }
            count(name + ": ok");
            return true;
        } catch (TimeoutException e) {
            hangs++;
            incidents.add("HANG " + name);
            f.cancel(true);
            return false;
        } catch (java.util.concurrent.ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof KvException) {
                count(name + ": failed cleanly (" + c.getClass().getSimpleName() + ")");
            } else {
                otherExceptions++;
                incidents.add("FOREIGN " + name + ": " + c);
                count(name + ": other exception (" + c.getClass().getSimpleName() + ")");
            }
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    private Map<String, Long> injectedRounds(Path root, ExecutorService ops) throws Exception {
        List<Path> d = store.ssdDirectories(root);
        Random rnd = new Random(seed);
        Map<String, Acked> acked = new LinkedHashMap<>();
        Map<String, Long> injected = new TreeMap<>();
        int next = 0;
        for (int round = 0; round < rounds; round++) {
            FaultInjection.Builder faults = FaultInjection.builder(seed + round).eio(rate).tornRead(rate)
                    .bitFlipRead(rate).bitFlipDisk(rate / 2).tornWrite(rate / 2).enospc(rate)
                    .latencySpikes(rate, 20);
            if (round % 6 == 5) {
                faults.vanishingDevice(round / 6 % store.devices, 50 + rnd.nextInt(400));
            }
            FaultInjection fi = faults.build();
            Set<String> damagedByMedia = new HashSet<>();
            // Two sequences with replicas committed without faults, for the faulty round to read: a
            // clustering does so much I/O that, under faults, it rarely commits.
            try (KvEngine e = KvEngine.open(config(d).build())) {
                for (int i = 0; i < 2 && acked.size() < 60; i++) {
                    String id = "s" + next++;
                    long s = rnd.nextLong();
                    int tokens = 32 + rnd.nextInt(100);
                    try (KvSequence q = e.createSequence(id, CampaignData.SHAPE)) {
                        CampaignData.append(q, s, tokens);
                        for (int l = 0; l < CampaignData.SHAPE.layers(); l++) {
                            Swarm.clusterLayer(q, l, CampaignData.clustersWithReplicas(tokens),
                                    io.kvoffload.strategy.swarm.ClusterOptions.defaults());
                        }
                        q.commit();
                    }
                    acked.put(id, new Acked(s, tokens));
                }
            }
            try (KvEngine e = KvEngine.open(config(d).faultInjection(fi).build())) {
                for (int op = 0; op < opsPerRound; op++) {
                    List<String> ids = new ArrayList<>(acked.keySet());
                    // Far from capacity: an eviction is not a loss, but it would read as one.
                    int kind = ids.size() > 60 ? 9 : rnd.nextInt(10);
                    if (kind < 4 || ids.isEmpty()) {
                        String id = "s" + next++;
                        long s = rnd.nextLong();
                        int tokens = 16 + rnd.nextInt(120);
                        // Every other new sequence is laid out in clusters where half the tokens have a
                        // second copy (Swarm replicas), so failover and repair are exercised too.
                        boolean clustered = rnd.nextBoolean();
                        if (run(ops, clustered ? "commit new (clustered, replicas)" : "commit new", () -> {
                            try (KvSequence q = e.createSequence(id, CampaignData.SHAPE)) {
                                CampaignData.append(q, s, tokens);
                                if (clustered) {
                                    for (int l = 0; l < CampaignData.SHAPE.layers(); l++) {
                                        Swarm.clusterLayer(q, l, CampaignData.clustersWithReplicas(tokens),
                                                io.kvoffload.strategy.swarm.ClusterOptions.defaults());
                                    }
                                }
                                q.commit();
                            }
                            return null;
                        })) {
                            acked.put(id, new Acked(s, tokens));
                        }
                    } else if (kind < 6) {
                        String id = ids.get(rnd.nextInt(ids.size()));
                        Acked a = acked.get(id);
                        int more = 1 + rnd.nextInt(40);
                        if (run(ops, "append + commit", () -> {
                            try (KvSequence q = e.openSequenceForAppend(id)) {
                                CampaignData.append(q, a.seed, more);
                                q.commit();
                            }
                            return null;
                        })) {
                            acked.put(id, new Acked(a.seed, a.tokens + more));
                        }
                    } else if (kind < 9) {
                        String id = ids.get(rnd.nextInt(ids.size()));
                        Acked a = acked.get(id);
                        run(ops, "read", () -> {
                            try (KvSequence q = e.openSequence(id)) {
                                return CampaignData.verify(q, a.seed, a.tokens);
                            }
                        });
                    } else {
                        String id = ids.get(rnd.nextInt(ids.size()));
                        if (run(ops, "delete", () -> e.deleteSequence(id) ? null : "sequence " + id + " was not found")) {
                            acked.remove(id);
                        }
                    }
                }
                KvStats st = e.stats();
                st.injectedFaults().forEach((k, v) -> injected.merge(k, v, Long::sum));
                failovers += st.failovers();
                repairs += st.repairs();
                rereads += st.rereads();
                if (st.injectedFaults().getOrDefault("BIT_FLIP_DISK", 0L) + st.injectedFaults().getOrDefault("TORN_WRITE",
                        0L) > 0) {
                    damagedByMedia.add("*");
                }
            }
            // Without faults: every acknowledged sequence is there; its data exact, or refused by its
            // checksum where media damage was injected (then it is deleted so later rounds start clean).
            try (KvEngine e = KvEngine.open(config(d).build())) {
                Set<String> present = new HashSet<>();
                for (SequenceInfo i : e.sequences()) {
                    present.add(i.id());
                }
                for (Map.Entry<String, Acked> a : new ArrayList<>(acked.entrySet())) {
                    String id = a.getKey();
                    if (!present.contains(id)) {
                        count("verify: lost");
                        incidents.add("LOST " + id + " after round " + round + " " + e.stats());
                        acked.remove(id);
                        continue;
                    }
                    try (KvSequence q = e.openSequence(id)) {
                        String wrong = CampaignData.verify(q, a.getValue().seed, a.getValue().tokens);
                        if (wrong == null) {
                            count("verify: intact");
                        } else {
                            silent++;
                            incidents.add("SILENT verify " + id + ": " + wrong);
                            count("verify: SILENT CORRUPTION");
                        }
                    } catch (KvException x) {
                        count("verify: media damage detected (" + x.getClass().getSimpleName() + ")"
                                + (damagedByMedia.isEmpty() ? " WITHOUT media faults" : ""));
                        if (damagedByMedia.isEmpty()) {
                            incidents.add("UNEXPECTED " + id + ": " + x);
                        }
                        e.deleteSequence(id);
                        acked.remove(id);
                    }
                }
            }
            out.printf(Locale.ROOT, "round %d/%d: %d sequences acknowledged%n", round + 1, rounds, acked.size());
            out.flush();
        }
        return injected;
    }

    /** What the kill -9 part saw. */
    record KillResult(int kills, long afterOpen, long commitsChecked, long lost, long silent, long deletesSeen) {}

    private KillResult killRounds(Path root) throws Exception {
        List<Path> d = store.ssdDirectories(root);
        Random rnd = new Random(seed ^ 0x5DEECE66DL);
        Map<String, Acked> acked = new LinkedHashMap<>();
        Set<String> maybeDeleted = new HashSet<>();
        long checked = 0;
        long lost = 0;
        long wrong = 0;
        long deletes = 0;
        long readies = 0;
        String java = ProcessHandle.current().info().command().orElse("java");
        for (int k = 0; k < kills; k++) {
            List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED",
                    "-Dorg.slf4j.simpleLogger.defaultLogLevel=off", "-cp", System.getProperty("java.class.path"),
                    WriterChild.class.getName(), store.backend, String.valueOf(seed + 1000L * k)));
            d.forEach(x -> cmd.add(x.toString()));
            // The child's output goes to a file, read once it is dead: a pipe may lose its tail to
            // the kill. The kill lands anywhere from JVM start-up (engine open included) to busy writing.
            Path log = root.resolve("writer-" + k + ".log");
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            Thread.sleep(100 + rnd.nextInt(1100));
            p.destroyForcibly(); // SIGKILL
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                hangs++;
                incidents.add("HANG: writer " + k + " did not die");
            }
            for (String line : Files.readAllLines(log, StandardCharsets.UTF_8)) {
                String[] f = line.split(" ");
                switch (f[0]) {
                    case "READY" -> readies++;
                    case "COMMITTED" -> {
                        if (f.length < 4) {
                            continue; // the kill cut the line: not acknowledged
                        }
                        acked.put(f[1], new Acked(Long.parseLong(f[2]), Integer.parseInt(f[3])));
                        maybeDeleted.remove(f[1]);
                    }
                    case "DELETING" -> maybeDeleted.add(f[1]);
                    case "DELETED" -> {
                        acked.remove(f[1]);
                        maybeDeleted.remove(f[1]);
                        deletes++;
                    }
                    default -> {
                        if (!line.isBlank()) {
                            incidents.add("writer said: " + line);
                        }
                    }
                }
            }
            Files.delete(log);
            try (KvEngine e = KvEngine.open(config(d).build())) {
                Set<String> present = new HashSet<>();
                e.sequences().forEach(i -> present.add(i.id()));
                for (String id : maybeDeleted) {
                    if (!present.contains(id)) {
                        acked.remove(id); // the deletion became durable before the kill
                    }
                }
                maybeDeleted.clear();
                for (Map.Entry<String, Acked> a : acked.entrySet()) {
                    checked++;
                    if (!present.contains(a.getKey())) {
                        lost++;
                        incidents.add("LOST after kill " + k + ": " + a.getKey());
                        continue;
                    }
                    try (KvSequence q = e.openSequence(a.getKey())) {
                        // A commit in flight at the kill may have become durable: never shorter than acknowledged.
                        String w = q.tokenCount() >= a.getValue().tokens
                                ? CampaignData.verify(q, a.getValue().seed, q.tokenCount()) : "shorter than acknowledged";
                        if (w != null) {
                            wrong++;
                            incidents.add("SILENT after kill " + k + ": " + a.getKey() + " " + w);
                        }
                    } catch (KvException x) {
                        lost++;
                        incidents.add("UNREADABLE after kill " + k + ": " + a.getKey() + " " + x);
                    }
                }
                for (String id : present) {
                    if (!acked.containsKey(id)) {
                        // Committed by the child just before the kill, unacknowledged: adopt what is there.
                        try (KvSequence q = e.openSequence(id)) {
                            long s = WriterChild.seedOf(id);
                            if (CampaignData.verify(q, s, q.tokenCount()) != null) {
                                wrong++;
                                incidents.add("SILENT unacknowledged " + id);
                            } else {
                                acked.put(id, new Acked(s, q.tokenCount()));
                            }
                        }
                    }
                }
            }
            if ((k + 1) % 10 == 0 || k + 1 == kills) {
                out.printf(Locale.ROOT, "kill %d/%d: %d sequences acknowledged%n", k + 1, kills, acked.size());
                out.flush();
            }
        }
        return new KillResult(kills, readies, checked, lost, wrong, deletes);
    }

    private void report(Map<String, Long> injected, KillResult k, double injectedSeconds, double killSeconds) {
        long total = injected.entrySet().stream().filter(e -> !e.getKey().equals("VANISHED"))
                .mapToLong(Map.Entry::getValue).sum();
        out.println();
        out.printf(Locale.ROOT, "## Injected faults (%d rounds, rate %.3f per kind per request, %s backend, %d devices, %.0f s)%n%n",
                rounds, rate, store.backend, store.devices, injectedSeconds);
        MarkdownTable t = new MarkdownTable("fault", "injected").alignRight(1);
        injected.forEach((kind, n) -> t.row(kind, n));
        t.row("total (without VANISHED events)", total);
        out.println(t.render());
        out.println();
        MarkdownTable o = new MarkdownTable("operation: outcome", "count").alignRight(1);
        outcomes.forEach((what, n) -> o.row(what, n));
        o.row("reads served from another copy (failovers)", failovers);
        o.row("bad copies rewritten (repairs)", repairs);
        o.row("single-copy reads that verified when repeated (rereads)", rereads);
        o.row("silent corruptions", silent);
        o.row("hangs", hangs);
        o.row("exceptions other than KvException", otherExceptions);
        out.println(o.render());
        out.println();
        out.printf(Locale.ROOT, "## kill -9 of a writer (%.0f s)%n%n", killSeconds);
        MarkdownTable kt = new MarkdownTable("kills", "of which after open", "acknowledged sequences checked", "lost",
                "silently wrong", "durable deletions seen").alignRight(0, 1, 2, 3, 4, 5);
        kt.row(k.kills, k.afterOpen, k.commitsChecked, k.lost, k.silent, k.deletesSeen);
        out.println(kt.render());
        if (!incidents.isEmpty()) {
            out.println();
            out.println("Incidents (first 20 of " + incidents.size() + "):");
            incidents.stream().limit(20).forEach(i -> out.println("- " + i));
        }
    }
}
