package io.kvoffload.bench.compare;

import java.util.Arrays;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * The token budgets of {@code compare} and of {@code compare-sweep}, which hands them on to each
 * cell's compare run ({@code --budgets}, {@code --budget}), as a picocli mixin.
 */
final class BudgetOptions {

    @Option(names = "--budgets", split = ",", defaultValue = "0.05,0.1,0.2",
            description = "Token budgets as shares of the prefix: the quality runs, the points of the recall–bytes"
                    + " curves (default: ${DEFAULT-VALUE}).")
    double[] budgets;

    @Option(names = "--budget", defaultValue = "0.1",
            description = "The budget of the I/O, batch and scaling runs and of the summary tables"
                    + " (default: ${DEFAULT-VALUE}).")
    double budget;

    /** {@code --budgets} as given on a command line, comma-separated. */
    String joined() {
        return String.join(",", Arrays.stream(budgets).mapToObj(String::valueOf).toList());
    }

    /** These options as arguments of a compare run. */
    List<String> args() {
        return List.of("--budgets", joined(), "--budget", String.valueOf(budget));
    }
}
