package io.kvoffload.testing;

import io.kvoffload.KvShape;
import io.kvoffload.strategy.LayerContext;
import io.kvoffload.strategy.LayerKv;
import io.kvoffload.strategy.StoredUnits;

/** A {@link LayerContext} with every answer given: how tests open a strategy's layer without a decoder. */
public record TestLayerContext(KvShape shape, int layer, int tokens, int laidOutTokens, int sinkTokens,
        int localWindow, LayerKv keys, StoredUnits units) implements LayerContext {
    /** Every one of {@code keys}' tokens laid out, no unit layout. */
    public TestLayerContext(KvShape shape, int layer, LayerKv keys, int sinkTokens, int localWindow) {
        this(shape, layer, keys.tokens(), keys.tokens(), sinkTokens, localWindow, keys, null);
    }
}
