package io.kvoffload.strategy;

import io.kvoffload.internal.baseline.BaselineStrategy;
import io.kvoffload.internal.swarm.BlockMassStrategy;
import io.kvoffload.strategy.kvswap.KvSwap;
import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.internal.util.Checks;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;

/**
 * The registry of {@link SelectionStrategy}s by name: Swarm ({@code swarm}), KVSwap
 * ({@code kvswap}), the built-in baselines ({@code oracle},
 * {@code quest}, {@code infllm}, {@code pqcache}, {@code clusterkv}, {@code sparq}, {@code sparf-memory}: SparF over an in-memory copy of K), InstInfer's SparF from flash
 * ({@code sparf}, a strategy the service loader finds), Swarm's
 * blocks ranked by estimated per-head attention mass ({@code mass-mix}, the default, and the variants
 * measured against it: {@code mass-bound}, {@code mass-mean}, {@code logit-mean}, {@code mass-reps},
 * {@code mass-reps-bound}, {@code qmass-mix}, {@code qmass-bound}; see docs/swarm-offline.md),
 * every strategy a jar on the class or module path provides through {@link ServiceLoader}, and
 * those registered with {@link #register}. Thread-safe.
 */
public final class Strategies {
    private static final Map<String, SelectionStrategy> BY_NAME = new LinkedHashMap<>();
    private static final SelectionStrategy DEFAULT = BlockMassStrategy.variants().getFirst();

    static {
        BY_NAME.put(Swarm.defaults().name(), Swarm.defaults());
        BY_NAME.put(KvSwap.defaults().name(), KvSwap.defaults());
        for (SelectionStrategy s : BaselineStrategy.all()) {
            BY_NAME.put(s.name(), s);
        }
        BY_NAME.put(DEFAULT.name(), DEFAULT);
        for (SelectionStrategy s : BlockMassStrategy.variants()) {
            BY_NAME.putIfAbsent(s.name(), s);
        }
        for (SelectionStrategy s : ServiceLoader.load(SelectionStrategy.class, Strategies.class.getClassLoader())) {
            BY_NAME.putIfAbsent(s.name(), s);
        }
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
     * lay out: {@code mass-mix}, Swarm's blocks (or clusters) ranked by their estimated share of each
     * head's attention (docs/benchmarks.md, "Selection fidelity", has the measurements that chose it).
     */
    public static SelectionStrategy defaultStrategy() {
        return DEFAULT;
    }

    /** The names known now, built-ins first. */
    public static synchronized List<String> names() {
        return new ArrayList<>(BY_NAME.keySet());
    }
}
