package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.testing.StoreSpace;
import io.kvoffload.testing.TestEngines;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A sequence deleted or evicted while a device holding a copy of its manifest is missing stays
 * gone when that device comes back (its stale copy is outvoted by a deletion tombstone); a
 * sequence re-created under a deleted id is the one that comes back; forks keep their shared
 * extents' holders exact. Each scenario makes the manifest-holding device missing on purpose (the
 * holders are chosen by device UUID, so the test finds them), so it fails deterministically
 * without tombstones.
 */
class DeletionDurabilityTest {
    // 1 layer, 4 KiB entries, 16-token blocks: 64 KiB extents, 16 in each 1 MiB pool.
    static final KvShape SHAPE = new KvShape(1, 16, 8, 128, DType.BF16);

    @TempDir
    Path root;

    static KvConfig config(List<Path> dirs) {
        return config(dirs, 1L << 20);
    }

    static KvConfig config(List<Path> dirs, long poolBytes) {
        return TestEngines.config(dirs, "portable").deviceCapacityBytes(poolBytes).blockTokens(16).build();
    }

    /**
     * Three device directories ordered so that the last holds a manifest copy of every sequence
     * (copies go to the devices lowest in UUID order) and, listed last, none of the first two blocks
     * of a one-layer sequence (block b goes to device b): without it, such a sequence stays
     * available, deletable and evictable.
     */
    List<Path> storeWithManifestDeviceLast() {
        return storeWithManifestDeviceLast(root, 1L << 20);
    }

    static List<Path> storeWithManifestDeviceLast(Path root, long poolBytes) {
        List<Path> d = TestEngines.deviceDirs(root, 3);
        try (KvEngine e = KvEngine.open(config(d, poolBytes))) {
            commit(e, "probe", 1, 16);
            List<Path> holders = holdersOf(d, "probe");
            assertEquals(2, holders.size(), holders.toString());
            assertTrue(e.deleteSequence("probe"));
            List<Path> order = new ArrayList<>(d);
            order.remove(holders.get(1));
            order.add(holders.get(1));
            return order;
        }
    }

    static List<Path> holdersOf(List<Path> dirs, String id) {
        return dirs.stream().filter(x -> Files.exists(x.resolve("manifests").resolve(id + ".kvom"))).toList();
    }

    static void commit(KvEngine e, String id, long seed, int tokens) {
        TestEngines.commit(e, id, SHAPE, seed, tokens);
    }

    static void assertExact(KvEngine e, String id, long seed, int tokens) {
        TestEngines.assertExact(e, id, seed, tokens);
    }

    /** {@link #storeWithManifestDeviceLast()} holding "a" ({@code aTokens} of seed 1) and "b" (of seed 2). */
    List<Path> storeWithAAndB(int aTokens, int bTokens) {
        List<Path> d = storeWithManifestDeviceLast();
        try (KvEngine e = KvEngine.open(config(d))) {
            commit(e, "a", 1, aTokens);
            commit(e, "b", 2, bTokens);
        }
        return d;
    }

    static List<String> listed(KvEngine e) {
        return e.sequences().stream().map(SequenceInfo::id).sorted().toList();
    }

    /** Reopened with every device: exactly {@code live} is listed, nothing quarantined, space exact. */
    static void assertOnly(KvEngine e, List<String> live) {
        assertEquals(live, listed(e));
        KvStats st = e.stats();
        assertTrue(st.unavailableDevices().isEmpty() && st.quarantine().isEmpty() && st.unavailableSequences().isEmpty(),
                st.toString());
        StoreSpace.assertExactlyLiveExtents(e, live, SHAPE);
    }

    /** Reopened with every device, only "b" ({@code bTokens} of seed 2) is left, and "a" is collected. */
    static void assertOnlyBWhenAllAreBack(List<Path> d, int bTokens) throws IOException {
        try (KvEngine e = KvEngine.open(config(d))) {
            assertOnly(e, List.of("b"));
            assertExact(e, "b", 2, bTokens);
        }
        assertCollected(d, "a");
    }

    /** No tombstone and no copy of a dead sequence is left once every device has seen the deletion. */
    static void assertCollected(List<Path> dirs, String dead) throws IOException {
        for (Path d : dirs) {
            Path m = d.resolve("manifests");
            if (!Files.isDirectory(m)) {
                continue;
            }
            try (Stream<Path> files = Files.list(m)) {
                List<String> left = files.map(p -> p.getFileName().toString())
                        .filter(n -> n.endsWith(".kvot") || n.startsWith(dead + ".kvom")).toList();
                assertTrue(left.isEmpty(), d + " still holds " + left);
            }
        }
    }

