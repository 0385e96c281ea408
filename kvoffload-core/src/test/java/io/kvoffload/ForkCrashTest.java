package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.testing.TestEngines;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A child JVM that forks, extends sources (copy-on-write of shared partial blocks) and deletes
 * sources is halted at a random moment after its first fork, mid-fork or mid-commit as it falls. A fresh engine must find
 * every reported source and fork bit-exact, and once every visible sequence is deleted all the space
 * must be free: a crash never loses a source nor leaks space for good.
 */
class ForkCrashTest {
    @TempDir
    Path root;

    @Test
    void aHaltDuringForksNeverLosesASourceNorLeaksSpace() throws Exception {
        List<Path> dirs = TestEngines.deviceDirs(root, 2);
        Random rnd = new Random(20261125);
        int forksSeen = 0;
        for (int round = 0; round < 4; round++) {
            Process p = CrashRecoveryTest.startChild(Child.class, round, 200 + rnd.nextInt(900), dirs);
            Set<String> committed = new HashSet<>();
            Map<String, int[]> plans = new HashMap<>(); // fork → {prefix, more}; its source in sources
            Map<String, String> sources = new HashMap<>();
            List<String> output = new ArrayList<>();
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream()))) {
                for (String line; (line = r.readLine()) != null; ) {
                    output.add(line);
                    String[] f = line.split(" ");
                    switch (f[0]) {
                        case "COMMITTED", "FORKED" -> committed.add(f[1]);
                        case "PLAN" -> {
                            sources.put(f[1], f[2]);
                            plans.put(f[1], new int[] {Integer.parseInt(f[3]), Integer.parseInt(f[4])});
                        }
                        case "DELETING" -> committed.remove(f[1]);
                        default -> { }
                    }
                }
            }
            assertTrue(p.waitFor(60, TimeUnit.SECONDS));
            assertEquals(137, p.exitValue(), "the child must die by halt, not by an error: " + output);
            try (KvEngine e = KvEngine.open(CrashRecoveryTest.config(dirs))) {
                Set<String> visible = new HashSet<>();
                e.sequences().forEach(i -> visible.add(i.id()));
                for (String id : committed) {
                    assertTrue(visible.contains(id), id + " was committed and is lost after crash " + round);
                }
                for (String id : visible) {
                    try (KvSequence s = e.openSequence(id)) {
                        int[] plan = plans.get(id);
                        if (plan == null) {
                            assertNull(TestEngines.verify(s, CrashRecoveryTest.seedOf(id), TestEngines.all(s.tokenCount())),
                                    id + " after crash " + round);
                            continue;
                        }
                        forksSeen++;
                        assertEquals(plan[0] + plan[1], s.tokenCount(), id);
                        assertNull(TestEngines.verify(s, CrashRecoveryTest.seedOf(sources.get(id)),
                                IntStream.range(0, plan[0]).toArray()), id + " prefix after crash " + round);
                        assertNull(TestEngines.verify(s, CrashRecoveryTest.seedOf(id),
                                IntStream.range(plan[0], plan[0] + plan[1]).toArray()), id + " tail after crash " + round);
                    }
                }
                assertEquals(0, e.stats().quarantinedBytes());
                for (String id : visible) {
                    assertTrue(e.deleteSequence(id));
                }
                for (KvStats.Device d : e.stats().devices()) {
                    assertEquals(d.capacityBytes(), d.freeBytes(), "device " + d.index() + " leaks after crash " + round);
                }
            }
        }
        assertTrue(forksSeen >= 4, "every child commits a fork before its halt timer starts: " + forksSeen);
    }

    /** The child: sources, forks of them, extensions of sources, deletions, until halted. */
    public static final class Child {
        private Child() {}

        public static void main(String[] args) throws Exception {
            long seed = Long.parseLong(args[0]);
            List<Path> dirs = CrashChild.dirs(args);
            Thread killer = CrashChild.killer(args);
            Random rnd = new Random(seed);
            List<String> alive = new ArrayList<>();
            try (KvEngine engine = KvEngine.open(CrashRecoveryTest.config(dirs))) {
                for (int round = 0; ; round++) {
                    String a = "a" + seed + "-" + round;
                    try (KvSequence s = engine.createSequence(a, CrashRecoveryTest.SHAPE)) {
                        TestEngines.append(s, CrashRecoveryTest.seedOf(a), 20 + rnd.nextInt(60), 1 + rnd.nextInt(30));
                        s.commit();
                    }
                    System.out.println("COMMITTED " + a);
                    alive.add(a);
                    String src = alive.get(rnd.nextInt(alive.size()));
                    String f = "f" + seed + "-" + round;
                    int prefix;
                    try (KvSequence s = engine.openSequence(src)) {
                        prefix = 1 + rnd.nextInt(s.tokenCount());
                    }
                    int more = rnd.nextInt(20);
                    System.out.println("PLAN " + f + " " + src + " " + prefix + " " + more);
                    try (KvSequence s = engine.fork(src, f, prefix)) {
                        if (more > 0) {
                            TestEngines.append(s, CrashRecoveryTest.seedOf(f), more, 1 + rnd.nextInt(8));
                        }
                        s.commit();
                    }
                    System.out.println("FORKED " + f);
                    if (round == 0) {
                        killer.start(); // after one fork, however slow the machine: the halt hits later ones
                    }
                    try (KvSequence s = engine.openSequenceForAppend(src)) {
                        TestEngines.append(s, CrashRecoveryTest.seedOf(src), 1 + rnd.nextInt(5), 1);
                        s.commit();
                    }
                    if (alive.size() > 2) {
                        String gone = alive.remove(0);
                        System.out.println("DELETING " + gone);
                        engine.deleteSequence(gone);
                        System.out.println("DELETED " + gone);
                    }
                }
            }
        }
    }
}
