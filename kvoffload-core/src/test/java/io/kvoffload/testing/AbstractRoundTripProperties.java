package io.kvoffload.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.kvoffload.DType;
import io.kvoffload.KvConfig;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * The storage round trip as a property, run once per I/O backend (each backend module subclasses
 * it): random shapes, dtypes, token counts, block sizes, device counts and read sets; write in
 * random chunks, commit, reopen in a fresh engine, read back bit-exact.
 */
public abstract class AbstractRoundTripProperties {

    /** The backend under test ({@code portable}, {@code io_uring}). */
    protected abstract String backend();

    /** Case for one try. */
    public record Case(KvShape shape, int tokens, int blockTokens, int devices, int chunk, long seed) {}

    @Provide
    Arbitrary<Case> cases() {
        Arbitrary<KvShape> shapes = Combinators.combine(
                        Arbitraries.integers().between(1, 3),
                        Arbitraries.integers().between(1, 4),
                        Arbitraries.integers().between(1, 4),
                        Arbitraries.of(2, 8, 64, 128),
                        Arbitraries.of(DType.values()))
                .as((layers, kvHeads, group, headDim, dtype) -> new KvShape(layers, kvHeads * group, kvHeads, headDim,
                        dtype));
        return Combinators.combine(shapes,
                        Arbitraries.integers().between(1, 400),
                        Arbitraries.of(1, 3, 16, 64),
                        Arbitraries.integers().between(1, 4),
                        Arbitraries.integers().between(1, 97),
                        Arbitraries.longs())
                .as(Case::new);
    }

    @Property(tries = 25)
    void everyEntryIsStoredAndReadBackBitExact(@ForAll("cases") Case c) throws IOException {
        Path root = Files.createTempDirectory("kvo-rt");
        try {
            List<Path> dirs = TestEngines.deviceDirs(root, c.devices());
            KvConfig config = TestEngines.config(dirs, backend()).blockTokens(c.blockTokens()).build();
            String id;
            try (KvEngine engine = TestEngines.open(config);
                    KvSequence seq = engine.createSequence(c.shape())) {
                id = seq.id();
                int prefill = c.tokens() / 2 + 1;
                TestEngines.append(seq, c.seed(), prefill, c.chunk());
                Random rnd = new Random(c.seed());
                // Reads before commit come from DRAM (partial block) and the SSDs (full blocks).
                assertNull(TestEngines.verify(seq, c.seed(), randomPositions(rnd, seq.tokenCount(), 50)));
                seq.commit();
                TestEngines.append(seq, c.seed(), c.tokens() - prefill + 1, 1);
                seq.commit();
            }
            try (KvEngine engine = TestEngines.open(config);
                    KvSequence seq = engine.openSequence(id)) {
                int n = c.tokens() + 1;
                assertEquals(n, seq.tokenCount());
                Random rnd = new Random(c.seed() ^ 1);
                assertNull(TestEngines.verify(seq, c.seed(), TestEngines.all(n)));
                assertNull(TestEngines.verify(seq, c.seed(), randomPositions(rnd, n, 64)));
            }
        } finally {
            TestEngines.deleteRecursively(root);
        }
    }

    static int[] randomPositions(Random rnd, int n, int count) {
        int[] p = new int[count];
        for (int i = 0; i < count; i++) {
            p[i] = rnd.nextInt(n);
        }
        return p;
    }
}
