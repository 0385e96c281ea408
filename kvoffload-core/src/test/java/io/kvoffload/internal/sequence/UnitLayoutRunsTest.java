package io.kvoffload.internal.sequence;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvoffload.DType;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.strategy.Strategies;
import io.kvoffload.testing.TestEngines;
import java.nio.file.Path;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The default page layout of entries smaller than an aligned read: a page's members go to a device in
 * runs that fill one read, so a 16-token page of 512-byte entries is two 4 KiB extents on two SSDs
 * instead of four half-empty ones, and everything reads back bit-exact.
 */
class UnitLayoutRunsTest {
    @TempDir
    Path root;

    @Test
    void smallEntriesFillWholeReadsAndReadBackExactly() {
        KvShape shape = new KvShape(2, 4, 1, 128, DType.BF16); // 512-byte entries
        int tokens = 16 * 40 + 5;
        try (KvEngine e = KvEngine.open(TestEngines.config(TestEngines.deviceDirs(root, 4), "portable").build())) {
            try (KvSequence s = e.createSequence("runs", shape)) {
                TestEngines.append(s, 7, tokens, 64);
                for (int l = 0; l < shape.layers(); l++) {
                    Strategies.named("quest").layOut(s, l);
                }
                s.commit();
                for (int l = 0; l < shape.layers(); l++) {
                    ClusterLayout c = SequenceAccess.of(s).ledger().layer(l).clusters();
                    assertEquals((tokens + 15) / 16, c.clusterCount());
                    for (int page = 0; page < c.clusterCount(); page++) {
                        int[] members = c.members(page);
                        TreeSet<Integer> devices = new TreeSet<>();
                        for (int i = 0; i < members.length; i++) {
                            int t = members[i];
                            devices.add(c.device(t, 0));
                            if (i % 8 != 0) { // within a run: the next slot of the same extent
                                assertEquals(c.device(members[i - 1], 0), c.device(t, 0), "page " + page + " member " + i);
                                assertEquals(c.offset(members[i - 1], 0) + shape.entryBytes(), c.offset(t, 0),
                                        "page " + page + " member " + i);
                            }
                        }
                        assertEquals((members.length + 7) / 8, devices.size(), "page " + page + " devices " + devices);
                    }
                }
            }
            TestEngines.assertExact(e, "runs", 7, tokens);
        }
    }

    /**
     * The default strategy's own layout: pages of its per-layer block size (4 tokens of 2 KiB entries at
     * 34,000 tokens, on a layer whose fewest rows, 12 of 128, cost three quarters of the reference sweep:
     * 8,500 blocks), each whole on one device as one extent (an alignment run alone would split it over
     * two), two adjacent pages a device (16 KiB runs), the next two on the next device; everything reads
     * back bit-exact.
     */
    @Test
    void theDefaultsPagesAreEachWholeOnOneDevice() {
        KvShape shape = new KvShape(1, 16, 4, 128, DType.BF16); // 2 KiB entries: an aligned read holds 2
        int tokens = 34_000;
        try (KvEngine e = KvEngine.open(TestEngines.config(TestEngines.deviceDirs(root, 4), "portable")
                .deviceCapacityBytes(64L << 20).build())) {
            try (KvSequence s = e.createSequence("pages", shape)) {
                TestEngines.append(s, 11, tokens, 512);
                Strategies.defaultStrategy().layOut(s, 0);
                s.commit();
                ClusterLayout c = SequenceAccess.of(s).ledger().layer(0).clusters();
                assertEquals(tokens / 4, c.clusterCount(), "4-token pages");
                // Runs of 16 KiB: two 4-token pages of 2 KiB entries a device, adjacent, then the next device.
                for (int page = 0; page < c.clusterCount(); page++) {
                    int[] members = c.members(page);
                    assertEquals(page / 2 % 4, c.device(members[0], 0), "page " + page + "'s device");
                    for (int i = 1; i < members.length; i++) {
                        assertEquals(c.device(members[0], 0), c.device(members[i], 0), "page " + page + " member " + i);
                        assertEquals(c.offset(members[i - 1], 0) + shape.entryBytes(), c.offset(members[i], 0),
                                "page " + page + " member " + i);
                    }
                    if (page % 2 == 1) { // right after the run's first page on the same SSD: one read for both
                        int[] before = c.members(page - 1);
                        assertEquals(c.offset(before[before.length - 1], 0) + shape.entryBytes(), c.offset(members[0], 0),
                                "page " + page + " follows page " + (page - 1));
                    }
                }
            }
            TestEngines.assertExact(e, "pages", 11, tokens);
        }
    }

    /**
     * Head sharded, the default's layout keeps a run of its small pages at one rotation: 8-token pages of
     * 512-byte head-group slices, four pages (16 KiB) a run, each head group's slices of the run side by
     * side on one device, the next run one device further; everything reads back bit-exact.
     */
    @Test
    void headShardedRunsShareARotation() {
        KvShape shape = new KvShape(1, 4, 4, 128, DType.BF16); // 2 KiB entries, 512-byte slices on 4 devices
        int tokens = 3000, shards = 4, devices = 4;
        try (KvEngine e = KvEngine.open(TestEngines.config(TestEngines.deviceDirs(root, devices), "portable")
                .placement(io.kvoffload.Placement.HEAD_SHARDED).build())) {
            try (KvSequence s = e.createSequence("sharded", shape)) {
                TestEngines.append(s, 13, tokens, 512);
                Strategies.defaultStrategy().layOut(s, 0);
                s.commit();
                ClusterLayout c = SequenceAccess.of(s).ledger().layer(0).clusters();
                assertEquals(shards, c.shards());
                assertEquals((tokens + 7) / 8, c.clusterCount(), "8-token pages");
                for (int page = 0; page < c.clusterCount(); page++) {
                    int[] members = c.members(page);
                    for (int g = 0; g < shards; g++) {
                        int device = io.kvoffload.internal.storage.HeadShards.device(
                                io.kvoffload.internal.storage.HeadShards.rotation(0, page / 4, devices), g, shards, devices);
                        for (int t : members) {
                            assertEquals(device, c.device(t * shards + g, 0), "page " + page + " head group " + g);
                        }
                        if (page % 4 != 0) { // within a run: right after the previous page's slices
                            int[] before = c.members(page - 1);
                            assertEquals(c.offset(before[before.length - 1] * shards + g, 0) + shape.entryBytes() / shards,
                                    c.offset(members[0] * shards + g, 0), "page " + page + " head group " + g);
                        }
                    }
                }
            }
            TestEngines.assertExact(e, "sharded", 13, tokens);
        }
    }
}
