package io.kvoffload.internal.swarm;

import io.kvoffload.strategy.SelectionStrategy;
import io.kvoffload.strategy.StrategyProvider;
import io.kvoffload.strategy.swarm.Swarm;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Registers Swarm ({@code swarm}) and its blocks ranked by estimated attention mass
 * ({@link BlockMassStrategy#variants()}, whose first, {@code mass-mix}, it proposes as the library's
 * default: docs/benchmarks.md, "Selection fidelity", has the measurements that chose it).
 */
public final class SwarmStrategies implements StrategyProvider {
    private static final List<SelectionStrategy> VARIANTS = BlockMassStrategy.variants();

    @Override
    public List<SelectionStrategy> strategies() {
        List<SelectionStrategy> all = new ArrayList<>();
        all.add(Swarm.defaults());
        all.addAll(VARIANTS);
        return all;
    }

    @Override
    public Optional<SelectionStrategy> proposedDefault() {
        return Optional.of(VARIANTS.getFirst());
    }
}
