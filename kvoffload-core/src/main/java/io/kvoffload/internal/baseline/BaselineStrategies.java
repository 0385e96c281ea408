package io.kvoffload.internal.baseline;

import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.strategy.StrategyProvider;
import java.util.List;

/** Registers the comparison's baselines ({@link BaselineStrategy#all()}). */
public final class BaselineStrategies implements StrategyProvider {
    @Override
    public List<SelectionStrategy> strategies() {
        return BaselineStrategy.all();
    }
}
