package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.kvoffload.testing.StoreSpace;
import io.kvoffload.testing.TestEngines;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/**
 * Reference counting of shared extents as a property: random runs of create, extend, fork,
 * delete, eviction (a small pool) and restart. After every step each live sequence reads back
 * bit-exact, every device's allocated space is exactly the union of the live manifests' extents (no
 * leak, no double free), and each extent has as many holders as live manifests name it.
 */
class ForkProperties {
    // 2 layers of 2 KiB entries in 16-token blocks: 32 KiB extents, 32 in the one 1 MiB device, so
    // writes evict (a sequence of up to 127 tokens takes up to 16 of them).
    static final KvShape SHAPE = new KvShape(2, 8, 4, 128, DType.BF16);

    /** A live sequence as the model knows it: runs {seed, from, to} of tokens written with one seed each. */
    record Model(List<long[]> runs) {
        int tokens() {
            return runs.isEmpty() ? 0 : (int) runs.get(runs.size() - 1)[2];
        }

        Model prefix(int n) {
            List<long[]> out = new ArrayList<>();
            for (long[] r : runs) {
                if (r[1] < n) {
                    out.add(new long[] {r[0], r[1], Math.min(r[2], n)});
                }
            }
            return new Model(out);
        }

        Model plus(long seed, int n) {
            List<long[]> out = new ArrayList<>(runs);
            out.add(new long[] {seed, tokens(), tokens() + n});
            return new Model(out);
        }
    }

    @Property(tries = 12)
    void liveSequencesReadBackAndSpaceIsExactlyTheirExtents(
            @ForAll @Size(min = 4, max = 22) List<@IntRange(min = 0, max = 1 << 20) Integer> steps) throws IOException {
        Path root = Files.createTempDirectory("kvo-fork");
        try {
            KvConfig config = TestEngines.config(TestEngines.deviceDirs(root, 1), "portable").blockTokens(16)
                    .deviceCapacityBytes(1L << 20).build();
            Map<String, Model> live = new LinkedHashMap<>();
            KvEngine e = KvEngine.open(config);
            try {
                int n = 0;
                for (int code : steps) {
                    // Each step's choices come from its code: uniform, and shrinking still works on the codes.
                    java.util.Random r = new java.util.Random(code);
                    String id = "s" + n++;
                    long seed = 1000 + n;
                    List<String> ids = new ArrayList<>(live.keySet());
                    String pick = ids.isEmpty() ? null : ids.get(r.nextInt(ids.size()));
                    int size = 1 + r.nextInt(100);
                    int op = r.nextInt(10);
                    switch (pick == null ? 0 : op < 3 ? 0 : op < 5 ? 1 : op - 3) {
                        case 0 -> {
                            try (KvSequence s = e.createSequence(id, SHAPE)) {
                                TestEngines.append(s, seed, size, 1 + r.nextInt(23));
                                s.commit();
                            }
                            live.put(id, new Model(List.<long[]>of()).plus(seed, size));
                        }
                        case 1 -> {
                            int prefix = 1 + r.nextInt(live.get(pick).tokens());
                            int more = r.nextInt(3) == 0 ? 0 : Math.min(size, 127 - prefix);
                            try (KvSequence f = e.fork(pick, id, prefix)) {
                                if (more > 0) {
                                    TestEngines.append(f, seed, more, 1 + r.nextInt(17));
                                }
                                f.commit();
                            }
                            Model m = live.get(pick).prefix(prefix);
                            live.put(id, more > 0 ? m.plus(seed, more) : m);
                        }
                        case 2 -> {
                            int more = Math.min(1 + size % 20, 127 - live.get(pick).tokens());
                            if (more <= 0) {
                                continue;
                            }
                            try (KvSequence s = e.openSequenceForAppend(pick)) {
                                TestEngines.append(s, seed, more, 3);
                                s.commit();
                            }
                            live.put(pick, live.get(pick).plus(seed, more));
                        }
                        case 3 -> {
                            e.deleteSequence(pick);
                            live.remove(pick);
                        }
                        case 4 -> {
                            e.close();
                            e = KvEngine.open(config);
                        }
                        default -> {
                            // A fork closed without commit: nothing of it may stay.
                            try (KvSequence f = e.fork(pick, id, 1 + r.nextInt(live.get(pick).tokens()))) {
                                TestEngines.append(f, seed, size, 5);
                            }
                        }
                    }
                    // Writes make room by evicting least-recently-used sequences: follow the engine.
                    List<String> listed = e.sequences().stream().map(SequenceInfo::id).toList();
                    live.keySet().retainAll(listed);
                    assertEquals(live.keySet().stream().sorted().toList(), listed.stream().sorted().toList());
                    check(e, live);
                }
            } finally {
                e.close();
            }
        } finally {
            TestEngines.deleteRecursively(root);
        }
    }

    /** Sequence {@code id} holds exactly the tokens {@code model} says, bit-exact. */
    static void assertReadsBack(KvEngine e, String id, Model model) {
        try (KvSequence s = e.openSequence(id)) {
            assertEquals(model.tokens(), s.tokenCount(), id);
            for (long[] r : model.runs()) {
                assertNull(TestEngines.verify(s, r[0], IntStream.range((int) r[1], (int) r[2]).toArray()),
                        id + " tokens " + r[1] + ".." + r[2]);
            }
        }
    }

    /** Every live sequence bit-exact; allocated space = union of live extents; holders = manifests naming each. */
    static void check(KvEngine e, Map<String, Model> live) {
        for (Map.Entry<String, Model> x : live.entrySet()) {
            assertReadsBack(e, x.getKey(), x.getValue());
        }
        StoreSpace.assertExactlyLiveExtents(e, live.keySet(), SHAPE);
    }
}
