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
}
