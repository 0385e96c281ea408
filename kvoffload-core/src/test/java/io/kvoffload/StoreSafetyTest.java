package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.testing.TestEngines;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The data-safety half of the reliability work: ownership (store lock), device identity by UUID
 * (any order, any subset), never freeing what an unreadable manifest or a missing device may
 * reference, redundant manifests with their previous generation, a vanished pool file, planted
 * temporary files, honest preallocation and private file modes. Each test fails on the code before
 * these mechanisms and passes with them.
 */
class StoreSafetyTest {
    static final KvShape SHAPE = new KvShape(2, 8, 2, 16, DType.BF16); // 128-byte entries

    @TempDir
    Path root;

    List<Path> dirs(int n) {
        return TestEngines.deviceDirs(root, n);
    }

    static KvConfig.Builder config(List<Path> dirs) {
        return TestEngines.config(dirs, "portable").blockTokens(4);
    }

    static void commit(KvEngine e, String id, long seed, int tokens) {
        TestEngines.commit(e, id, SHAPE, seed, tokens);
    }

    static void assertExact(KvEngine e, String id, long seed, int tokens) {
        TestEngines.assertExact(e, id, seed, tokens);
    }

    /** Sequence {@code i} of a test store: {@code "a"}, {@code "b"}, … with seeds 1, 2, …. */
    static String id(int i) {
        return String.valueOf((char) ('a' + i));
    }

    /**
     * Commits sequences {@code "a"}, {@code "b"}, … ({@code sequences} of them, seeds 1, 2, …) of
     * {@code tokens} tokens each to a store over {@code d}; returns {@code d}.
     */
    static List<Path> commitAll(List<Path> d, int sequences, int tokens) {
        try (KvEngine e = KvEngine.open(config(d).build())) {
            for (int i = 0; i < sequences; i++) {
                commit(e, id(i), i + 1, tokens);
            }
        }
        return d;
    }

    /** {@link #commitAll} over {@code n} new device directories. */
    List<Path> committedStore(int n, int sequences, int tokens) {
        return commitAll(dirs(n), sequences, tokens);
    }

    /** Opens the store over {@code d} again: {@link #commitAll}'s sequences read back exact. */
    static void assertReopenedExact(List<Path> d, int sequences, int tokens) {
        try (KvEngine e = KvEngine.open(config(d).build())) {
            for (int i = 0; i < sequences; i++) {
                assertExact(e, id(i), i + 1, tokens);
            }
        }
    }

    static List<Path> manifestCopies(List<Path> dirs, String id) throws Exception {
        List<Path> out = new ArrayList<>();
        for (Path d : dirs) {
            Path f = d.resolve("manifests").resolve(id + ".kvom");
            if (Files.exists(f)) {
                out.add(f);
            }
        }
        return out;
    }

    @Test
    void aSecondEngineOnTheSameStoreIsRefusedWithTheHolderNamed() throws Exception {
        KvConfig cfg = config(dirs(2)).build();
        try (KvEngine first = KvEngine.open(cfg)) {
            commit(first, "a", 1, 40);
            KvStoreLockedException ex = assertThrows(KvStoreLockedException.class, () -> KvEngine.open(cfg));
            assertTrue(ex.getMessage().contains(String.valueOf(ProcessHandle.current().pid())), ex.getMessage());
            // A configuration naming only one of the directories is refused as well.
            KvConfig one = config(List.of(cfg.ssdDirectories().get(1))).build();
            assertThrows(KvStoreLockedException.class, () -> KvEngine.open(one));
            assertExact(first, "a", 1, 40);
        }
        try (KvEngine again = KvEngine.open(cfg)) { // the lock goes with the engine
            assertExact(again, "a", 1, 40);
        }
    }

