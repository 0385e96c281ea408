package io.kvoffload.testing;

import io.kvoffload.KvShape;
import io.kvoffload.strategy.LayerContext;
import io.kvoffload.strategy.LayerKv;
import io.kvoffload.strategy.LayoutUnits;

/**
 * {@code base} with the layout's units (or null) and {@code headGroups} stored head groups, as the
 * pipeline's context hands them to a strategy.
 */
public record AdjustedLayerContext(LayerContext base, LayoutUnits layoutUnits, int headGroups) implements LayerContext {
    public KvShape shape() { return base.shape(); }
    public int layer() { return base.layer(); }
    public int tokens() { return base.tokens(); }
    public int laidOutTokens() { return base.laidOutTokens(); }
    public int sinkTokens() { return base.sinkTokens(); }
    public int localWindow() { return base.localWindow(); }
    public LayerKv keys() { return base.keys(); }
}
