package io.kvoffload;

import io.kvoffload.strategy.swarm.Swarm;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.strategy.swarm.ClusterSummary;
import io.kvoffload.strategy.swarm.ClusterOptions;
import io.kvoffload.internal.swarm.Clustering;
import io.kvoffload.internal.swarm.ClusteringConfig;
import io.kvoffload.internal.swarm.CoActivationClustering;
import io.kvoffload.internal.swarm.CoActivationNormaliser;
import io.kvoffload.internal.swarm.CoActivationProfile;
import io.kvoffload.internal.swarm.ExpansionRule;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code Swarm.clusterLayer(sequence, layer, int[][], options)}: caller-given clusters are stored,
 * persisted and read back bit-exact, through a decoder too; the placement choice decides the SSDs;
 * bad clusters are rejected with the argument, the value and the allowed range.
 */
class CallerClusterLayoutTest {
    static final KvShape SHAPE = SwarmOfflinePhaseTest.SHAPE;
    static final int TOKENS = SwarmOfflinePhaseTest.TOKENS;

    @TempDir
    Path root;

    /** Positional groups of {@code g} consecutive tokens. */
    static int[][] positional(int tokens, int g) {
        return io.kvoffload.strategy.SelectionStrategy.pages(tokens, g);
    }

    @Test
    void positionalLayoutPersistsAndReadsBackBitExactThroughTheDecoder() throws Exception {
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(9).build());
        KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(root, 4), "portable").blockTokens(16).build();
        int[][] clusters = positional(TOKENS, 16);
        // A replica: token 5 also joins the last cluster.
        clusters[clusters.length - 1] = java.util.Arrays.copyOf(clusters[clusters.length - 1], 17);
        clusters[clusters.length - 1][16] = 5;
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.createSequence("pos", SHAPE)) {
            SwarmOfflinePhaseTest.store(s, w);
            ClusterSummary sum = Swarm.clusterLayer(s, 0, clusters, ClusterOptions.defaults());
            Swarm.clusterLayer(s, 1, positional(TOKENS, 16), ClusterOptions.defaults());
            assertEquals(clusters.length, sum.clusters());
            assertEquals(TOKENS, sum.tokens());
            s.commit();
        }
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.openSequence("pos")) {
            assertEquals(clusters.length, Swarm.clusterCount(s, 0));
            for (int c = 0; c < clusters.length; c++) {
                // Members come back in storage order (device by device), so compare them as sets.
                int[] want = clusters[c].clone();
                int[] got = Swarm.clusterMembers(s, 0, c);
                java.util.Arrays.sort(want);
                java.util.Arrays.sort(got);
                assertArrayEquals(want, got, "cluster " + c);
                assertEquals(clusters[c][0], Swarm.clusterMedoid(s, 0, c), "the first element is the medoid");
            }
            SwarmOfflinePhaseTest.assertClustersBitExact(s, w, 0);
            byte[][] exp = SwarmOfflinePhaseTest.expected(w, 0);
            int[] positions = {5, 17, 18, 19, 700, 2048, 3000, 3001};
            try (KvDecoder d = s.decoder(DecodeOptions.builder().strategy(Swarm.defaults()).cacheBytes(0).build());
                    KvView v = d.prefetch(0, positions, positions.length).await()) {
                assertEquals(positions.length, v.tokenCount());
                int row = SHAPE.headDim() * SHAPE.dtype().bytes();
                for (int r = 0; r < v.tokenCount(); r++) {
                    int p = v.position(r);
                    for (int h = 0; h < SHAPE.kvHeads(); h++) {
                        long src = (long) p * SHAPE.halfEntryBytes() + (long) h * row;
                        assertEquals(-1, v.keys(h).asSlice((long) r * row, row)
                                .mismatch(MemorySegment.ofArray(exp[0]).asSlice(src, row)), "K of " + p);
                        assertEquals(-1, v.values(h).asSlice((long) r * row, row)
                                .mismatch(MemorySegment.ofArray(exp[1]).asSlice(src, row)), "V of " + p);
                    }
                }
                assertTrue(d.stats().bytesRead() > 0 && d.stats().readRequests() > 0);
            }
        }
    }

    @Test
    void firstDevicePlacementPutsSingletonClustersOnDeviceZero() throws Exception {
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(9).build());
        // Room for every singleton extent on one device (a full device would hand shares to another).
        KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(root, 4), "portable").blockTokens(16)
                .deviceCapacityBytes(64L << 20).build();
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.createSequence("p", SHAPE)) {
            SwarmOfflinePhaseTest.store(s, w);
            long[] before = written(e);
            Swarm.clusterLayer(s, 0, positional(TOKENS, 1), ClusterOptions.defaults()
                    .withPlacement(ClusterOptions.Placement.FIRST_DEVICE));
            long[] firstDevice = delta(written(e), before);
            before = written(e);
            Swarm.clusterLayer(s, 1, positional(TOKENS, 1), ClusterOptions.defaults());
            long[] roundRobin = delta(written(e), before);
            assertTrue(firstDevice[0] > 0 && firstDevice[1] == 0 && firstDevice[2] == 0 && firstDevice[3] == 0,
                    java.util.Arrays.toString(firstDevice));
            for (long b : roundRobin) {
                assertTrue(b > 0, "Eq. 7 spreads singletons over all devices: " + java.util.Arrays.toString(roundRobin));
            }
            SwarmOfflinePhaseTest.assertClustersBitExact(s, w, 0);
        }
    }

    private static long[] written(KvEngine e) {
        return e.stats().devices().stream().mapToLong(KvStats.Device::bytesWritten).toArray();
    }

    private static long[] delta(long[] a, long[] b) {
        long[] d = new long[a.length];
        for (int i = 0; i < a.length; i++) {
            d[i] = a[i] - b[i];
        }
        return d;
    }

    @Test
    void badClustersNameTheArgumentValueAndRange() throws Exception {
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(9).build());
        KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(root, 2), "portable").blockTokens(16).build();
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.createSequence("bad", SHAPE)) {
            SwarmOfflinePhaseTest.store(s, w);
            ClusterOptions o = ClusterOptions.defaults();
            int[][] outOfRange = positional(TOKENS, 16);
            outOfRange[3][2] = TOKENS;
            assertMessage(() -> Swarm.clusterLayer(s, 0, outOfRange, o), "clusters[3][2] = 4096 is out of range; allowed: 0..4095");
            int[][] empty = positional(TOKENS, 16);
            empty[1] = new int[0];
            assertMessage(() -> Swarm.clusterLayer(s, 0, empty, o), "clusters[1] is empty");
            int[][] repeat = positional(TOKENS, 16);
            repeat[0][1] = 0;
            assertMessage(() -> Swarm.clusterLayer(s, 0, repeat, o), "clusters[0][1] = 0 repeats a member of unit 0");
            int[][] uncovered = positional(TOKENS - 16, 16);
            assertMessage(() -> Swarm.clusterLayer(s, 0, uncovered, o), "position 4080 is in no unit of clusters");
            assertMessage(() -> Swarm.clusterLayer(s, 0, new int[0][], o), "clusters.length = 0 is out of range");
            assertMessage(() -> Swarm.clusterLayer(s, 2, positional(TOKENS, 16), o), "layer");
            assertThrows(NullPointerException.class, () -> Swarm.clusterLayer(s, 0, (int[][]) null, o));
            assertThrows(NullPointerException.class, () -> ClusterOptions.defaults().withPlacement(null));
            assertEquals(0, Swarm.clusterCount(s, 0), "nothing was laid out");
        }
    }

    private static void assertMessage(org.junit.jupiter.api.function.Executable call, String part) {
        IllegalArgumentException ex = assertThrows(IllegalArgumentException.class, call);
        assertTrue(ex.getMessage().contains(part), ex.getMessage());
    }

    @Test
    void medoidOnlyExpansionJoinsEveryNeighbourOfTheMedoid() {
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(5).build());
        List<int[]> sets = SwarmOfflinePhaseTest.activationSets(w, 0, 32, TOKENS, true);
        CoActivationProfile p = CoActivationProfile.fromActivationSets(TOKENS, sets, CoActivationNormaliser.perQuery());
        ClusteringConfig cfg = ClusteringConfig.defaults().withParallelism(1);
        Clustering eq5 = new CoActivationClustering(cfg).cluster(p);
        Clustering loose = new CoActivationClustering(cfg.withExpansion(ExpansionRule.MEDOID_ONLY)).cluster(p);
        assertTrue(loose.stats().meanClusterSize() >= eq5.stats().meanClusterSize(),
                loose.stats() + " vs " + eq5.stats());
        assertEquals(ExpansionRule.MEAN_DISTANCE, cfg.expansion(), "the paper's rule is the default");
    }
}