    @Test
    void anotherProcessIsRefusedWhileTheStoreIsOpen() throws Exception {
        List<Path> d = dirs(2);
        KvConfig cfg = config(d).build();
        try (KvEngine first = KvEngine.open(cfg)) {
            commit(first, "a", 1, 40);
            String java = ProcessHandle.current().info().command().orElse("java");
            List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED",
                    "-Dorg.slf4j.simpleLogger.defaultLogLevel=off", "-cp", System.getProperty("java.class.path"),
                    OpenStoreChild.class.getName()));
            d.forEach(x -> cmd.add(x.toString()));
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out;
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(),
                    StandardCharsets.UTF_8))) {
                out = String.join("\n", r.lines().toList());
            }
            assertTrue(p.waitFor(60, TimeUnit.SECONDS));
            assertTrue(out.contains("LOCKED") && out.contains(String.valueOf(ProcessHandle.current().pid())), out);
            assertExact(first, "a", 1, 40);
        }
    }

    @Test
    void directoriesMayBeListedInAnyOrder() throws Exception {
        List<Path> d = committedStore(3, 1, 61);
        List<Path> reordered = List.of(d.get(2), d.get(0), d.get(1));
        try (KvEngine e = KvEngine.open(config(reordered).build())) {
            assertEquals(List.of("a"), e.sequences().stream().map(SequenceInfo::id).toList());
            assertExact(e, "a", 1, 61);
            commit(e, "b", 2, 77); // must not land on a's extents
        }
        try (KvEngine e = KvEngine.open(config(d).build())) {
            assertExact(e, "a", 1, 61);
            assertExact(e, "b", 2, 77);
            assertTrue(e.stats().quarantine().isEmpty());
        }
    }

    @Test
    void aMissingDeviceIsNamedItsSequencesAreUnavailableAndItsSpaceIsNeverReused() throws Exception {
        List<Path> d = committedStore(3, 2, 64);
        try (KvEngine e = KvEngine.open(config(d.subList(0, 2)).build())) {
            KvStats st = e.stats();
            assertEquals(1, st.unavailableDevices().size(), st.toString());
            assertTrue(st.unavailableDevices().get(0).reason().contains("not among the configured"), st.toString());
            assertEquals(List.of("a", "b"), st.unavailableSequences());
            KvDeviceUnavailableException ex = assertThrows(KvDeviceUnavailableException.class,
                    () -> e.openSequence("a"));
            assertTrue(ex.getMessage().contains("unavailable"), ex.getMessage());
            // Writing goes on, on the devices that are here, without touching a's and b's extents.
            commit(e, "c", 3, 64);
            assertExact(e, "c", 3, 64);
        }
        try (KvEngine e = KvEngine.open(config(d).build())) {
            assertTrue(e.stats().unavailableDevices().isEmpty());
            assertExact(e, "a", 1, 64);
            assertExact(e, "b", 2, 64);
            assertExact(e, "c", 3, 64);
        }
    }

    @Test
    void aDamagedDeviceRecordIsRecoveredFromTheStoreRecord() throws Exception {
        List<Path> d = committedStore(3, 1, 64);
        Files.writeString(d.get(1).resolve("kvoffload-device.json"), "{\"uuid\": 7, \"poolBytes\": \"x\"}");
        try (KvEngine e = KvEngine.open(config(d).build())) {
            assertTrue(e.stats().unavailableDevices().isEmpty(), e.stats().toString());
            assertExact(e, "a", 1, 64);
        }
        // Both of the device's own records damaged: found again by its last path in the others' records.
        Files.writeString(d.get(1).resolve("kvoffload-device.json"), "garbage");
        Files.writeString(d.get(1).resolve("kvoffload-store.json"), "{}");
        try (KvEngine e = KvEngine.open(config(d).build())) {
            assertTrue(e.stats().unavailableDevices().isEmpty(), e.stats().toString());
            assertExact(e, "a", 1, 64);
        }
    }

    @Test
    void anUnidentifiableDeviceIsFailedNotRecreatedOverItsData() throws Exception {
        List<Path> d = committedStore(2, 1, 64);
        // Records gone everywhere the device could be recognised from: it must not get a new pool.
        byte[] pool = Files.readAllBytes(d.get(1).resolve("kvoffload.pool"));
        for (Path x : d) {
            Files.writeString(x.resolve("kvoffload-store.json"), "damaged");
        }
        Files.writeString(d.get(1).resolve("kvoffload-device.json"), "damaged");
        try (KvEngine e = KvEngine.open(config(d).build())) {
            KvStats st = e.stats();
            assertEquals(1, st.unavailableDevices().size(), st.toString());
            assertTrue(st.unavailableDevices().get(0).reason().contains("cannot be identified"), st.toString());
            assertThrows(KvException.class, () -> e.openSequence("a"));
        }
        assertTrue(java.util.Arrays.equals(pool, Files.readAllBytes(d.get(1).resolve("kvoffload.pool"))),
                "the unidentified pool was left untouched");
    }

    @Test
    void manifestsAreKeptOnTwoDevicesAndEitherCopySuffices() throws Exception {
        List<Path> d = committedStore(3, 1, 64);
        List<Path> copies = manifestCopies(d, "a");
        assertEquals(2, copies.size(), copies.toString());
        byte[] good = Files.readAllBytes(copies.get(1));
        Files.write(copies.get(0), new byte[] {1, 2, 3});
        // The device holding the good copy missing: the damaged one is all that is left.
        Path other = copies.get(1).getParent().getParent();
        List<Path> without = d.stream().filter(x -> !x.equals(other)).toList();
        try (KvEngine e = KvEngine.open(config(without).build())) {
            KvStats st = e.stats();
            assertFalse(st.quarantine().isEmpty(), st.toString());
        }
        // Every device back: served from the good copy, and the damaged one is written again.
        try (KvEngine e = KvEngine.open(config(d).build())) {
            assertExact(e, "a", 1, 64);
            assertTrue(e.stats().quarantine().isEmpty());
        }
        assertTrue(java.util.Arrays.equals(good, Files.readAllBytes(copies.get(0))), "the damaged copy is repaired");
        try (KvEngine e = KvEngine.open(config(without).build())) { // its blocks there are away, its manifest is not
            assertTrue(e.sequences().stream().anyMatch(i -> i.id().equals("a")));
            assertTrue(e.stats().quarantine().isEmpty(), e.stats().toString());
        }
    }

    @Test
    void thePreviousGenerationIsUsedWhenTheNewestCopiesAreDamaged() throws Exception {
        List<Path> d = committedStore(2, 1, 40);
        try (KvEngine e = KvEngine.open(config(d).build()); KvSequence s = e.openSequenceForAppend("a")) {
            TestEngines.append(s, 1, 8, 8);
            s.commit();
        }
        for (Path f : manifestCopies(d, "a")) {
            Files.write(f, new byte[] {0});
        }
        try (KvEngine e = KvEngine.open(config(d).build())) {
            // The older generation loads; its tokens read back exact or fail their checksum, never wrong.
            try (KvSequence s = e.openSequence("a")) {
                assertEquals(40, s.tokenCount());
                try {
                    assertNull(TestEngines.verify(s, 1, TestEngines.all(40)));
                } catch (KvChecksumException expected) {
                    // its superseded extents may have been reused
                }
            }
        }
    }

    @Test
    void anUnreadableManifestQuarantinesItsSpaceUntilReleased() throws Exception {
        List<Path> d = committedStore(2, 2, 64);
        List<Path> copies = manifestCopies(d, "a");
        List<byte[]> saved = new ArrayList<>();
        for (Path f : copies) {
            saved.add(Files.readAllBytes(f));
            byte[] bad = Files.readAllBytes(f);
            bad[bad.length / 2] ^= 0x40;
            Files.write(f, bad);
        }
        try (KvEngine e = KvEngine.open(config(d).build())) {
            KvStats st = e.stats();
            assertEquals(1, st.quarantine().size(), st.toString());
            assertTrue(st.quarantine().get(0).startsWith("sequence a"), st.toString());
            assertTrue(st.quarantinedBytes() > 0);
            assertExact(e, "b", 2, 64);
            // New sequences are written elsewhere, never over a's extents.
            for (int i = 0; i < 6; i++) {
                commit(e, "n" + i, 10 + i, 64);
            }
        }
        for (int i = 0; i < copies.size(); i++) {
            Files.write(copies.get(i), saved.get(i)); // the user restores the manifest
        }
        try (KvEngine e = KvEngine.open(config(d).build())) {
            assertTrue(e.stats().quarantine().isEmpty());
            assertExact(e, "a", 1, 64);
            for (int i = 0; i < 6; i++) {
                assertExact(e, "n" + i, 10 + i, 64);
            }
            // Release: only an explicit call frees quarantined space.
            for (Path f : manifestCopies(d, "a")) {
                Files.write(f, new byte[] {9});
            }
        }
        try (KvEngine e = KvEngine.open(config(d).build())) {
            long q = e.stats().quarantinedBytes();
            assertTrue(q > 0);
            assertEquals(q, e.releaseQuarantine());
            assertEquals(0, e.stats().quarantinedBytes());
            assertTrue(e.stats().quarantine().isEmpty());
        }
        try (KvEngine e = KvEngine.open(config(d).build())) {
            assertTrue(e.stats().quarantine().isEmpty(), "released manifests are moved aside, not loaded again");
            assertExact(e, "b", 2, 64);
        }
    }

    @Test
    void aCommitOnAVanishedPoolFileIsRefused() throws Exception {
        List<Path> d = dirs(2);
        try (KvEngine e = KvEngine.open(config(d).build())) {
            commit(e, "a", 1, 40);
            Files.delete(d.get(1).resolve("kvoffload.pool"));
            try (KvSequence s = e.createSequence("b", SHAPE)) {
                TestEngines.append(s, 2, 40, 8);
                KvDeviceUnavailableException ex = assertThrows(KvDeviceUnavailableException.class, s::commit);
                assertTrue(ex.getMessage().contains("vanished"), ex.getMessage());
            }
            assertEquals(1, e.stats().unavailableDevices().size());
            assertFalse(e.sequences().stream().anyMatch(i -> i.id().equals("b")), "nothing was acknowledged");
        }
        try (KvEngine e = KvEngine.open(config(d).build())) {
            KvStats st = e.stats();
            assertEquals(1, st.unavailableDevices().size(), st.toString());
            assertTrue(st.unavailableDevices().get(0).reason().contains("missing"), st.toString());
            assertThrows(KvDeviceUnavailableException.class, () -> e.openSequence("a"));
        }
    }

    @Test
    void aDeviceThatKeepsFailingIsTakenOutOfServiceWithoutARestart() throws Exception {
        List<Path> d = committedStore(2, 1, 64);
        KvConfig faulty = config(d).faultInjection(FaultInjection.builder(7).vanishingDevice(1, 0).build()).build();
        try (KvEngine e = KvEngine.open(faulty)) {
            assertTrue(e.ioBackend().endsWith("+faults"), e.ioBackend());
            for (int i = 0; i < 12; i++) {
                try (KvSequence s = e.openSequence("a")) {
                    assertThrows(KvIoException.class, () -> TestEngines.verify(s, 1, TestEngines.all(64)));
                }
            }
            KvStats st = e.stats();
            assertEquals(1, st.unavailableDevices().size(), st.toString());
            assertTrue(st.unavailableDevices().get(0).reason().contains("batches in a row failed"), st.toString());
            commit(e, "b", 2, 64); // written to the healthy device only
            assertExact(e, "b", 2, 64);
            assertFalse(Files.exists(d.get(1).resolve("manifests").resolve("b.kvom")),
                    "no manifest copy goes to the failed device either");
            assertEquals(0, e.stats().devices().get(1).bytesWritten(), "nothing written to the failed device");
        }
        // The device is back: everything reads.
        assertReopenedExact(d, 2, 64);
    }

    @Test
    void aStoreWrittenBeforeStoreRecordsOpensAsItWas() throws Exception {
        List<Path> d = committedStore(3, 1, 61);
        // The layout of the previous release: device records without store or CRC, no store
        // record, manifests only in the first directory.
        Path first = d.get(0).resolve("manifests").resolve("a.kvom");
        byte[] manifest = Files.readAllBytes(manifestCopies(d, "a").get(0));
        for (Path x : d) {
            String json = Files.readString(x.resolve("kvoffload-device.json"));
            String uuid = json.replaceAll("(?s).*\"uuid\"\\s*:\\s*\"([^\"]+)\".*", "$1");
            Files.writeString(x.resolve("kvoffload-device.json"), "{\"uuid\":\"" + uuid
                    + "\",\"poolBytes\":16777216,\"alignment\":4096,\"layoutVersion\":1}");
            Files.deleteIfExists(x.resolve("kvoffload-store.json"));
            if (Files.isDirectory(x.resolve("manifests"))) {
                try (Stream<Path> s = Files.list(x.resolve("manifests"))) {
                    for (Path f : s.toList()) {
                        Files.delete(f);
                    }
                }
            }
        }
        Files.createDirectories(first.getParent());
        Files.write(first, manifest);
        try (KvEngine e = KvEngine.open(config(d).build())) {
            KvStats st = e.stats();
            assertTrue(st.unavailableDevices().isEmpty() && st.quarantine().isEmpty(), st.toString());
            assertExact(e, "a", 1, 61);
            commit(e, "b", 2, 30);
        }
        try (KvEngine e = KvEngine.open(config(List.of(d.get(1), d.get(2), d.get(0))).build())) {
            assertExact(e, "a", 1, 61);
            assertExact(e, "b", 2, 30);
            assertEquals(2, manifestCopies(d, "b").size(), "new commits keep two copies");
        }
    }

    @Test
    void plantedTemporaryFilesNeitherRedirectNorBlockACommit() throws Exception {
        List<Path> d = dirs(1);
        Path outside = Files.writeString(root.resolve("victim.txt"), "precious");
        Path mdir = Files.createDirectories(d.get(0).resolve("manifests"));
        Files.createSymbolicLink(mdir.resolve("a.kvom.tmp"), outside);
        Path blocker = Files.createDirectories(mdir.resolve("b.kvom.tmp"));
        Files.writeString(blocker.resolve("inside"), "x");
        commitAll(d, 2, 20);
        assertEquals("precious", Files.readString(outside));
        assertReopenedExact(d, 2, 20);
    }

    @Test
    void aPoolThatCannotBePreallocatedIsRefusedAndLeavesNothingBehind() throws Exception {
        List<Path> d = dirs(1);
        long tooBig = 1L << 50; // 1 PiB: no test machine has it
        KvCapacityException ex = assertThrows(KvCapacityException.class,
                () -> KvEngine.open(config(d).deviceCapacityBytes(tooBig).build()));
        assertTrue(ex.getMessage().contains("cannot preallocate") && ex.getMessage().contains("deviceCapacityBytes"),
                ex.getMessage());
        assertFalse(Files.exists(d.get(0).resolve("kvoffload.pool")));
        try (KvEngine e = KvEngine.open(config(d).build())) { // and the store still opens afterwards
            commit(e, "a", 1, 20);
        }
    }

    @Test
    void filesArePrivateByDefault() throws Exception {
        List<Path> d = committedStore(2, 1, 20);
        List<Path> created = new ArrayList<>();
        for (Path x : d) {
            try (Stream<Path> s = Files.walk(x)) {
                s.filter(p -> !p.equals(x)).forEach(created::add);
            }
        }
        assertTrue(created.size() >= 8, created.toString());
        for (Path p : created) {
            String perms = PosixFilePermissions.toString(Files.getPosixFilePermissions(p, LinkOption.NOFOLLOW_LINKS));
            assertEquals(Files.isDirectory(p) ? "rwx------" : "rw-------", perms, p.toString());
        }
        List<Path> g = TestEngines.deviceDirs(root.resolve("shared"), 1);
        try (KvEngine e = KvEngine.open(config(g).fileMode("640").build())) {
            commit(e, "a", 1, 20);
        }
        assertEquals("rw-r-----", PosixFilePermissions.toString(Files.getPosixFilePermissions(
                g.get(0).resolve("kvoffload.pool"))));
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                () -> config(g).fileMode("755").build());
        assertTrue(bad.getMessage().contains("fileMode = '755'"), bad.getMessage());
    }

    /** Tries to open the store given on the command line; prints LOCKED and the message if refused. */
    public static final class OpenStoreChild {
        public static void main(String[] args) throws Exception {
            List<Path> dirs = Stream.of(args).map(Path::of).toList();
            try (KvEngine e = KvEngine.open(config(dirs).build())) {
                System.out.println("OPENED " + e.sequences().size());
            } catch (KvStoreLockedException ex) {
                System.out.println("LOCKED " + ex.getMessage());
            }
        }
    }
}
