package io.kvoffload;

import io.kvoffload.testing.TestEngines;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Child JVM for {@link CrashRecoveryTest}: writes and commits sequences in a loop (prefill, then
 * decode tokens with re-commits) and prints {@code COMMITTED id tokens} after each commit returns,
 * while a timer thread halts the JVM at a random moment, mid-append or mid-commit.
 */
public final class CrashChild {
    private CrashChild() {}

    /** The device directories a crash child is given: its arguments from the third on. */
    static List<Path> dirs(String[] args) {
        List<Path> dirs = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            dirs.add(Path.of(args[i]));
        }
        return dirs;
    }

    /** A daemon thread, not yet started, that halts the JVM (exit 137) after {@code args[1]} milliseconds. */
    static Thread killer(String[] args) {
        long haltAfterMillis = Long.parseLong(args[1]);
        Thread killer = new Thread(() -> {
            try {
                Thread.sleep(haltAfterMillis);
            } catch (InterruptedException e) {
                return;
            }
            Runtime.getRuntime().halt(137);
        });
        killer.setDaemon(true);
        return killer;
    }

    public static void main(String[] args) throws Exception {
        long seed = Long.parseLong(args[0]);
        List<Path> dirs = dirs(args);
        Thread killer = killer(args);
        Random rnd = new Random(seed);
        try (KvEngine engine = KvEngine.open(CrashRecoveryTest.config(dirs))) {
            killer.start();
            for (int round = 0; ; round++) {
                String id = "s" + seed + "-" + round;
                try (KvSequence s = engine.createSequence(id, CrashRecoveryTest.SHAPE)) {
                    TestEngines.append(s, CrashRecoveryTest.seedOf(id), 20 + rnd.nextInt(60), 1 + rnd.nextInt(40));
                    s.commit();
                    System.out.println("COMMITTED " + id + " " + s.tokenCount());
                    for (int d = 0; d < 3; d++) {
                        TestEngines.append(s, CrashRecoveryTest.seedOf(id), 1 + rnd.nextInt(5), 1);
                        s.commit();
                        System.out.println("COMMITTED " + id + " " + s.tokenCount());
                    }
                }
                if (round % 4 == 3) {
                    // Make room now and then, so deletions are also interrupted. DELETING first: a
                    // halt between the durable deletion and DELETED must not count as a lost commit.
                    System.out.println("DELETING s" + seed + "-" + (round - 2));
                    engine.deleteSequence("s" + seed + "-" + (round - 2));
                    System.out.println("DELETED s" + seed + "-" + (round - 2));
                }
            }
        }
    }
}
