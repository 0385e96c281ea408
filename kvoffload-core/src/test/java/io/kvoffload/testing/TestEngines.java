package io.kvoffload.testing;

import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.strategy.swarm.ClusterOptions;
import io.kvoffload.KvConfig;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.Workload;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/** Helpers to build engines over temporary directories and to write and verify sequences. */
public final class TestEngines {
    private TestEngines() {}

    /**
     * Creates sequence {@code id} with {@code tokens} tokens of {@code w} in every layer, clusters
     * each layer from {@code profiled} queries (steps {@code firstStep..}) and commits it.
     *
     * @return per layer the K bytes and V bytes as stored, token-major, for {@link KvViews#assertBitExact}
     */
    public static byte[][][] storeClustered(KvEngine e, String id, SyntheticWorkload w, int tokens, int firstStep,
            int profiled) {
        return store(e, id, w, tokens, (s, l) -> {
            List<float[]> profile = new ArrayList<>();
            for (int q = 0; q < profiled; q++) {
                profile.add(w.query(l, firstStep + q));
            }
            Swarm.clusterLayerFromQueries(s, l, profile, ClusterOptions.defaults());
        });
    }

    /**
     * Creates sequence {@code id} with {@code tokens} tokens of {@code w} in every layer, each layer
     * laid out by {@code strategy}'s offline phase, and commits it.
     *
     * @return per layer the K bytes and V bytes as stored, token-major, for {@link KvViews#assertBitExact}
     */
    public static byte[][][] storeLaidOut(KvEngine e, String id, SyntheticWorkload w, int tokens,
            io.kvoffload.strategy.SelectionStrategy strategy) {
        return store(e, id, w, tokens, strategy::layOut);
    }

    /**
     * Creates sequence {@code id} with {@code tokens} tokens of {@code w} in every layer, hands each
     * layer to {@code layOut} once its KV is appended (a strategy's offline phase, or a test's own
     * clustering), and commits it.
     *
     * @return per layer the K bytes and V bytes as stored, token-major, for {@link KvViews#assertBitExact}
     */
    public static byte[][][] store(KvEngine e, String id, SyntheticWorkload w, int tokens,
            java.util.function.ObjIntConsumer<KvSequence> layOut) {
        KvShape shape = w.spec().shape();
        byte[][][] expected = new byte[shape.layers()][2][];
        try (KvSequence s = e.createSequence(id, shape); Arena a = Arena.ofConfined()) {
            s.appendTokens(new int[tokens]);
            MemorySegment k = a.allocate((long) tokens * shape.halfEntryBytes());
            MemorySegment v = a.allocate((long) tokens * shape.halfEntryBytes());
            for (int l = 0; l < shape.layers(); l++) {
                w.writeKv(l, 0, tokens, shape.dtype(), k, v);
                expected[l][0] = k.toArray(ValueLayout.JAVA_BYTE);
                expected[l][1] = v.toArray(ValueLayout.JAVA_BYTE);
                s.appendKv(l, k, v);
                layOut.accept(s, l);
            }
            s.commit();
        }
        return expected;
    }

