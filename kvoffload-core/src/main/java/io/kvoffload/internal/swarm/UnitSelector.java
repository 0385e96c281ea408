package io.kvoffload.internal.swarm;

import io.kvoffload.internal.util.StampSet;
import io.kvoffload.strategy.FetchPlan;
import io.kvoffload.strategy.LayerSelector;
import io.kvoffload.strategy.LayoutUnits;

/**
 * One layer's selector over the layout's units (Swarm's co-activation clusters and blocks): scores
 * them, then takes whole units best first (Swarm's {@link ClusterSelection} walk) while their tokens
 * beyond the sinks, the window and the units already taken fit the budget; a unit that does not fit
 * is passed over, and the walk stops after {@link #MISFITS} in a row. A budget that covers every
 * laid-out token beyond the sinks and the window takes them all (dense attention).
 */
final class UnitSelector implements LayerSelector {
    /** Units passed over in a row (too large for what is left) before a step stops looking. */
    static final int MISFITS = 32;

    private final BlockMassIndex index;
    private final int[] offsets;
    private final int[] members;
    private final int[] sizes;
    private final int[] lowest;  // each unit's smallest member: units wholly in the window are skipped early
    private final int laidOut;
    private final int sinks;
    private final int window;
    private final float[] scores;
    private final ClusterSelection selection;
    private final StampSet taken = new StampSet();

    UnitSelector(BlockMassIndex index, LayoutUnits units, int laidOut, int sinks, int window) {
        this.index = index;
        int n = units.count();
        this.offsets = new int[n + 1];
        this.sizes = new int[n];
        this.lowest = new int[n];
        for (int u = 0; u < n; u++) {
            sizes[u] = units.size(u);
            offsets[u + 1] = offsets[u] + sizes[u];
        }
        this.members = new int[offsets[n]];
        for (int u = 0; u < n; u++) {
            int low = Integer.MAX_VALUE;
            for (int i = 0; i < sizes[u]; i++) {
                int t = units.member(u, i);
                members[offsets[u] + i] = t;
                low = Math.min(low, t);
            }
            lowest[u] = low;
        }
        this.laidOut = laidOut;
        this.sinks = sinks;
        this.window = window;
        this.scores = new float[n];
        this.selection = new ClusterSelection(n);
    }

    @Override
    public void select(float[] query, FetchPlan plan) {
        int budget = plan.budget();
        if (budget <= 0) {
            return;
        }
        int freeFrom = Math.max(0, plan.tokens() - window); // the window starts here
        int from = Math.min(sinks, laidOut), to = Math.min(freeFrom, laidOut);
        if (budget >= to - from) { // every laid-out token the sinks and window leave out
            plan.addRange(from, Math.max(from, to), FetchPlan.ALL_HEADS);
            return;
        }
        index.score(query, scores);
        taken.clear(laidOut);
        selection.begin(scores, sizes, scores.length, budget);
        int added = 0, misfits = 0;
        for (int u = selection.next(); u >= 0 && added < budget && misfits < MISFITS; u = selection.next()) {
            if (lowest[u] >= freeFrom) {
                continue; // wholly in the window
            }
            int fresh = 0;
            for (int i = offsets[u]; i < offsets[u + 1]; i++) {
                int t = members[i];
                fresh += t >= sinks && t < freeFrom && !taken.contains(t) ? 1 : 0;
            }
            if (fresh == 0) {
                continue;
            }
            if (added + fresh > budget) {
                misfits++;
                continue;
            }
            misfits = 0;
            plan.ensureCapacity(plan.size() + fresh);
            for (int i = offsets[u]; i < offsets[u + 1]; i++) {
                int t = members[i];
                if (t >= sinks && t < freeFrom && taken.add(t)) {
                    plan.add(t);
                }
            }
            added += fresh;
        }
    }

    @Override
    public long memoryBytes() {
        return index.memoryBytes() + 4L * (scores.length * 4L + members.length);
    }
}
