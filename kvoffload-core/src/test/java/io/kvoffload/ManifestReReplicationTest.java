package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.testing.TestEngines;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A crash part-way through a commit's manifest copies leaves a sequence with one copy. Recovery
 * serves it from that copy and writes the missing ones again, so that when the device with the one
 * copy goes away later the sequence is still seen and its extents are never handed to another
 * sequence (found by {@code CrashRecoveryTest}'s degraded run: the other sequence was quarantined
 * once the device came back).
 */
class ManifestReReplicationTest {
    @TempDir
    Path root;

    @Test
    void aSequenceLeftWithOneManifestCopyGetsItsOtherCopyBackAtTheNextOpen() throws Exception {
        List<Path> d = TestEngines.deviceDirs(root, 3);
        KvConfig all = DeletionDurabilityTest.config(d);
        try (KvEngine e = KvEngine.open(all)) {
            DeletionDurabilityTest.commit(e, "a", 1, 40);
        }
        List<Path> holders = DeletionDurabilityTest.holdersOf(d, "a");
        assertEquals(2, holders.size(), holders.toString());
        // The crash: the second copy was never written.
        Files.delete(holders.get(1).resolve("manifests").resolve("a.kvom"));
        assertEquals(1, DeletionDurabilityTest.holdersOf(d, "a").size());

        try (KvEngine e = KvEngine.open(all)) {
            DeletionDurabilityTest.assertExact(e, "a", 1, 40);
        }
        assertEquals(holders, DeletionDurabilityTest.holdersOf(d, "a"), "the missing copy is written again");

        // The device of the first copy away: "a" is still seen, so its space is not reused.
        List<Path> degraded = new ArrayList<>(d);
        degraded.remove(holders.get(0));
        try (KvEngine e = KvEngine.open(DeletionDurabilityTest.config(degraded))) {
            assertTrue(e.sequences().stream().anyMatch(s -> s.id().equals("a")));
            for (int i = 0; i < 6; i++) {
                DeletionDurabilityTest.commit(e, "b" + i, 10 + i, 40);
            }
        }
        try (KvEngine e = KvEngine.open(all)) {
            assertTrue(e.stats().quarantine().isEmpty(), e.stats().quarantine().toString());
            DeletionDurabilityTest.assertExact(e, "a", 1, 40);
            for (int i = 0; i < 6; i++) {
                DeletionDurabilityTest.assertExact(e, "b" + i, 10 + i, 40);
            }
        }
    }

    /**
     * The copy written again is byte for byte the one recovery used, and the copy that was there is left
     * as it was: a re-encoded copy beside the original (moved to {@code .prev}) made the copies of one
     * commit disagree at the next open, and the sequence was quarantined (found 2026-11-28 by the fault
     * campaign, on sequences laid out in clusters with replicas).
     */
    @Test
    void theCopyWrittenAgainIsTheSameBytesAndTheOtherCopyIsLeftAlone() throws Exception {
        List<Path> d = TestEngines.deviceDirs(root, 3);
        KvConfig all = DeletionDurabilityTest.config(d);
        KvShape shape = new KvShape(2, 8, 2, 16, DType.BF16);
        int tokens = 40;
        try (KvEngine e = KvEngine.open(all); KvSequence s = e.createSequence("c", shape)) {
            TestEngines.append(s, 3, tokens, 16);
            for (int l = 0; l < shape.layers(); l++) {
                io.kvoffload.strategy.swarm.Swarm.clusterLayer(s, l, clustersWithReplicas(tokens),
                        io.kvoffload.strategy.swarm.ClusterOptions.defaults());
            }
            s.commit();
        }
        List<Path> holders = DeletionDurabilityTest.holdersOf(d, "c");
        assertEquals(2, holders.size(), holders.toString());
        Path kept = holders.get(0).resolve("manifests").resolve("c.kvom");
        byte[] original = Files.readAllBytes(kept);
        Files.delete(holders.get(1).resolve("manifests").resolve("c.kvom"));
        try (KvEngine e = KvEngine.open(all)) {
            TestEngines.assertExact(e, "c", 3, tokens);
        }
        assertEquals(holders, DeletionDurabilityTest.holdersOf(d, "c"), "the missing copy is written again");
        org.junit.jupiter.api.Assertions.assertArrayEquals(original, Files.readAllBytes(kept), "the kept copy as it was");
        org.junit.jupiter.api.Assertions.assertArrayEquals(original,
                Files.readAllBytes(holders.get(1).resolve("manifests").resolve("c.kvom")), "the same bytes again");
        try (KvEngine e = KvEngine.open(all)) {
            assertTrue(e.stats().quarantine().isEmpty(), e.stats().quarantine().toString());
            TestEngines.assertExact(e, "c", 3, tokens);
        }
    }