    /**
     * K and V of the first {@code tokens} tokens of {@code w}'s layer {@code layer} as stored
     * (token-major, in the shape's dtype), for {@link KvViews#assertBitExact}.
     */
    public static byte[][] kvBytes(Workload w, int layer, int tokens) {
        KvShape shape = w.shape();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment k = a.allocate((long) tokens * shape.halfEntryBytes());
            MemorySegment v = a.allocate((long) tokens * shape.halfEntryBytes());
            w.writeKv(layer, 0, tokens, shape.dtype(), k, v);
            return new byte[][] {k.toArray(ValueLayout.JAVA_BYTE), v.toArray(ValueLayout.JAVA_BYTE)};
        }
    }

    /**
     * Appends the K and V of tokens {@code [from, from + n)} of {@code w} to every layer of
     * {@code s}; the caller appends their token ids.
     */
    public static void appendKv(KvSequence s, Workload w, int from, int n) {
        KvShape shape = w.shape();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment k = a.allocate((long) n * shape.halfEntryBytes());
            MemorySegment v = a.allocate((long) n * shape.halfEntryBytes());
            for (int l = 0; l < shape.layers(); l++) {
                w.writeKv(l, from, n, shape.dtype(), k, v);
                s.appendKv(l, k, v);
            }
        }
    }

    /** Creates {@code n} device directories under {@code root}. */
    public static List<Path> deviceDirs(Path root, int n) {
        List<Path> dirs = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                dirs.add(Files.createDirectories(root.resolve("ssd" + i)));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return dirs;
    }

    public static KvConfig.Builder config(List<Path> dirs, String backend) {
        return KvConfig.builder()
                .ssdDirectories(dirs)
                .ioBackend(backend)
                .deviceCapacityBytes(16L << 20)
                .dramBudgetBytes(64L << 20)
                .dramSlabBytes(1L << 20)
                .ioThreadsPerDevice(2);
    }

    public static KvEngine open(KvConfig config) {
        return KvEngine.open(config);
    }

    /**
     * Appends {@code n} tokens of deterministic data to every layer, in chunks of at most
     * {@code chunk} tokens, starting at the sequence's current length.
     */
    public static void append(KvSequence seq, long seed, int n, int chunk) {
        KvShape shape = seq.shape();
        int from = seq.tokenCount();
        seq.appendTokens(KvTestData.tokenIds(seed, from, n));
        try (Arena arena = Arena.ofConfined()) {
            for (int l = 0; l < shape.layers(); l++) {
                for (int done = 0; done < n; done += chunk) {
                    int c = Math.min(chunk, n - done);
                    MemorySegment k = KvTestData.tokens(arena, shape, seed, l, from + done, c, false);
                    MemorySegment v = KvTestData.tokens(arena, shape, seed, l, from + done, c, true);
                    seq.appendKv(l, k, v);
                }
            }
        }
    }

    /** Creates sequence {@code id} of {@code shape} with {@code tokens} tokens of {@code seed}'s data and commits it. */
    public static void commit(KvEngine e, String id, KvShape shape, long seed, int tokens) {
        try (KvSequence s = e.createSequence(id, shape)) {
            append(s, seed, tokens, 16);
            s.commit();
        }
    }

    /** Committed sequence {@code id} holds exactly {@code tokens} tokens of {@code seed}'s data. */
    public static void assertExact(KvEngine e, String id, long seed, int tokens) {
        try (KvSequence s = e.openSequence(id)) {
            org.junit.jupiter.api.Assertions.assertEquals(tokens, s.tokenCount(), id);
            org.junit.jupiter.api.Assertions.assertNull(verify(s, seed, all(tokens)), id);
        }
    }

    /** Reads {@code positions} of every layer and returns the first mismatch as text, or null. */
    public static String verify(KvSequence seq, long seed, int[] positions) {
        KvShape shape = seq.shape();
        try (Arena arena = Arena.ofConfined()) {
            long bytes = (long) Math.max(1, positions.length) * shape.halfEntryBytes();
            MemorySegment k = arena.allocate(bytes);
            MemorySegment v = arena.allocate(bytes);
            for (int l = 0; l < shape.layers(); l++) {
                seq.read(l, positions, k, v);
                int bad = KvTestData.firstMismatch(k, v, shape, seed, l, positions);
                if (bad >= 0) {
                    return "layer " + l + " position " + positions[bad] + " differs";
                }
            }
        }
        return null;
    }

    /** Reads {@code positions} of one layer and returns the first mismatch as text, or null. */
    public static String verifySingleLayer(KvSequence seq, long seed, int layer, int[] positions) {
        KvShape shape = seq.shape();
        try (Arena arena = Arena.ofConfined()) {
            long bytes = (long) Math.max(1, positions.length) * shape.halfEntryBytes();
            MemorySegment k = arena.allocate(bytes);
            MemorySegment v = arena.allocate(bytes);
            seq.read(layer, positions, k, v);
            int bad = KvTestData.firstMismatch(k, v, shape, seed, layer, positions);
            return bad < 0 ? null : "layer " + layer + " position " + positions[bad] + " differs";
        }
    }

    public static int[] all(int n) {
        int[] p = new int[n];
        for (int i = 0; i < n; i++) {
            p[i] = i;
        }
        return p;
    }

    /** {@code 0..n-1} in a random order (Fisher–Yates). */
    public static int[] shuffled(java.util.Random rnd, int n) {
        int[] p = all(n);
        for (int i = n - 1; i > 0; i--) {
            int j = rnd.nextInt(i + 1);
            int t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
        return p;
    }

    public static void deleteRecursively(Path root) {
        if (root == null || !Files.exists(root)) {
            return;
        }
        try (Stream<Path> s = Files.walk(root)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
