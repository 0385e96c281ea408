package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.testing.TestEngines;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/** Every argument out of range gets a specific exception naming the argument and what is allowed. */
class BadInputTest {
    static final KvShape SHAPE = new KvShape(2, 4, 2, 8, DType.BF16); // 32-byte halves

    @TempDir
    Path root;

    static <T extends Throwable> void fails(Class<T> type, Executable call, String... fragments) {
        T ex = assertThrows(type, call);
        for (String f : fragments) {
            assertTrue(ex.getMessage() != null && ex.getMessage().contains(f),
                    "message '" + ex.getMessage() + "' should contain '" + f + "'");
        }
    }

    KvEngine engine() throws IOException {
        return KvEngine.open(TestEngines.config(TestEngines.deviceDirs(root, 2), "portable").blockTokens(4).build());
    }

    @Test
    void shapeArguments() {
        fails(IllegalArgumentException.class, () -> new KvShape(0, 4, 2, 8, DType.F32), "layers = 0", "1..4096");
        fails(IllegalArgumentException.class, () -> new KvShape(1, 5, 2, 8, DType.F32), "queryHeads = 5", "multiple");
        fails(IllegalArgumentException.class, () -> new KvShape(1, 4, 0, 8, DType.F32), "kvHeads = 0");
        fails(IllegalArgumentException.class, () -> new KvShape(1, 4, 2, 0, DType.F32), "headDim = 0", "1..16384");
        fails(NullPointerException.class, () -> new KvShape(1, 4, 2, 8, null), "dtype");
    }

    @Test
    void configArguments() {
        List<Path> dirs = TestEngines.deviceDirs(root, 1);
        fails(IllegalArgumentException.class, () -> KvConfig.builder().build(), "ssdDirectories has 0", "1..256");
        fails(IllegalArgumentException.class, () -> KvConfig.builder().ssdDirectories(dirs.get(0), dirs.get(0)).build(),
                "twice");
        fails(IllegalArgumentException.class, () -> KvConfig.builder().ssdDirectories(dirs).blockTokens(0).build(),
                "blockTokens = 0", "1..65536");
        fails(IllegalArgumentException.class, () -> KvConfig.builder().ssdDirectories(dirs).dramBudgetBytes(10).build(),
                "dramBudgetBytes = 10");
        fails(IllegalArgumentException.class,
                () -> KvConfig.builder().ssdDirectories(dirs).directIoAlignment(3000).build(), "directIoAlignment = 3000",
                "power of two");
        fails(IllegalArgumentException.class, () -> KvConfig.builder().ssdDirectories(dirs).queueDepth(0).build(),
                "queueDepth = 0");
    }

    @Test
    void configFile() throws IOException {
        Path ok = root.resolve("ok.json");
        Files.createDirectories(root.resolve("a"));
        Files.writeString(ok, "{\"ssdDirectories\": [\"a\"], \"dramBudget\": \"64MiB\", \"deviceCapacity\": \"2GiB\","
                + " \"blockTokens\": 32, \"checksums\": false}");
        KvConfig c = KvConfig.load(ok);
        assertEquals(List.of(root.resolve("a")), c.ssdDirectories());
        assertEquals(64L << 20, c.dramBudgetBytes());
        assertEquals(2L << 30, c.deviceCapacityBytes());
        assertEquals(32, c.blockTokens());
        assertEquals(false, c.checksums());
        Path unknown = root.resolve("unknown.json");
        Files.writeString(unknown, "{\"ssdDirectories\": [\"a\"], \"dramBudgt\": 1}");
        fails(IllegalArgumentException.class, () -> KvConfig.load(unknown), "unknown configuration key 'dramBudgt'",
                "dramBudget");
        Path badSize = root.resolve("size.json");
        Files.writeString(badSize, "{\"ssdDirectories\": [\"a\"], \"dramBudget\": \"lots\"}");
        fails(IllegalArgumentException.class, () -> KvConfig.load(badSize), "dramBudget = 'lots'", "MiB");
        Path notJson = root.resolve("bad.json");
        Files.writeString(notJson, "{ssd");
        fails(IOException.class, () -> KvConfig.load(notJson), "not valid JSON");
    }

    @Test
    void missingOrNonDirectoryDevice() {
        Path missing = root.resolve("nope");
        fails(IllegalArgumentException.class,
                () -> KvEngine.open(KvConfig.builder().ssdDirectories(missing).build()),
                "ssdDirectories[0] = " + missing, "does not exist");
    }

    @Test
    void readOnlyDevice() throws Exception {
        Path ro = Files.createDirectories(root.resolve("ro"));
        boolean mounted = false;
        if (isRoot()) {
            // Permissions do not bind root: mount a read-only file system instead.
            Process p = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", ro.toString())
                    .redirectErrorStream(true).start();
            assertEquals(0, p.waitFor(), "mounting a read-only tmpfs for the test: " + new String(
                    p.getInputStream().readAllBytes()));
            mounted = true;
        } else {
            Files.setPosixFilePermissions(ro, PosixFilePermissions.fromString("r-xr-xr-x"));
        }
        try {
            fails(IllegalArgumentException.class, () -> KvEngine.open(KvConfig.builder().ssdDirectories(ro).build()),
                    "ssdDirectories[0] = " + ro, "not writable");
        } finally {
            if (mounted) {
                new ProcessBuilder("umount", ro.toString()).start().waitFor();
            } else {
                Files.setPosixFilePermissions(ro, PosixFilePermissions.fromString("rwxr-xr-x"));
            }
        }
    }