    /**
     * The manifest encoding is canonical: a copy decoded and encoded again is the same bytes, also for a
     * layer whose positional blocks gave their extents to clusters (their table slots record zeros).
     */
    @Test
    void aDecodedManifestEncodesToTheSameBytes() throws Exception {
        List<Path> d = TestEngines.deviceDirs(root, 3);
        KvShape shape = new KvShape(2, 8, 2, 16, DType.BF16);
        try (KvEngine e = KvEngine.open(DeletionDurabilityTest.config(d)); KvSequence s = e.createSequence("c", shape)) {
            TestEngines.append(s, 3, 40, 16);
            io.kvoffload.strategy.swarm.Swarm.clusterLayer(s, 1, clustersWithReplicas(40),
                    io.kvoffload.strategy.swarm.ClusterOptions.defaults());
            s.commit();
        }
        byte[] file = Files.readAllBytes(DeletionDurabilityTest.holdersOf(d, "c").get(0).resolve("manifests").resolve("c.kvom"));
        org.junit.jupiter.api.Assertions.assertArrayEquals(file,
                io.kvoffload.internal.storage.ManifestTamper.reencode(file));
    }

    /**
     * Copies of one commit that differ only in bytes decoding ignores agree: a store written before the
     * encoding was canonical (a re-replicated copy beside the original) opens with its sequence instead
     * of quarantining it. A copy that says something else still disagrees (MetadataFuzzProperties).
     */
    @Test
    void copiesThatDifferOnlyInIgnoredBytesAgree() throws Exception {
        List<Path> d = TestEngines.deviceDirs(root, 3);
        KvConfig all = DeletionDurabilityTest.config(d);
        KvShape shape = new KvShape(2, 8, 2, 16, DType.BF16);
        try (KvEngine e = KvEngine.open(all); KvSequence s = e.createSequence("c", shape)) {
            TestEngines.append(s, 3, 40, 16);
            io.kvoffload.strategy.swarm.Swarm.clusterLayer(s, 1, clustersWithReplicas(40),
                    io.kvoffload.strategy.swarm.ClusterOptions.defaults());
            s.commit();
        }
        List<Path> holders = DeletionDurabilityTest.holdersOf(d, "c");
        assertEquals(2, holders.size(), holders.toString());
        Path second = holders.get(1).resolve("manifests").resolve("c.kvom");
        byte[] stale = io.kvoffload.internal.storage.ManifestTamper.withStaleEmptySlot(Files.readAllBytes(second));
        assertTrue(!java.util.Arrays.equals(stale, Files.readAllBytes(second)));
        Files.write(second, stale);
        try (KvEngine e = KvEngine.open(all)) {
            assertTrue(e.stats().quarantine().isEmpty(), e.stats().quarantine().toString());
            TestEngines.assertExact(e, "c", 3, 40);
        }
    }

    /** Blocks of 8 consecutive tokens, and every odd token a second time in clusters of 8 (replicas). */
    static int[][] clustersWithReplicas(int tokens) {
        List<int[]> out = new ArrayList<>();
        for (int t = 0; t < tokens; t += 8) {
            out.add(java.util.stream.IntStream.range(t, Math.min(tokens, t + 8)).toArray());
        }
        int[] odd = java.util.stream.IntStream.iterate(1, t -> t < tokens, t -> t + 2).toArray();
        for (int i = 0; i < odd.length; i += 8) {
            out.add(java.util.Arrays.copyOfRange(odd, i, Math.min(odd.length, i + 8)));
        }
        return out.toArray(int[][]::new);
    }
}
