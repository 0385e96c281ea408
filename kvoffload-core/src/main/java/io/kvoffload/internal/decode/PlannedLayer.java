package io.kvoffload.internal.decode;

import io.kvoffload.internal.sequence.SequenceHooks;

import io.kvoffload.DecodeOptions;
import io.kvoffload.KvShape;
import io.kvoffload.internal.sequence.SequenceLayerKv;
import io.kvoffload.strategy.FetchPlan;
import io.kvoffload.strategy.LayerContext;
import io.kvoffload.strategy.LayerSelector;
import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.strategy.LayerKv;
import java.lang.foreign.MemorySegment;

/**
 * A plug-in {@link SelectionStrategy}'s layer: its {@link LayerSelector} fills a {@link FetchPlan}
 * and the entry pipeline fetches the plan from the layer's layout (positional pages by default).
 * The sinks and the window are always attended, from DRAM.
 */
public final class PlannedLayer extends EntryLayer {
    private final LayerSelector selector;

    public PlannedLayer(SelectionStrategy strategy, SequenceHooks store, DecodeOptions options, int layer,
            DecodeCounters counters) {
        super(store, options, layer, counters);
        try {
            int tokens = sequence.tokenCount(layer);
            int laidOut = layout == null ? 0 : layout.clusteredTokens();
            KvShape shape = sequence.shape();
            LayerSelector s;
            // The layer's keys, read once into memory when they fit, for the strategy's index.
            try (SequenceLayerKv kv = new SequenceLayerKv(sequence, layer, tokens).keysInMemory(1L << 30)) {
                s = strategy.openLayer(new Context(shape, layer, tokens, laidOut, options, kv));
            }
            if (s == null) {
                throw new IllegalStateException("strategy " + strategy.name() + " returned no selector for layer "
                        + layer);
            }
            this.selector = s;
        } catch (RuntimeException e) {
            super.close();
            throw e;
        }
    }

    private record Context(KvShape shape, int layer, int tokens, int laidOutTokens, DecodeOptions options, LayerKv keys)
            implements LayerContext {
        @Override
        public int sinkTokens() {
            return options.sinkTokens();
        }

        @Override
        public int localWindow() {
            return options.localWindow();
        }
    }

    /**
     * Sinks and window first (DRAM), then the positions the selector adds; the plan's budget is the
     * step's token budget less those rows ({@code budgetTokens} when set).
     */
    @Override
    public void start(EntryFetch f, ViewBuffer view, float[] query) {
        long t0 = System.nanoTime();
        int tokens = window.end();
        f.beginRows(tokens);
        int rows = addResidentRows(f);
        long budget = options.budgetTokens() != DecodeOptions.AUTO ? options.budgetTokens()
                : Math.max(0, (long) Math.ceil(options.sparsity() * tokens) - rows);
        FetchPlan plan = f.plan;
        f.planned = true;
        plan.begin(layer, tokens, (int) Math.min(budget, tokens));
        selector.select(query, plan);
        int n = plan.size();
        counters.unitsSelected += n;
        int laidOut = layout == null ? 0 : layout.clusteredTokens();
        f.reserveReads(n);
        for (int i = 0; i < n; i++) {
            int t = plan.position(i);
            rows = f.addRow(t, rows);
            if (t < laidOut) {
                f.addRead(t); // residents are dropped by the scheduler (Eq. 8)
            }
        }
        launch(f, view, rows, t0);
    }

    @Override
    public void finish(EntryFetch f, ViewBuffer view) {
        f.gather();
        if (f.planned) {
            selector.afterStep(f.plan);
        }
    }

    @Override
    public void appended(MemorySegment keys, MemorySegment values, int before, int n) {
        super.appended(keys, values, before, n);
        selector.appended(before + n);
    }

    @Override
    public void close() {
        try {
            selector.close();
        } finally {
            super.close();
        }
    }
}
