package io.kvoffload.cuda;

import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.strategy.swarm.ClusterOptions;
import io.kvoffload.KvConfig;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.testing.KvTestData;
import io.kvoffload.testing.TestEngines;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Real KvViews for the upload tests and the benchmark: a sequence of deterministic KV
 * ({@link KvTestData}, seed {@link #SEED}) stored on SSD directories and clustered, so a decoder on
 * the reopened sequence fetches its tokens from the SSDs into DRAM views.
 */
final class DecodedViews {
    static final long SEED = 17;

    private DecodedViews() {}

    /** Two device directories under {@code root}, blocks of 16 tokens, the portable I/O backend. */
    static KvConfig.Builder config(Path root) {
        return TestEngines.config(TestEngines.deviceDirs(root, 2), "portable").blockTokens(16);
    }

    /**
     * Writes {@code tokens} tokens to every layer of a new sequence {@code id} and clusters every
     * layer from random activation sets (clustering reads no key values, so any bytes will do).
     */
    static void store(KvEngine engine, String id, KvShape shape, int tokens) {
        try (KvSequence s = engine.createSequence(id, shape)) {
            TestEngines.append(s, SEED, tokens, 1024);
            SplittableRandom rnd = new SplittableRandom(SEED);
            for (int l = 0; l < shape.layers(); l++) {
                List<int[]> sets = new ArrayList<>();
                for (int q = 0; q < 16; q++) {
                    int[] set = new int[Math.max(1, tokens / 16)];
                    for (int i = 0; i < set.length; i++) {
                        set[i] = rnd.nextInt(tokens);
                    }
                    sets.add(set);
                }
                Swarm.clusterLayer(s, l, sets, ClusterOptions.defaults());
            }
            s.commit();
        }
    }

    /** The stored bytes of {@code position}'s row for {@code kvHead} in {@code layer}: K, or V when {@code value}. */
    static byte[] row(KvShape shape, int layer, int position, int kvHead, boolean value) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment entry = a.allocate(shape.halfEntryBytes());
            KvTestData.fill(entry, shape, SEED, layer, position, 1, value);
            long rowBytes = (long) shape.headDim() * shape.dtype().bytes();
            return entry.asSlice(kvHead * rowBytes, rowBytes).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
        }
    }
}
