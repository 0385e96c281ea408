package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.testing.TestEngines;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A child JVM is halted (Runtime.halt, no shutdown hooks, no flushing) at random points while it
 * appends, commits and deletes. After every crash a fresh engine must find every sequence the child
 * reported committed, with at least the reported tokens, bit-exact; no half-written sequence may be
 * visible; and space held by uncommitted writes must be free again.
 */
class CrashRecoveryTest {
    static final KvShape SHAPE = new KvShape(2, 4, 2, 32, DType.F16); // 256-byte entries

    @TempDir
    Path root;

    static KvConfig config(List<Path> dirs) {
        return TestEngines.config(dirs, "portable").blockTokens(8).deviceCapacityBytes(64L << 20).build();
    }

    static long seedOf(String id) {
        return id.hashCode() * 0x9E3779B97F4A7C15L;
    }

    /**
     * Starts {@code main} in a child JVM on this test's class path with {@code seed}, the halt delay
     * and the device directories as arguments ({@link CrashChild#dirs}, {@link CrashChild#killer}).
     */
    static Process startChild(Class<?> main, long seed, long haltAfterMillis, List<Path> dirs) throws java.io.IOException {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", System.getProperty("java.class.path"),
                main.getName(), String.valueOf(seed), String.valueOf(haltAfterMillis)));
        dirs.forEach(d -> cmd.add(d.toString()));
        return new ProcessBuilder(cmd).redirectErrorStream(true).start();
    }

    @Test
    void everyCommitSurvivesAHaltAtARandomPoint() throws Exception {
        haltAndCheck(CrashChild.class, 8, new Random(20261122), 150, 900, 4);
    }

    /**
     * Deletions made while a device holding manifest copies is away (tombstones), halted at random
     * points, then every device back: what was durably deleted never returns, commits survive.
     */
    @Test
    void deletionsWhileADeviceIsAwaySurviveAHaltAndItsReturn() throws Exception {
        haltAndCheck(DegradedCrashChild.class, 5, new Random(20261125), 500, 2500, 2); // it opens the store often
    }

    /**
     * Runs {@code rounds} children of {@code child} on three devices, each halted at a random point
     * ({@code minHaltMillis} plus up to {@code haltSpreadMillis} after it starts),
     * and after each opens the store with every device: every sequence reported committed is there
     * with at least its reported tokens, none reported deleted is, each reads back bit-exact, and the
     * space in use is exactly theirs.
     */
    void haltAndCheck(Class<?> child, int rounds, Random rnd, int minHaltMillis, int haltSpreadMillis, int minCommitted)
            throws Exception {
        List<Path> dirs = TestEngines.deviceDirs(root, 3);
        Map<String, Integer> committed = new HashMap<>();
        Set<String> deleted = new HashSet<>();
        for (int round = 0; round < rounds; round++) {
            Process p = startChild(child, round, minHaltMillis + rnd.nextInt(haltSpreadMillis), dirs);
            List<String> output = new ArrayList<>();
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream()))) {
                for (String line; (line = r.readLine()) != null; ) {
                    output.add(line);
                    String[] f = line.split(" ");
                    if (f[0].equals("COMMITTED")) {
                        committed.put(f[1], Integer.parseInt(f[2]));
                    } else if (f[0].equals("DELETING")) {
                        committed.remove(f[1]); // from here on it may be gone; if visible it must be whole
                    } else if (f[0].equals("DELETED")) {
                        deleted.add(f[1]);
                    }
                }
            }
            assertTrue(p.waitFor(60, TimeUnit.SECONDS));
            assertEquals(137, p.exitValue(), "the child must die by halt, not by an error: " + output);

            try (KvEngine e = KvEngine.open(config(dirs))) {
                Map<String, SequenceInfo> visible = new HashMap<>();
                for (SequenceInfo info : e.sequences()) {
                    visible.put(info.id(), info);
                }
                for (Map.Entry<String, Integer> c : committed.entrySet()) {
                    SequenceInfo info = visible.get(c.getKey());
                    assertTrue(info != null, "committed sequence " + c.getKey() + " lost after crash " + round);
                    assertTrue(info.tokenCount() >= c.getValue(), c.getKey() + " lost tokens");
                }
                long stored = 0;
                for (SequenceInfo info : visible.values()) {
                    // Visible but not reported (halted between rename and print) is fine; it must be whole.
                    assertFalse(deleted.contains(info.id()), "durably deleted " + info.id() + " came back");
                    try (KvSequence s = e.openSequence(info.id())) {
                        assertNull(TestEngines.verify(s, seedOf(info.id()), TestEngines.all(s.tokenCount())),
                                info.id() + " after crash " + round);
                    }
                    stored += info.storedBytes();
                }
                long used = e.stats().devices().stream().mapToLong(d -> d.capacityBytes() - d.freeBytes()).sum();
                assertEquals(stored, used, "space of uncommitted writes is free again after crash " + round);
                assertTrue(e.stats().quarantine().isEmpty(), e.stats().toString());
            }
        }
        assertTrue(committed.size() >= minCommitted, "the children committed too little to test anything: "
                + committed);
    }
}
