package io.kvoffload.bench.compare;

import io.kvoffload.workload.WorkloadFamily;
import java.util.Iterator;
import picocli.CommandLine.Option;

/**
 * The synthetic workload family ({@code --family}) as a picocli mixin of {@code compare} and
 * {@code select-eval}, with the {@link WorkloadFamily} it names: the flag, its default, its help
 * and the lookup are declared once.
 */
final class FamilyOption {

    @Option(names = "--family", paramLabel = "<family>", defaultValue = "default", completionCandidates = Names.class,
            description = "Synthetic workload family: ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE};"
                    + " docs/swarm-offline.md §1b).")
    String name;

    /** The family {@code --family} names; an unknown name fails with the allowed ones. */
    WorkloadFamily get() {
        return WorkloadFamily.byName(name);
    }

    /** The family names, for --help ({@code --family} here, {@code compare-sweep}'s {@code --families}). */
    static final class Names implements Iterable<String> {
        @Override
        public Iterator<String> iterator() {
            return WorkloadFamily.names().iterator();
        }
    }
}
