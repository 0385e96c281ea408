package io.kvoffload.internal.kvswap;

import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.strategy.StrategyProvider;
import io.kvoffload.strategy.kvswap.KvSwap;
import java.util.List;

/** Registers KVSwap ({@code kvswap}) with its default options. */
public final class KvSwapStrategies implements StrategyProvider {
    @Override
    public List<SelectionStrategy> strategies() {
        return List.of(KvSwap.defaults());
    }
}
