package io.kvoffload.internal.kvswap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/** The adapter's byte form: lossless, and no corruption or truncation gets through. */
class LowRankAdapterProperties {

    private static LowRankAdapter fitted(long seed, int kvHeads, int headDim, int rank) {
        SplittableRandom rnd = new SplittableRandom(seed);
        int d = kvHeads * headDim;
        int tokens = 3 + rnd.nextInt(40);
        return LowRankAdapter.fit(KvSwapFixtures.gaussian(rnd, tokens * d), tokens, kvHeads, headDim, Math.min(rank, d));
    }

    @Property(tries = 60)
    void encodeDecodeIsLossless(@ForAll long seed, @ForAll @IntRange(min = 1, max = 4) int kvHeads,
            @ForAll @IntRange(min = 1, max = 12) int headDim, @ForAll @IntRange(min = 1, max = 48) int rank) {
        LowRankAdapter a = fitted(seed, kvHeads, headDim, rank);
        byte[] bytes = a.encode();
        LowRankAdapter b = LowRankAdapter.decode(bytes);
        assertArrayEquals(a.projection(), b.projection());
        assertArrayEquals(a.singularValues(), b.singularValues());
        assertEquals(a.calibrationRows(), b.calibrationRows());
        assertEquals(Double.doubleToLongBits(a.retainedEnergy()), Double.doubleToLongBits(b.retainedEnergy()));
        assertArrayEquals(bytes, b.encode());
    }

    @Property(tries = 150)
    void anyFlippedByteIsRejected(@ForAll long seed, @ForAll @IntRange(min = 0, max = 10_000) int position,
            @ForAll @IntRange(min = 1, max = 255) int mask) {
        byte[] bytes = fitted(seed, 2, 4, 3).encode();
        int at = position % bytes.length;
        bytes[at] ^= (byte) mask;
        // CRC32C detects every error confined to 32 bits; the header checks catch the rest first.
        assertThrows(IllegalArgumentException.class, () -> LowRankAdapter.decode(bytes), "byte " + at);
    }

    @Property(tries = 60)
    void anyTruncationOrExtensionIsRejected(@ForAll long seed, @ForAll @IntRange(min = 0, max = 10_000) int cut,
            @ForAll @IntRange(min = 1, max = 16) int extra) {
        byte[] bytes = fitted(seed, 1, 8, 4).encode();
        int length = cut % bytes.length;
        assertThrows(IllegalArgumentException.class, () -> LowRankAdapter.decode(Arrays.copyOf(bytes, length)));
        assertThrows(IllegalArgumentException.class,
                () -> LowRankAdapter.decode(Arrays.copyOf(bytes, bytes.length + extra)));
    }
}
