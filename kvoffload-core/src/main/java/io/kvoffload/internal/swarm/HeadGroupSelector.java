package io.kvoffload.internal.swarm;

import io.kvoffload.internal.storage.HeadShards;
import io.kvoffload.internal.util.PartialTopK;
import io.kvoffload.strategy.FetchPlan;
import io.kvoffload.strategy.LayerSelector;

/**
 * One layer's per-head selector: each head's estimated shares of the blocks, summed per head group
 * of the plan ({@link FetchPlan#headGroups()}), ranked as (group, block) pairs pooled over the
 * groups — a sharp head spends few blocks and a diffuse one many — within the budget counted in
 * whole entries (a pair is {@code 1 / headGroups} of its block's entries). Each chosen block is
 * added once, for the KV heads of the groups that chose it. With one group it takes exactly the
 * blocks {@link SharedSetSelector} takes without peaks.
 */
final class HeadGroupSelector implements LayerSelector {
    private final BlockMassIndex index;
    private final int kvHeads;
    private final int sinks;
    private final int window;
    private final float[] pairs;
    private final long[] blockHeads;
    private final int[] chosen;
    private final int[] range = new int[2];
    private final PartialTopK topK;
    private final ReadExchange exchange; // null where pages are not ranked in parts of one read

    HeadGroupSelector(BlockMassIndex index, int kvHeads, int sinks, int window, ReadExchange exchange) {
        this.index = index;
        this.exchange = exchange;
        this.kvHeads = kvHeads;
        this.sinks = sinks;
        this.window = window;
        int blocks = index.blocks();
        this.pairs = new float[kvHeads * blocks];
        this.blockHeads = new long[blocks];
        this.chosen = new int[kvHeads * blocks];
        this.topK = new PartialTopK(kvHeads * blocks);
    }

    @Override
    public void select(float[] query, FetchPlan plan) {
        int budget = plan.budget();
        if (budget <= 0) {
            return;
        }
        int groups = plan.headGroups();
        if (kvHeads % groups != 0 || groups > kvHeads) {
            throw new IllegalStateException("plan.headGroups() = " + groups + " does not divide the layer's "
                    + kvHeads + " KV heads");
        }
        int perGroup = kvHeads / groups;
        int bt = index.blockTokens(), blocks = index.blocks();
        index.shares(query);
        long fresh = FreeBlocks.range(index, sinks, plan.tokens() - window, range); // per group
        int lo = range[0], hi = range[1], candidates = hi - lo;
        for (int g = 0; g < groups; g++) {
            int base = g * blocks;
            java.util.Arrays.fill(pairs, base, base + lo, Float.NEGATIVE_INFINITY); // sinks' and window's blocks
            java.util.Arrays.fill(pairs, base + hi, base + blocks, Float.NEGATIVE_INFINITY);
            index.groupShares(g * perGroup, (g + 1) * perGroup, pairs, base, lo, hi); // candidate blocks only
        }
        // Pairs within the budget in entries (a pair reads 1/groups of its block's entries); every
        // candidate pair once the budget covers what they add, so a full budget attends every token.
        long want = budget >= fresh ? (long) candidates * groups
                : Math.min((long) candidates * groups, (long) budget * groups / bt);
        int n = topK.top(pairs, 0, groups * blocks, (int) want, chosen, 0);
        if (exchange != null && n < (long) candidates * groups) {
            exchange.exchange(pairs, groups, chosen, n);
        }
        int added = 0;
        long groupHeads = HeadShards.groupBits(0, perGroup);
        for (int i = 0, g = 0, groupEnd = blocks; i < n; i++) { // chosen ascends: group by group
            while (chosen[i] >= groupEnd) {
                g++;
                groupEnd += blocks;
                groupHeads = HeadShards.groupBits(g, perGroup);
            }
            int b = chosen[i] - (groupEnd - blocks);
            added += blockHeads[b] == 0 ? 1 : 0;
            blockHeads[b] |= groupHeads;
        }
        plan.ensureCapacity(plan.size() + added * bt);
        long all = HeadShards.headBits(0, kvHeads);
        // One range per run of consecutive blocks read for the same heads, in block order; every
        // block, not only the candidates, so that no chosen block's heads outlive the step.
        for (int b = 0; b < blocks; ) {
            long heads = blockHeads[b];
            if (heads == 0) {
                b++;
                continue;
            }
            int first = b;
            do {
                blockHeads[b++] = 0;
            } while (b < blocks && blockHeads[b] == heads);
            plan.addRange(first * bt, Math.min(index.tokens(), b * bt), heads == all ? FetchPlan.ALL_HEADS : heads);
        }
    }

    @Override
    public long memoryBytes() {
        return index.memoryBytes() + 4L * (pairs.length + chosen.length) + 8L * blockHeads.length
                + (exchange == null ? 0 : exchange.memoryBytes());
    }
}
