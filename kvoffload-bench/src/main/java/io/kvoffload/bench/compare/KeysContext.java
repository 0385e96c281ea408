package io.kvoffload.bench.compare;

import io.kvoffload.KvShape;
import io.kvoffload.strategy.LayerContext;
import io.kvoffload.strategy.LayerKv;
import io.kvoffload.strategy.LayoutUnits;
import io.kvoffload.strategy.StoredUnits;

/**
 * A {@link LayerContext} over keys held outside a store, every token laid out: how the benchmarks
 * open a strategy's layer without a sequence ({@code select-eval}, {@code BlockMassSelectionBench}),
 * or with the unit layout a stored sequence holds ({@code compare}'s DRAM index of SparF).
 */
public record KeysContext(KvShape shape, int layer, LayerKv keys, int sinkTokens, int localWindow, StoredUnits units,
        LayoutUnits layoutUnits, int headGroups, float[] openingQuery) implements LayerContext {
    /** Keys, units and head groups, opened without a query. */
    public KeysContext(KvShape shape, int layer, LayerKv keys, int sinkTokens, int localWindow, StoredUnits units,
            LayoutUnits layoutUnits, int headGroups) {
        this(shape, layer, keys, sinkTokens, localWindow, units, layoutUnits, headGroups, null);
    }

    /** Keys only: no unit layout, no layout units, tokens stored whole. */
    public KeysContext(KvShape shape, int layer, LayerKv keys, int sinkTokens, int localWindow) {
        this(shape, layer, keys, sinkTokens, localWindow, null, null, 1);
    }

    /** Keys and a stored unit layout. */
    public KeysContext(KvShape shape, int layer, LayerKv keys, int sinkTokens, int localWindow, StoredUnits units) {
        this(shape, layer, keys, sinkTokens, localWindow, units, null, 1);
    }

    /** Keys and layout units (Swarm's clusters), tokens stored whole. */
    public KeysContext(KvShape shape, int layer, LayerKv keys, int sinkTokens, int localWindow, StoredUnits units,
            LayoutUnits layoutUnits) {
        this(shape, layer, keys, sinkTokens, localWindow, units, layoutUnits, 1);
    }

    @Override
    public int tokens() {
        return keys.tokens();
    }

    @Override
    public int laidOutTokens() {
        return keys.tokens();
    }
}