    @Test
    void aSequenceDeletedWhileAManifestDeviceIsMissingStaysDeletedWhenItReturns() throws Exception {
        List<Path> d = storeWithAAndB(32, 32);
        assertTrue(holdersOf(d, "a").contains(d.get(2)));
        try (KvEngine e = KvEngine.open(config(d.subList(0, 2)))) {
            assertTrue(e.stats().unavailableSequences().isEmpty(), e.stats().toString());
            assertTrue(e.deleteSequence("a"));
            commit(e, "c", 3, 48); // may take a's freed extents
        }
        try (KvEngine e = KvEngine.open(config(d))) {
            assertOnly(e, List.of("b", "c"));
            IllegalArgumentException ex = assertThrows(IllegalArgumentException.class, () -> e.openSequence("a"));
            assertTrue(ex.getMessage().contains("names no committed sequence"), ex.getMessage());
            assertExact(e, "b", 2, 32);
            assertExact(e, "c", 3, 48);
        }
        assertCollected(d, "a");
        try (KvEngine e = KvEngine.open(config(d))) { // and once collected, it stays so
            assertOnly(e, List.of("b", "c"));
        }
    }

    @Test
    void theTombstoneOutlivesReopensWithoutTheDeviceAndADamagedCopyOfItIsOutvotedByItsTwin() throws Exception {
        List<Path> d = storeWithAAndB(32, 16);
        try (KvEngine e = KvEngine.open(config(d.subList(0, 2)))) {
            assertTrue(e.deleteSequence("a"));
        }
        List<Path> tombs = new ArrayList<>();
        for (Path x : d.subList(0, 2)) {
            Path t = x.resolve("manifests").resolve("a.kvot");
            if (Files.exists(t)) {
                tombs.add(t);
            }
        }
        assertEquals(2, tombs.size(), "one tombstone in each reachable manifest folder");
        try (KvEngine e = KvEngine.open(config(d.subList(0, 2)))) { // still away: nothing is collected
            assertEquals(List.of("b"), listed(e));
            commit(e, "c", 3, 32);
        }
        assertTrue(Files.exists(tombs.get(0)) && Files.exists(tombs.get(1)));
        Files.writeString(tombs.get(0), "{\"format\": 1, \"id\": \"a\", \"through\": 0}"); // no checksum
        try (KvEngine e = KvEngine.open(config(d))) {
            assertOnly(e, List.of("b", "c"));
            assertExact(e, "c", 3, 32);
            LinkedBlockingQueue<KvDegradation> told = new LinkedBlockingQueue<>();
            e.addDegradationListener(told::add); // it hears what the open found
            KvDegradation ignored = told.poll(10, TimeUnit.SECONDS);
            assertTrue(ignored != null && ignored.kind() == KvDegradation.Kind.MANIFEST_IGNORED
                    && "a".equals(ignored.sequenceId()), String.valueOf(ignored));
        }
        assertCollected(d, "a");
    }

