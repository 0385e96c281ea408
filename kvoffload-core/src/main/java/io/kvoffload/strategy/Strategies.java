package io.kvoffload.strategy;

import io.kvoffload.internal.util.Checks;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.function.Predicate;

/**
 * The registry of {@link SelectionStrategy}s by name: every strategy a {@link StrategyProvider}
 * contributes (the built-in ones, Swarm's and KVSwap's and the comparison's baselines, are
 * registered that way; docs/architecture.md lists them), every {@link SelectionStrategy} a jar on
 * the class or module path provides through {@link ServiceLoader}, and those registered with
 * {@link #register}. kvoffload's own providers come first. Thread-safe.
 */
public final class Strategies {
    private static final Map<String, SelectionStrategy> BY_NAME = new LinkedHashMap<>();
    private static final SelectionStrategy DEFAULT;

    static {
        ClassLoader loader = Strategies.class.getClassLoader();
        List<StrategyProvider> providers = new ArrayList<>();
        ServiceLoader.load(StrategyProvider.class, loader).forEach(providers::add);
        List<SelectionStrategy> single = new ArrayList<>();
        ServiceLoader.load(SelectionStrategy.class, loader).forEach(single::add);
        DEFAULT = collect(providers, single, p -> p.getClass().getName().startsWith("io.kvoffload."), BY_NAME,
                "META-INF/services/" + StrategyProvider.class.getName() + " (or the module's provides) seen by " + loader);
    }

    /**
     * Registers what {@code providers} contribute, then the {@code single} strategies, into
     * {@code byName} (the first strategy of a name wins; {@code own} providers, kvoffload's, go first)
     * and returns the default: the proposal of the first provider that makes one.
     *
     * @throws IllegalArgumentException if a strategy's name is null or empty
     * @throws IllegalStateException if no provider proposes a default ({@code where} says what was read)
     */
    static SelectionStrategy collect(List<StrategyProvider> providers, List<SelectionStrategy> single,
            Predicate<StrategyProvider> own, Map<String, SelectionStrategy> byName, String where) {
        List<StrategyProvider> ordered = new ArrayList<>(providers);
        ordered.sort(Comparator.comparing(p -> !own.test(p))); // stable: ServiceLoader order within each kind
        SelectionStrategy proposed = null;
        for (StrategyProvider p : ordered) {
            for (SelectionStrategy s : p.strategies()) {
                byName.putIfAbsent(checkName(s), s);
            }
            Optional<SelectionStrategy> d = p.proposedDefault();
            if (proposed == null && d.isPresent()) {
                proposed = d.get();
            }
        }
        for (SelectionStrategy s : single) {
            byName.putIfAbsent(checkName(s), s);
        }
        if (proposed == null) {
            throw new IllegalStateException("no StrategyProvider proposes a default strategy; read " + where);
        }
        return proposed;
    }

    private static String checkName(SelectionStrategy strategy) {
        String name = strategy.name();
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("strategy.name() = " + (name == null ? "null" : "\"\"") + " for "
                    + strategy.getClass().getName() + "; allowed: a non-empty name");
        }
        return name;
    }

    private Strategies() {}

    /**
     * The strategy called {@code name}.
     *
     * @throws IllegalArgumentException if none is
     */
    public static synchronized SelectionStrategy named(String name) {
        Checks.notNull("name", name);
        SelectionStrategy s = BY_NAME.get(name);
        if (s == null) {
            throw new IllegalArgumentException("strategy = " + name + " is unknown; allowed: " + String.join(", ",
                    BY_NAME.keySet()));
        }
        return s;
    }

    /**
     * Adds {@code strategy} under its {@link SelectionStrategy#name() name}.
     *
     * @throws IllegalArgumentException if the name is empty or another strategy has it
     */
    public static synchronized void register(SelectionStrategy strategy) {
        Checks.notNull("strategy", strategy);
        String name = checkName(strategy);
        SelectionStrategy old = BY_NAME.get(name);
        if (old != null && old != strategy) {
            throw new IllegalArgumentException("strategy.name() = " + name + " is taken by " + old
                    + "; allowed: a name not in " + BY_NAME.keySet());
        }
        BY_NAME.put(name, strategy);
    }

    /**
     * The strategy a decoder uses when its options name none, and for layers another strategy did not
     * lay out: the one the first provider proposes ({@link StrategyProvider#proposedDefault()};
     * docs/architecture.md names the built-in default and docs/benchmarks.md, "Selection fidelity",
     * has the measurements that chose it).
     */
    public static SelectionStrategy defaultStrategy() {
        return DEFAULT;
    }

    /** The names known now, built-ins first. */
    public static synchronized List<String> names() {
        return new ArrayList<>(BY_NAME.keySet());
    }
}
