package io.kvoffload;

import io.kvoffload.testing.TestEngines;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Child JVM for {@link CrashRecoveryTest#deletionsWhileADeviceIsAwaySurviveAHaltAndItsReturn}: in a
 * loop, commits a sequence with every device present, then reopens without a device holding a copy
 * of its manifest, deletes that sequence or the previous one (so tombstones are written and, at the
 * next full open, collected) and commits another; prints {@code COMMITTED}, {@code DELETING} and
 * {@code DELETED} as {@link CrashChild} does, while a timer halts the JVM at a random moment.
 */
public final class DegradedCrashChild {
    private DegradedCrashChild() {}

    static void commit(KvEngine engine, String id, Random rnd) {
        try (KvSequence s = engine.createSequence(id, CrashRecoveryTest.SHAPE)) {
            TestEngines.append(s, CrashRecoveryTest.seedOf(id), 20 + rnd.nextInt(60), 1 + rnd.nextInt(40));
            s.commit();
            System.out.println("COMMITTED " + id + " " + s.tokenCount());
        }
    }

    public static void main(String[] args) throws Exception {
        long seed = Long.parseLong(args[0]);
        List<Path> dirs = CrashChild.dirs(args);
        Random rnd = new Random(seed);
        CrashChild.killer(args).start();
        for (int round = 0; ; round++) {
            String id = "d" + seed + "-" + round;
            try (KvEngine engine = KvEngine.open(CrashRecoveryTest.config(dirs))) {
                commit(engine, id, rnd);
            }
            List<Path> present = new ArrayList<>(dirs);
            for (Path d : dirs) {
                if (Files.exists(d.resolve("manifests").resolve(id + ".kvom"))) {
                    present.remove(d); // one holder away; the other copy keeps every sequence visible
                    break;
                }
            }
            try (KvEngine engine = KvEngine.open(CrashRecoveryTest.config(present))) {
                String victim = rnd.nextBoolean() || round == 0 ? id : "d" + seed + "-" + (round - 1);
                System.out.println("DELETING " + victim);
                if (engine.deleteSequence(victim)) {
                    System.out.println("DELETED " + victim);
                }
                commit(engine, "e" + seed + "-" + round, rnd);
            }
        }
    }
}
