package io.kvoffload.strategy;

import io.kvoffload.internal.util.Checks;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;

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
        // kvoffload's own providers first (stable sort): their names and default win over a third party's
        providers.sort(Comparator.comparing(p -> !isOwn(p)));
        SelectionStrategy proposed = null;
        for (StrategyProvider p : providers) {
            for (SelectionStrategy s : p.strategies()) {
                BY_NAME.putIfAbsent(s.name(), s);
            }
            Optional<SelectionStrategy> d = p.proposedDefault();
            if (proposed == null && d.isPresent()) {
                proposed = d.get();
            }
        }
        for (SelectionStrategy s : ServiceLoader.load(SelectionStrategy.class, loader)) {
            BY_NAME.putIfAbsent(s.name(), s);
        }
        if (proposed == null) {
            throw new IllegalStateException("no StrategyProvider proposes a default strategy; kvoffload-core's"
                    + " META-INF/services/" + StrategyProvider.class.getName() + " (or its module's provides) is"
                    + " missing from " + loader);
        }
        DEFAULT = proposed;
    }

    private static boolean isOwn(StrategyProvider p) {
        return p.getClass().getName().startsWith("io.kvoffload.");
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
        String name = strategy.name();
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("strategy.name() = " + (name == null ? "null" : "\"\"")
                    + "; allowed: a non-empty name");
        }
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
