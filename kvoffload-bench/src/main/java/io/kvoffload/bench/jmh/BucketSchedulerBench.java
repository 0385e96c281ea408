package io.kvoffload.bench.jmh;

import io.kvoffload.internal.sched.BucketScheduler;
import io.kvoffload.internal.sched.ReplicaTable;
import java.util.SplittableRandom;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;

/**
 * Plans one decoding step's reads: the activated clusters' entries (1K or 10K, with replicas and
 * cross-cluster duplicates) into per-SSD buckets and one interleaved batch. Run with
 * {@code -prof gc}: the plan must allocate 0 B/op.
 */
public class BucketSchedulerBench extends MicroBenchmark {
    @Param({"1000", "10000"})
    int entries;

    @Param({"4"})
    int devices;

    BucketScheduler scheduler;
    int[] selected;
    BucketScheduler.Replicas replicas;
    BucketScheduler.Residency residency;

    @Setup
    public void setup() {
        SplittableRandom rnd = new SplittableRandom(1);
        int universe = entries * 4;
        ReplicaTable table = new ReplicaTable(universe);
        int[][] dev = table.device;
        long[][] off = table.offset;
        long[] next = new long[devices];
        for (int e = 0; e < universe; e++) {
            int copies = 1 + (rnd.nextInt(10) < 2 ? 1 : 0); // ~20% replicated, as clustering yields
            dev[e] = new int[copies];
            off[e] = new long[copies];
            int d0 = rnd.nextInt(devices);
            for (int r = 0; r < copies; r++) {
                int d = (d0 + r) % devices;
                dev[e][r] = d;
                off[e][r] = (next[d] += 4096);
            }
        }
        // Clusters are runs of consecutive ids; 10% of mentions repeat an entry of another cluster.
        selected = new int[entries];
        int base = rnd.nextInt(universe - entries);
        for (int i = 0; i < entries; i++) {
            selected[i] = rnd.nextInt(10) == 0 ? base + rnd.nextInt(entries) : base + i;
        }
        replicas = table;
        residency = e -> (e & 63) == 0;
        scheduler = new BucketScheduler(devices, 4096, 64, BucketScheduler.Mode.BALANCED);
    }

    @Benchmark
    public int plan() {
        scheduler.plan(selected, selected.length, replicas, residency);
        return scheduler.runs();
    }
}
