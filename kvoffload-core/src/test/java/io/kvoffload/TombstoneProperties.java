package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.testing.StoreSpace;
import io.kvoffload.testing.TestEngines;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/**
 * Deletion tombstones as a property: random runs of commit (new ids and ids used before), append,
 * delete, fork, eviction (small pools), a device holding manifest copies going missing and coming
 * back, and reopening. After every reopen exactly the model's live sequences are listed (no dead
 * one returns, no live one is pushed out), each one that can be served reads back bit-exact, and
 * with every device present nothing is quarantined and the allocated space is exactly the union of
 * the live extents, with each shared extent held as often as live manifests name it.
 */
class TombstoneProperties {
    static final KvShape SHAPE = DeletionDurabilityTest.SHAPE; // 64 KiB extents
    static final long POOL = 1L << 20; // 16 extents per device, sequences of up to 10: writes evict
    static final List<String> IDS = List.of("s0", "s1", "s2", "s3", "s4", "s5");

    @Property(tries = 8)
    void noDeadSequenceComesBackAndSpaceIsExactlyTheLiveExtents(
            @ForAll @Size(min = 6, max = 20) List<@IntRange(min = 0, max = 1 << 20) Integer> steps) throws IOException {
        Path root = Files.createTempDirectory("kvo-tomb");
        try {
            List<Path> dirs = DeletionDurabilityTest.storeWithManifestDeviceLast(root, POOL);
            KvConfig full = DeletionDurabilityTest.config(dirs, POOL);
            KvConfig degraded = DeletionDurabilityTest.config(dirs.subList(0, 2), POOL);
            Map<String, ForkProperties.Model> live = new TreeMap<>();
            boolean missing = false;
            KvEngine e = KvEngine.open(full);
            try {
                int n = 0;
                for (int code : steps) {
                    java.util.Random r = new java.util.Random(code);
                    long seed = 1000 + n++;
                    Set<String> unavailable = new HashSet<>(e.stats().unavailableSequences());
                    List<String> served = live.keySet().stream().filter(x -> !unavailable.contains(x)).toList();
                    List<String> free = IDS.stream().filter(x -> !live.containsKey(x)).toList();
                    int tokens = 16 * (1 + r.nextInt(6)) - r.nextInt(8);
                    int op = r.nextInt(12);
                    if (op < 3 && !free.isEmpty()) { // a new sequence, perhaps under an id deleted before
                        String id = free.get(r.nextInt(free.size()));
                        if (commitNew(e, id, seed, tokens)) {
                            live.put(id, new ForkProperties.Model(List.<long[]>of()).plus(seed, tokens));
                        }
                    } else if (op < 5 && !live.isEmpty()) {
                        List<String> ids = new ArrayList<>(live.keySet());
                        String id = ids.get(r.nextInt(ids.size()));
                        assertTrue(e.deleteSequence(id), id);
                        live.remove(id);
                    } else if (op < 6 && !served.isEmpty() && !free.isEmpty()) {
                        String from = served.get(r.nextInt(served.size()));
                        String id = free.get(r.nextInt(free.size()));
                        int prefix = 1 + r.nextInt(live.get(from).tokens());
                        if (fork(e, from, id, prefix)) {
                            live.put(id, live.get(from).prefix(prefix));
                        }
                    } else if (op < 7 && !served.isEmpty()) {
                        String id = served.get(r.nextInt(served.size()));
                        int more = Math.min(tokens, 160 - live.get(id).tokens());
                        if (more > 0 && append(e, id, seed, more)) {
                            live.put(id, live.get(id).plus(seed, more));
                        }
                    } else if (op < 10) { // the device holding manifest copies goes, or comes back
                        e.close();
                        missing = !missing;
                        e = KvEngine.open(missing ? degraded : full);
                        check(e, live, missing);
                    } else {
                        e.close();
                        e = KvEngine.open(missing ? degraded : full);
                        check(e, live, missing);
                    }
                    // Writes make room by evicting least-recently-used sequences: follow the engine
                    // (only here: at a reopen the model must match exactly).
                    live.keySet().retainAll(e.sequences().stream().map(SequenceInfo::id).toList());
                }
                e.close();
                e = KvEngine.open(full);
                check(e, live, false);
            } finally {
                e.close();
            }
        } finally {
            TestEngines.deleteRecursively(root);
        }
    }

    /** Commits a new sequence; false when the pools are full of what cannot be evicted (nothing stays). */
    static boolean commitNew(KvEngine e, String id, long seed, int tokens) {
        try (KvSequence s = e.createSequence(id, SHAPE)) {
            TestEngines.append(s, seed, tokens, 16);
            s.commit();
            return true;
        } catch (KvCapacityException full) {
            return false;
        }
    }

    static boolean fork(KvEngine e, String from, String id, int prefix) {
        try (KvSequence f = e.fork(from, id, prefix)) {
            f.commit();
            return true;
        } catch (KvCapacityException full) {
            return false;
        }
    }

    static boolean append(KvEngine e, String id, long seed, int tokens) {
        try (KvSequence s = e.openSequenceForAppend(id)) {
            TestEngines.append(s, seed, tokens, 16);
            s.commit();
            return true;
        } catch (KvCapacityException full) {
            return false;
        }
    }

    /** Right after a reopen: the listing is the model's; what can be served reads exact; with all devices, space is exact. */
    static void check(KvEngine e, Map<String, ForkProperties.Model> live, boolean missing) {
        assertEquals(List.copyOf(live.keySet()), e.sequences().stream().map(SequenceInfo::id).sorted().toList(),
                "listed after reopening " + (missing ? "without" : "with") + " the device");
        KvStats st = e.stats();
        assertTrue(st.quarantine().isEmpty(), st.toString());
        Set<String> unavailable = new HashSet<>(st.unavailableSequences());
        for (Map.Entry<String, ForkProperties.Model> x : live.entrySet()) {
            if (!unavailable.contains(x.getKey())) {
                ForkProperties.assertReadsBack(e, x.getKey(), x.getValue());
            }
        }
        if (!missing) {
            assertTrue(unavailable.isEmpty() && st.unavailableDevices().isEmpty(), st.toString());
            StoreSpace.assertExactlyLiveExtents(e, live.keySet(), SHAPE);
        }
    }
}