    @Test
    void onlySequencesThatExistedWhenTheDeviceWentAwayGetATombstone() throws Exception {
        List<Path> d = storeWithAAndB(32, 16);
        try (KvEngine e = KvEngine.open(config(d.subList(0, 2)))) {
            for (int i = 0; i < 20; i++) { // churn while degraded leaves no tombstones behind
                commit(e, "n" + i, 10 + i, 16);
                assertTrue(e.deleteSequence("n" + i));
            }
            assertTrue(e.deleteSequence("a"));
            commit(e, "a", 9, 16); // created again: its copies all went where a deletion reaches
            assertTrue(e.deleteSequence("a"));
        }
        List<String> tombs = new ArrayList<>();
        for (Path x : d) {
            if (Files.isDirectory(x.resolve("manifests"))) {
                try (Stream<Path> files = Files.list(x.resolve("manifests"))) {
                    files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".kvot")).forEach(tombs::add);
                }
            }
        }
        assertEquals(List.of("a.kvot", "a.kvot"), tombs, "one tombstone, kept in both reachable manifest folders");
        assertOnlyBWhenAllAreBack(d, 16);
    }

    @Test
    void aTombstoneThatCannotBeWrittenFailsTheDeletionAndChangesNothing() throws Exception {
        List<Path> d = storeWithManifestDeviceLast();
        try (KvEngine e = KvEngine.open(config(d))) {
            commit(e, "a", 1, 32);
        }
        // A directory where the tombstone goes: the rename over it fails, even as root.
        Path planted = Files.createDirectories(d.get(0).resolve("manifests").resolve("a.kvot").resolve("x"));
        try (KvEngine e = KvEngine.open(config(d.subList(0, 2)))) {
            KvIoException ex = assertThrows(KvIoException.class, () -> e.deleteSequence("a"));
            assertTrue(ex.getMessage().contains("deleting sequence a failed"), ex.getMessage());
            assertEquals(List.of("a"), listed(e));
            assertExact(e, "a", 1, 32);
        }
        TestEngines.deleteRecursively(planted.getParent());
        try (KvEngine e = KvEngine.open(config(d))) {
            assertOnly(e, List.of("a"));
            assertExact(e, "a", 1, 32);
        }
    }

    @Test
    void aSequenceDeletedWhileADeviceHasFailedAtRunTimeStaysDeleted() throws Exception {
        List<Path> d = storeWithAAndB(32, 32); // b's second block is on device 1
        KvConfig faulty = TestEngines.config(d, "portable").deviceCapacityBytes(1L << 20).blockTokens(16)
                .faultInjection(FaultInjection.builder(7).vanishingDevice(1, 0).build()).build();
        try (KvEngine e = KvEngine.open(faulty)) {
            for (int i = 0; i < 12; i++) {
                try (KvSequence s = e.openSequence("b")) {
                    assertThrows(KvIoException.class, () -> TestEngines.verify(s, 2, TestEngines.all(32)));
                }
            }
            assertEquals(1, e.stats().unavailableDevices().size(), e.stats().toString());
            assertTrue(e.deleteSequence("a"));
            assertTrue(holdersOf(d, "a").isEmpty(), "every copy it could reach is gone");
            assertTrue(Files.exists(d.get(0).resolve("manifests").resolve("a.kvot")),
                    "a failed device may not have seen it: a tombstone is kept");
        }
        assertOnlyBWhenAllAreBack(d, 32);
    }

    @Test
    void aSequenceDeletedWhileItsDataDeviceIsMissingStaysDeletedAndItsSpaceReturns() throws Exception {
        List<Path> d = storeWithAAndB(48, 16); // a's third block is on the device that goes missing
        try (KvEngine e = KvEngine.open(config(d.subList(0, 2)))) {
            assertEquals(List.of("a"), e.stats().unavailableSequences());
            assertTrue(e.deleteSequence("a"));
        }
        try (KvEngine e = KvEngine.open(config(d))) {
            assertOnly(e, List.of("b"));
            assertExact(e, "b", 2, 16);
        }
    }

    @Test
    void aSequenceEvictedWhileAManifestDeviceIsMissingStaysEvicted() throws Exception {
        List<Path> d = storeWithManifestDeviceLast();
        try (KvEngine e = KvEngine.open(config(d))) {
            commit(e, "a", 1, 32);
        }
        List<String> live;
        try (KvEngine e = KvEngine.open(config(d.subList(0, 2)))) {
            for (int i = 0; e.stats().evictions() == 0; i++) {
                assertTrue(i < 8, "two 1 MiB pools fill within 8 sequences of 8 blocks");
                commit(e, "z" + i, 10 + i, 128);
            }
            live = listed(e);
            assertTrue(!live.contains("a"), live.toString());
        }
        try (KvEngine e = KvEngine.open(config(d))) {
            assertOnly(e, live);
            for (String id : live) {
                assertExact(e, id, 10 + Integer.parseInt(id.substring(1)), 128);
            }
        }
        assertCollected(d, "a");
    }

    @Test
    void aSequenceReCreatedUnderADeletedIdIsTheOneThatComesBack() throws Exception {
        List<Path> d = storeWithManifestDeviceLast();
        try (KvEngine e = KvEngine.open(config(d))) {
            commit(e, "a", 1, 16);
            try (KvSequence s = e.openSequenceForAppend("a")) { // a second commit: the old copy has the higher number
                TestEngines.append(s, 1, 16, 16);
                s.commit();
            }
        }
        try (KvEngine e = KvEngine.open(config(d.subList(0, 2)))) {
            assertTrue(e.deleteSequence("a"));
            commit(e, "a", 9, 16);
        }
        try (KvEngine e = KvEngine.open(config(d))) {
            assertOnly(e, List.of("a"));
            assertExact(e, "a", 9, 16);
            assertTrue(e.sequences().get(0).commitNumber() > 2, "numbering goes on past the deleted sequence's");
        }
        try (KvEngine e = KvEngine.open(config(d))) {
            assertOnly(e, List.of("a"));
            assertExact(e, "a", 9, 16);
        }
    }

    @Test
    void forksKeepTheirSharedExtentsWhenASourceOrAForkIsDeletedWhileADeviceIsMissing() throws Exception {
        List<Path> d = storeWithAAndB(32, 32);
        try (KvEngine e = KvEngine.open(config(d))) {
            try (KvSequence f = e.fork("a", "f", 32)) {
                f.commit();
            }
            try (KvSequence g = e.fork("b", "g", 16)) {
                TestEngines.append(g, 2, 16, 16); // same seed: g reads back as b
                g.commit();
            }
        }
        try (KvEngine e = KvEngine.open(config(d.subList(0, 2)))) {
            assertTrue(e.deleteSequence("a")); // the source goes, its fork keeps the shared blocks
            assertTrue(e.deleteSequence("g")); // the fork goes, its source keeps them
            commit(e, "c", 3, 32);
        }
        try (KvEngine e = KvEngine.open(config(d))) {
            assertOnly(e, List.of("b", "c", "f"));
            assertExact(e, "f", 1, 32);
            assertExact(e, "b", 2, 32);
            assertExact(e, "c", 3, 32);
            assertTrue(e.deleteSequence("f")); // the last holder lets go: the space is free
            assertTrue(e.deleteSequence("b"));
            assertOnly(e, List.of("c"));
        }
        assertCollected(d, "a");
        assertCollected(d, "g");
    }
}
