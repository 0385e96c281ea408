package io.kvoffload.bench.compare;

import io.kvoffload.KvShape;
import io.kvoffload.strategy.LayerContext;
import io.kvoffload.strategy.LayerKv;

/**
 * A {@link LayerContext} over keys held outside a store, every token laid out: how the benchmarks
 * open a strategy's layer without a sequence ({@code select-eval}, {@code BlockMassSelectionBench}).
 */
public record KeysContext(KvShape shape, int layer, LayerKv keys, int sinkTokens, int localWindow) implements LayerContext {
    @Override
    public int tokens() {
        return keys.tokens();
    }

    @Override
    public int laidOutTokens() {
        return keys.tokens();
    }
}