    static boolean isRoot() throws IOException, InterruptedException {
        Process p = new ProcessBuilder("id", "-u").start();
        String out = new String(p.getInputStream().readAllBytes()).trim();
        p.waitFor();
        return out.equals("0");
    }

    @Test
    void unknownBackend() {
        List<Path> dirs = TestEngines.deviceDirs(root, 1);
        fails(IllegalArgumentException.class,
                () -> KvEngine.open(KvConfig.builder().ssdDirectories(dirs).ioBackend("floppy").build()),
                "ioBackend = 'floppy' is unknown", "portable");
    }

    @Test
    void sequenceArguments() throws Exception {
        try (KvEngine e = engine(); KvSequence s = e.createSequence("x", SHAPE); Arena arena = Arena.ofConfined()) {
            MemorySegment one = arena.allocate(32);
            MemorySegment two = arena.allocate(64);
            fails(IllegalArgumentException.class, () -> e.createSequence("x", SHAPE), "id = 'x' is already used");
            fails(IllegalArgumentException.class, () -> e.createSequence("../etc", SHAPE), "id = '../etc'", "letters");
            fails(IllegalArgumentException.class, () -> s.appendTokens(1, -2), "ids[1] = -2");
            s.appendTokens(1, 2);
            fails(IllegalArgumentException.class, () -> s.appendKv(2, one, one), "layer = 2", "0..1");
            fails(IllegalArgumentException.class, () -> s.appendKv(-1, one, one), "layer = -1");
            fails(IllegalArgumentException.class, () -> s.appendKv(0, one, two), "keys has 32 bytes but values has 64");
            fails(IllegalArgumentException.class, () -> s.appendKv(0, one.asSlice(0, 31), one.asSlice(0, 31)),
                    "not a multiple of one token's K (32 bytes");
            fails(IllegalArgumentException.class,
                    () -> s.appendKv(0, arena.allocate(96), arena.allocate(96)), "would hold 3 tokens",
                    "only 2 token ids");
            fails(IllegalArgumentException.class, () -> s.appendKv(0, new float[8], new float[8]),
                    "keys.length = 8", "a multiple of kvHeads × headDim = 16 (whole tokens)");
            s.appendKv(0, two, two);
            fails(IllegalStateException.class, s::commit, "layer 1 holds KV for 0 of 2 tokens");
            s.appendKv(1, two, two);
            s.commit();
            fails(IllegalStateException.class, s::commit, "nothing to commit");
            fails(IllegalArgumentException.class, () -> s.read(0, new int[] {0, 2}, two, two), "positions[1] = 2",
                    "0..1");
            fails(IllegalArgumentException.class, () -> s.read(0, new int[] {0, 1}, one, two), "keysOut has 32 bytes",
                    "need 64");
            fails(IllegalArgumentException.class, () -> s.read(5, new int[] {0}, one, one), "layer = 5");
            fails(IllegalArgumentException.class, () -> s.read(0, 1, 2, two, two), "count = 2", "0..1");
            fails(IllegalArgumentException.class, () -> s.read(0, new int[] {0}, one.asReadOnly(), one), "read-only");
            fails(IllegalArgumentException.class, () -> s.read(0, new int[] {0}, new float[8], new float[8]),
                    "keysOut is float[]");
            fails(IllegalArgumentException.class, () -> e.openSequence("nobody"), "id = 'nobody' names no committed");
            fails(IllegalStateException.class, () -> e.openSequenceForAppend("x"), "held by 1");
        }
    }

    @Test
    void readOnlyHandlesAndClosedObjects() throws Exception {
        KvEngine e = engine();
        try (KvSequence s = e.createSequence("y", SHAPE)) {
            TestEngines.append(s, 1, 5, 5);
            s.commit();
        }
        KvSequence r = e.openSequence("y");
        fails(IllegalStateException.class, () -> r.appendTokens(1), "read-only", "openSequenceForAppend");
        r.close();
        fails(IllegalStateException.class, () -> r.read(0, new int[] {0}, new short[8], new short[8]), "is closed");
        e.close();
        fails(IllegalStateException.class, () -> e.createSequence(SHAPE), "engine is closed");
        fails(IllegalStateException.class, () -> e.openSequence("y"), "engine is closed");
        fails(IllegalStateException.class, e::sequences, "engine is closed");
    }

    @Test
    void dramBudgetExhaustionIsReported() throws Exception {
        KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(root, 1), "portable").dramBudgetBytes(1L << 20)
                .dramSlabBytes(1L << 20).blockTokens(32).build();
        KvShape big = new KvShape(8, 8, 8, 128, DType.F32); // 8 KiB entries, 256 KiB blocks: 4 per budget
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.createSequence(big)) {
            s.appendTokens(new int[10]);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment kv = arena.allocate(10L * big.halfEntryBytes());
                for (int l = 0; l < 4; l++) {
                    s.appendKv(l, kv, kv); // each layer's partial block holds one slot
                }
                fails(KvDramExhaustedException.class, () -> s.appendKv(4, kv, kv), "DRAM budget exhausted",
                        "dramBudgetBytes");
            }
        }
        fails(IllegalArgumentException.class, () -> {
            try (KvEngine e = KvEngine.open(cfg)) {
                e.createSequence(new KvShape(1, 8, 8, 1024, DType.F32));
            }
        }, "bytes per block exceeds", "lower blockTokens");
    }
}
