package io.kvoffload.attention;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.strategy.LayerKv;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/**
 * {@link ExactAttention#headLogits}: a layer's keys taken range by range, in any cut, give {@link
 * ExactAttention#headWeights}'s rows bit for bit; ranges out of order or past the layer are named.
 */
class HeadLogitsProperties {

    static DenseLayerKv layer(int tokens, int kvHeads, int headDim, SplittableRandom r) {
        float[][] keys = new float[kvHeads][tokens * headDim];
        for (float[] k : keys) {
            for (int i = 0; i < k.length; i++) {
                k[i] = (float) (r.nextGaussian() * 3);
            }
        }
        return new DenseLayerKv(tokens, headDim, keys, null);
    }

    static float[] query(int queryHeads, int headDim, SplittableRandom r) {
        float[] q = new float[queryHeads * headDim];
        for (int i = 0; i < q.length; i++) {
            q[i] = (float) r.nextGaussian();
        }
        return q;
    }

    @Property(tries = 60)
    void rangesInAnyCutGiveTheHeadWeightsBitForBit(@ForAll @IntRange(min = 1, max = 3000) int tokens,
            @ForAll @IntRange(min = 1, max = 3) int kvHeads, @ForAll @IntRange(min = 1, max = 5) int group,
            @ForAll @IntRange(min = 1, max = 80) int headDim, @ForAll long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        DenseLayerKv kv = layer(tokens, kvHeads, headDim, r);
        float[] q = query(kvHeads * group, headDim, r);
        ExactAttention a = new ExactAttention(kvHeads * group, kvHeads, headDim);
        float[][] want = a.headWeights(kv, q); // the keys read in place, head by head
        for (LayerKv source : new LayerKv[] {kv, copied(kv)}) { // in place, and copied chunk by chunk
            ExactAttention.HeadLogits h = a.headLogits(tokens, q);
            for (int from = 0; from < tokens; ) { // ranges of random lengths, empty ones too
                int to = Math.min(tokens, from + r.nextInt(1200));
                h.range(source, from, to);
                from = to;
            }
            float[][] got = h.weights();
            assertEquals(want.length, got.length);
            for (int i = 0; i < want.length; i++) {
                assertArrayEquals(want[i], got[i], "query head " + i); // exact: the same operations per token
            }
            assertArrayEquals(got[0], h.weights()[0], "asking again normalises nothing twice");
        }
    }

    /** {@code kv} seen through {@link LayerKv#keys} alone, as a stored layer is. */
    static LayerKv copied(DenseLayerKv kv) {
        return new LayerKv() {
            @Override public int tokens() { return kv.tokens(); }
            @Override public int kvHeads() { return kv.kvHeads(); }
            @Override public int headDim() { return kv.headDim(); }
            @Override public void keys(int kvHead, int fromToken, int count, float[] dst, int dstOffset) {
                kv.keys(kvHead, fromToken, count, dst, dstOffset);
            }
            @Override public void values(int kvHead, int fromToken, int count, float[] dst, int dstOffset) {
                throw new UnsupportedOperationException("keys only");
            }
        };
    }

    @Test
    void rangesOutOfOrderPastTheLayerOrOfAnotherShapeAreNamed() {
        SplittableRandom r = new SplittableRandom(7);
        DenseLayerKv kv = layer(100, 2, 8, r);
        ExactAttention a = new ExactAttention(4, 2, 8);
        ExactAttention.HeadLogits h = a.headLogits(100, query(4, 8, r));
        h.range(kv, 0, 40);
        IllegalArgumentException gap = assertThrows(IllegalArgumentException.class, () -> h.range(kv, 50, 60));
        assertTrue(gap.getMessage().contains("range [50, 60)") && gap.getMessage().contains("40"), gap.getMessage());
        IllegalArgumentException past = assertThrows(IllegalArgumentException.class, () -> h.range(kv, 40, 101));
        assertTrue(past.getMessage().contains("range [40, 101)") && past.getMessage().contains("100"), past.getMessage());
        LayerKv other = layer(100, 1, 8, r);
        IllegalArgumentException shape = assertThrows(IllegalArgumentException.class, () -> h.range(other, 40, 50));
        assertTrue(shape.getMessage().contains("1 KV heads × 8"), shape.getMessage());
        IllegalStateException early = assertThrows(IllegalStateException.class, h::weights);
        assertTrue(early.getMessage().contains("tokens [40, 100) not taken yet"), early.getMessage());
        assertThrows(IllegalArgumentException.class, () -> a.headLogits(0, new float[32]));
        IllegalArgumentException q = assertThrows(IllegalArgumentException.class, () -> a.headLogits(10, new float[3]));
        assertTrue(q.getMessage().contains("query.length = 3"), q.getMessage());
    }
}
