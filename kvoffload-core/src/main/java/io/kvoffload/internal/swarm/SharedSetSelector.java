package io.kvoffload.internal.swarm;

import io.kvoffload.internal.util.PartialTopK;
import io.kvoffload.strategy.FetchPlan;
import io.kvoffload.strategy.LayerSelector;

/**
 * One layer's selector of one token set for all heads ({@code mass-auto} where a token's entry is read
 * whole, {@code cmass-mix}, {@code mass-mix} and the other shared variants): scores the blocks, masks
 * those outside {@link FreeBlocks}, takes the top blocks whole.
 */
final class SharedSetSelector implements LayerSelector {
    private final BlockMassIndex index;
    private final int sinks;
    private final int window;
    private final float[] scores;
    private final int[] chosen;
    private final int[] range = new int[2];
    private final PartialTopK topK;
    private final ReadExchange exchange; // null where pages are not ranked in parts of one read

    SharedSetSelector(BlockMassIndex index, int sinks, int window, ReadExchange exchange) {
        this.index = index;
        this.sinks = sinks;
        this.window = window;
        this.exchange = exchange;
        this.scores = new float[index.blocks()];
        this.chosen = new int[index.blocks()];
        this.topK = new PartialTopK(index.blocks());
    }

    @Override
    public void select(float[] query, FetchPlan plan) {
        int budget = plan.budget();
        if (budget <= 0) {
            return;
        }
        index.score(query, scores);
        int bt = index.blockTokens(), blocks = index.blocks();
        long fresh = FreeBlocks.range(index, sinks, plan.tokens() - window, range);
        int candidates = range[1] - range[0];
        java.util.Arrays.fill(scores, 0, range[0], Float.NEGATIVE_INFINITY);
        java.util.Arrays.fill(scores, range[1], blocks, Float.NEGATIVE_INFINITY);
        // Whole blocks within the budget; all of them when the budget covers what they add (a
        // block that overlaps the sinks or the window adds fewer than blockTokens).
        int want = budget >= fresh ? candidates : Math.min(candidates, budget / bt);
        int n = topK.top(scores, 0, blocks, want, chosen, 0);
        if (exchange != null && n < candidates) {
            exchange.exchange(scores, 1, chosen, n);
        }
        plan.ensureCapacity(plan.size() + n * bt);
        for (int i = 0; i < n; ) { // chosen ascends: one range per run of consecutive blocks
            int first = chosen[i], end = first + 1;
            for (i++; i < n && chosen[i] == end; i++) {
                end++;
            }
            plan.addRange(first * bt, Math.min(index.tokens(), end * bt), FetchPlan.ALL_HEADS);
        }
    }

    @Override
    public long memoryBytes() {
        return index.memoryBytes() + 8L * scores.length + (exchange == null ? 0 : exchange.memoryBytes());
    }
}
