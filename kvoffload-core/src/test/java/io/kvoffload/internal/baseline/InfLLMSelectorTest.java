package io.kvoffload.internal.baseline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvoffload.strategy.DenseLayerKv;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class InfLLMSelectorTest {
    private static final float R2 = (float) Math.sqrt(2);

    /**
     * Twelve tokens, d = 2: 2 initial tokens, blocks [2, 6) and [6, 10), a window of 2. Block 0's
     * stand-in queries are tokens 6 and 7 (sum (1, 2)): its tokens score 1, 2, 2, −2, so with one
     * representative token 3 wins the tie with token 4. Block 1's are tokens 10 and 11 (sum (1, 1)):
     * token 9 (score 6) wins.
     */
    private static final float[][] KEYS = {{
        1, 1, 1, 1,                   // initial tokens 0, 1
        1, 0, 0, 1, 2, 0, 0, -1,      // block 0: tokens 2..5
        0, 2, 1, 0, 0, -1, 3, 3,      // block 1: tokens 6..9
        1, 0, 0, 1}};                 // window: tokens 10, 11

    @Test
    void representativesAreTheTokensTheFollowingWindowAttendsTo() {
        DenseLayerKv kv = new DenseLayerKv(12, 2, KEYS, null);
        InfLLMSelector one = new InfLLMSelector(kv, 1, 2, 2, 4, 1, InfLLMSelector.BUDGET_DERIVED);
        assertEquals(2, one.blocks());
        assertEquals(4, one.fixedTokens());
        float[] q = {R2, -R2}; // q/√d = (1, −1)
        float[] scores = new float[2];
        one.blockScores(q, scores);
        assertArrayEquals(new float[] {-1, 0}, scores, 1e-6f); // block keys (0, 1) and (3, 3)
        assertArrayEquals(new int[] {0, 1, 6, 7, 8, 9, 10, 11}, Layers.select(one, q, 8));
        assertArrayEquals(new int[] {0, 1, 10, 11}, Layers.select(one, q, 7)); // a block does not fit
        assertEquals(12, Layers.select(one, q, 12).length);

        InfLLMSelector two = new InfLLMSelector(kv, 1, 2, 2, 4, 2, InfLLMSelector.BUDGET_DERIVED);
        two.blockScores(q, scores);
        // block keys: mean of tokens 3, 4 = (1, 0.5); mean of tokens 9, 6 = (1.5, 2.5)
        assertArrayEquals(new float[] {0.5f, -1f}, scores, 1e-6f);
        assertArrayEquals(new int[] {0, 1, 2, 3, 4, 5, 10, 11}, Layers.select(two, q, 8));
        assertEquals(4L * 2 * 2, two.indexBytes());
    }

    /** A fixed block count (InfLLM's 16) ignores the budget. */
    @Test
    void fixedBlockCount() {
        DenseLayerKv kv = Layers.random(3072, 2, 8, false, 5); // 21 whole blocks between 128 + 256 fixed tokens
        InfLLMSelector s = new InfLLMSelector(kv, 4, 128, 256, 128, 4, InfLLMSelector.DEFAULT_TOP_BLOCKS);
        assertEquals(21, s.blocks());
        assertEquals(128 + 256 + 16 * 128, s.maxSelected(1));
        float[] q = Layers.query(4, 8, false, new SplittableRandom(2));
        int[] sel = Layers.select(s, q, 1);
        assertEquals(128 + 256 + 16 * 128, sel.length);
        for (int t = 0; t < 128; t++) {
            assertEquals(t, sel[t]);
        }
        assertEquals(3072 - 1, sel[sel.length - 1]);
    }

    /** Budget-derived: ⌊(budget − fixed) / blockSize⌋ blocks, and the fixed part even when it exceeds the budget. */
    @Test
    void budgetDerivedBlockCount() {
        DenseLayerKv kv = Layers.random(4992, 1, 8, false, 6); // 36 whole blocks
        InfLLMSelector s = new InfLLMSelector(kv, 1, 256);
        assertEquals(0, s.blocksFor(100));
        assertEquals(384, s.maxSelected(100));
        assertEquals(2, s.blocksFor(384 + 300));
        assertEquals(36, s.blocksFor(4992));
        float[] q = Layers.query(1, 8, false, new SplittableRandom(3));
        assertEquals(384, Layers.select(s, q, 100).length);
        assertEquals(384 + 256, Layers.select(s, q, 384 + 300).length);
    }
}
