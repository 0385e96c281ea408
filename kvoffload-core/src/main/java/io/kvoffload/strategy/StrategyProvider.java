package io.kvoffload.strategy;

import java.util.List;
import java.util.Optional;

/**
 * Contributes {@link SelectionStrategy}s to {@link Strategies}, found through
 * {@link java.util.ServiceLoader}: name the implementation in
 * {@code META-INF/services/io.kvoffload.strategy.StrategyProvider} (class path) or with
 * {@code provides io.kvoffload.strategy.StrategyProvider with …} (module path). Every built-in
 * strategy is registered this way, so the registry names none of them; a jar with a single
 * strategy may instead provide the {@link SelectionStrategy} itself. Implementations need a public
 * no-argument constructor.
 */
public interface StrategyProvider {
    /** The strategies this provider contributes, in the order {@link Strategies#names()} lists them. */
    List<SelectionStrategy> strategies();

    /**
     * The strategy this provider proposes as the decoders' default ({@link Strategies#defaultStrategy()}).
     * kvoffload's own providers are asked first, so a third party's proposal counts only where none
     * of them makes one. Default: none.
     */
    default Optional<SelectionStrategy> proposedDefault() {
        return Optional.empty();
    }
}
