package io.kvoffload.strategy.sparf;

import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.strategy.StrategyProvider;
import java.util.List;

/**
 * Contributes InstInfer's SparF from flash to the registry: {@code sparf} (dimensions per KV head)
 * and {@code sparf-qh} (per query head, Algorithm 1 as written). Found through
 * {@link java.util.ServiceLoader}.
 */
public final class SparFStrategies implements StrategyProvider {
    @Override
    public List<SelectionStrategy> strategies() {
        SparF sparf = new SparF();
        return List.of(sparf, sparf.withDimensions(SparF.Dimensions.PER_QUERY_HEAD));
    }
}
