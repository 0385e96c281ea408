package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.testing.KvTestData;
import io.kvoffload.testing.KvViews;
import io.kvoffload.testing.Layouts;
import io.kvoffload.testing.TestEngines;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/**
 * Head-sharded cluster layouts ({@link Placement#HEAD_SHARDED}) of random clusterings with
 * replicas, shapes and device counts: every (token, KV head) is stored exactly once per copy of the
 * token (each copy's head groups partition the heads), each unit's head groups sit on distinct
 * devices, and after a restart reads and decoder views return every token bit-exact.
 */
class HeadShardedLayoutProperties {

    @Property(tries = 12)
    void everyTokenHeadIsStoredOncePerCopyAndReadsBackBitExact(@ForAll long seed,
            @ForAll @IntRange(min = 1, max = 4) int devices, @ForAll @IntRange(min = 1, max = 24) int maxClusterSize)
            throws Exception {
        Random rnd = new Random(seed);
        int kvHeads = new int[] {1, 2, 3, 4, 6, 8}[rnd.nextInt(6)];
        KvShape shape = new KvShape(1, kvHeads * 2, kvHeads, new int[] {8, 64}[rnd.nextInt(2)],
                DType.values()[rnd.nextInt(3)]);
        int expectedShards = 1;
        for (int s = Math.min(kvHeads, devices); s >= 1; s--) {
            if (kvHeads % s == 0) {
                expectedShards = s;
                break;
            }
        }
        Path root = Files.createTempDirectory("kvo-hs");
        try {
            KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(root, devices), "portable")
                    .blockTokens(1 + rnd.nextInt(16)).placement(Placement.HEAD_SHARDED).build();
            int tokens = 20 + rnd.nextInt(200);
            int clustered = 1 + rnd.nextInt(tokens);
            String id;
            try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.createSequence(shape)) {
                id = s.id();
                TestEngines.append(s, seed, tokens, 1 + rnd.nextInt(64));
                s.commit();
                Layouts.applyClusterPlan(s, 0, ClusterLayoutProperties.randomPlan(rnd, clustered, devices,
                        maxClusterSize));
                s.commit();
            }
            try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.openSequence(id)) {
                ClusterLayout cl = Layouts.clusterLayout(s, 0);
                int shards = cl.shards();
                assertEquals(expectedShards, shards, kvHeads + " KV heads on " + devices + " devices");
                int headsPerShard = kvHeads / shards;
                int[] copies = new int[clustered];
                for (int c = 0; c < cl.clusterCount(); c++) {
                    int[] members = cl.members(c);
                    // (token, head) occurrences in this cluster: each exactly once.
                    int[][] seen = new int[clustered][kvHeads];
                    int from = cl.firstEntry(c);
                    for (int e2 = from; e2 < from + members.length * shards; e2++) {
                        int g = cl.entryShard(e2);
                        for (int h = g * headsPerShard; h < (g + 1) * headsPerShard; h++) {
                            seen[cl.entryToken(e2)][h]++;
                        }
                    }
                    for (int t : members) {
                        copies[t]++;
                        for (int h = 0; h < kvHeads; h++) {
                            assertEquals(1, seen[t][h], "cluster " + c + " token " + t + " head " + h);
                        }
                    }
                    Set<Integer> used = new HashSet<>();
                    for (int g = cl.clusterSegmentStart(c); g < cl.clusterSegmentEnd(c); g++) {
                        assertTrue(used.add(cl.segmentDevice(g)), "cluster " + c + ": two head groups on one device");
                    }
                }
                assertEquals(cl.storedEntries(), java.util.Arrays.stream(copies).sum() * shards,
                        "no stored entry outside the clusters' (token, head group) pairs");
                for (int t = 0; t < clustered; t++) {
                    for (int g = 0; g < shards; g++) {
                        assertEquals(copies[t], cl.count(t * shards + g), "copies of token " + t + " head group " + g);
                    }
                }
                assertNull(TestEngines.verify(s, seed, TestEngines.all(tokens)));
                byte[][] expected;
                try (Arena a = Arena.ofConfined()) {
                    expected = new byte[][] {
                            KvTestData.tokens(a, shape, seed, 0, 0, tokens, false).toArray(ValueLayout.JAVA_BYTE),
                            KvTestData.tokens(a, shape, seed, 0, 0, tokens, true).toArray(ValueLayout.JAVA_BYTE)};
                }
                int[] positions = TestEngines.shuffled(rnd, clustered);
                int n = Math.min(positions.length, 1 + rnd.nextInt(64));
                DecodeOptions o = DecodeOptions.builder().strategy(Swarm.defaults()).cacheBytes(0).sinkTokens(0)
                        .localWindow(0).build();
                try (KvDecoder d = s.decoder(o); KvView v = d.prefetch(0, positions, n)) {
                    v.await();
                    assertEquals(n, KvViews.assertBitExact(v, expected).cardinality());
                }
            }
        } finally {
            TestEngines.deleteRecursively(root);
        }
    }
}
