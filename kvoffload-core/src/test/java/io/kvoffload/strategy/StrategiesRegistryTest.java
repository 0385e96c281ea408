package io.kvoffload.strategy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** How {@link Strategies} combines what providers contribute: order, name clashes, the default. */
class StrategiesRegistryTest {

    /** A strategy that only has a name (the registry never opens it). */
    private record Named(String name) implements SelectionStrategy {
        @Override
        public LayerSelector openLayer(LayerContext context) {
            throw new UnsupportedOperationException("not opened in this test");
        }
    }

    private record Provider(boolean own, List<SelectionStrategy> strategies, SelectionStrategy proposal)
            implements StrategyProvider {
        @Override
        public Optional<SelectionStrategy> proposedDefault() {
            return Optional.ofNullable(proposal);
        }
    }

    @Test
    void ownProvidersComeFirstAndKeepTheirNamesAndDefault() {
        SelectionStrategy theirs = new Named("blocks");
        SelectionStrategy theirDefault = new Named("theirs-default");
        SelectionStrategy ours = new Named("blocks");
        SelectionStrategy ourDefault = new Named("ours-default");
        // the third party is found first, as ServiceLoader might list it
        Provider third = new Provider(false, List.of(theirs, theirDefault), theirDefault);
        Provider own = new Provider(true, List.of(ourDefault, ours), ourDefault);
        SelectionStrategy single = new Named("single");
        Map<String, SelectionStrategy> byName = new LinkedHashMap<>();
        SelectionStrategy d = Strategies.collect(List.of(third, own), List.of(single, new Named("blocks")),
                p -> ((Provider) p).own(), byName, "test");
        assertSame(ourDefault, d, "kvoffload's own proposal wins");
        assertSame(ours, byName.get("blocks"), "a name stays with the first, own, provider");
        assertEquals(List.of("ours-default", "blocks", "theirs-default", "single"), List.copyOf(byName.keySet()));
    }

    @Test
    void aThirdPartyDefaultCountsWhereNoOwnProviderProposesOne() {
        SelectionStrategy theirs = new Named("theirs");
        SelectionStrategy d = Strategies.collect(List.of(new Provider(true, List.of(new Named("a")), null),
                new Provider(false, List.of(theirs), theirs)), List.of(), p -> ((Provider) p).own(),
                new LinkedHashMap<>(), "test");
        assertSame(theirs, d);
    }

    @Test
    void noDefaultOrANamelessStrategyIsRefused() {
        IllegalStateException none = assertThrows(IllegalStateException.class, () -> Strategies.collect(
                List.of(new Provider(true, List.of(new Named("a")), null)), List.of(), p -> true, new LinkedHashMap<>(),
                "META-INF/services seen by the test"));
        assertTrue(none.getMessage().contains("no StrategyProvider proposes a default strategy; read META-INF/services"),
                none.getMessage());
        IllegalArgumentException empty = assertThrows(IllegalArgumentException.class, () -> Strategies.collect(
                List.of(new Provider(true, List.of(new Named("")), null)), List.of(), p -> true, new LinkedHashMap<>(),
                "test"));
        assertTrue(empty.getMessage().startsWith("strategy.name() = \"\" for "), empty.getMessage());
    }

    @Test
    void theBuiltInProvidersRegisterEveryBuiltInStrategy() {
        assertTrue(Strategies.names().containsAll(List.of("swarm", "kvswap", "mass-mix", "oracle", "quest", "infllm",
                "pqcache", "clusterkv", "sparq", "sparf")), Strategies.names().toString());
        assertEquals("mass-auto", Strategies.defaultStrategy().name());
    }
}
