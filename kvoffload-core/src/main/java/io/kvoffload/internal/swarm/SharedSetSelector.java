package io.kvoffload.internal.swarm;

import io.kvoffload.internal.util.PartialTopK;
import io.kvoffload.strategy.FetchPlan;
import io.kvoffload.strategy.LayerSelector;

/**
 * One layer's selector of one token set for all heads ({@code mass-auto} where a token's entry is read
 * whole, {@code cmass-mix}, {@code mass-mix} and the other shared variants): scores the blocks, masks
 * those outside {@link FreeBlocks}, takes the top blocks whole.
 *
 * <p><b>Peaks.</b> With a {@code peakWeight} above 0 (the default's {@link BlockMassStrategy#PEAK_WEIGHT})
 * a block scores its estimated shares summed over the KV heads plus {@code peakWeight} times the largest
 * one KV head gives it: {@code Σ_h S_hb + w × max_h S_hb}. A block that one head concentrates on (a
 * retrieval head's passkey, an induction head's earlier occurrence) has its share from that head alone,
 * blurred by the block's summary, while a block of diffuse mass collects a little from every head; the sum
 * alone lets the second crowd out the first, which a per-head plan would have kept. At {@code w = 1} a
 * diffuse block over eight KV heads gains 1/8 of its score and a one-head block doubles its own:
 * docs/benchmarks.md, "Peaks in the shared set".
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
    private final float peakWeight;      // 0: the summed shares alone
    private final float[] peaks;         // per block: the largest KV head's share; null without peaks
    private final float[] head;          // per block: a KV head's share while its rows are summed; null without peaks

    /**
     * @param peakWeight the weight of a block's largest single-KV-head share in its score, ≥ 0 (see "Peaks");
     *     above 0 it needs a mass combination
     */
    SharedSetSelector(BlockMassIndex index, int sinks, int window, ReadExchange exchange, float peakWeight) {
        if (!(peakWeight >= 0) || Float.isInfinite(peakWeight)
                || peakWeight > 0 && index.combination() == BlockMassIndex.Combination.SUM_LOGITS) {
            throw new IllegalArgumentException("peakWeight = " + peakWeight + " with combination " + index.combination()
                    + "; allowed: a finite value ≥ 0, and 0 with SUM_LOGITS (which keeps no per-head shares)");
        }
        this.peakWeight = peakWeight;
        this.peaks = peakWeight > 0 ? new float[index.blocks()] : null;
        this.head = peakWeight > 0 ? new float[index.blocks()] : null;
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
        int bt = index.blockTokens(), blocks = index.blocks();
        long fresh = FreeBlocks.range(index, sinks, plan.tokens() - window, range);
        if (peakWeight > 0) {
            scoreWithPeaks(query, range[0], range[1]);
        } else {
            index.score(query, scores);
        }
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

    /**
     * {@code scores[b] = Σ_h S_hb + peakWeight × max_h S_hb} for the candidate blocks {@code [lo, hi)}, where
     * {@code S_hb} is KV head {@code h}'s estimated share of block {@code b} ({@link BlockMassIndex#groupShares}).
     */
    private void scoreWithPeaks(float[] query, int lo, int hi) {
        index.shares(query);
        java.util.Arrays.fill(scores, lo, hi, 0f);
        java.util.Arrays.fill(peaks, lo, hi, 0f);
        for (int h = 0, kvHeads = index.kvHeads(); h < kvHeads; h++) {
            index.groupShares(h, h + 1, head, 0, lo, hi);
            for (int b = lo; b < hi; b++) {
                scores[b] += head[b];
                peaks[b] = Math.max(peaks[b], head[b]); // vectorised; a conditional was not (+25% a step)
            }
        }
        for (int b = lo; b < hi; b++) {
            scores[b] = Math.fma(peakWeight, peaks[b], scores[b]);
        }
    }

    @Override
    public long memoryBytes() {
        return index.memoryBytes() + 8L * scores.length + (peaks == null ? 0 : 8L * peaks.length)
                + (exchange == null ? 0 : exchange.memoryBytes());
    }
}
