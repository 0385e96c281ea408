package io.kvoffload.bench.cli;

import io.kvoffload.workload.SyntheticWorkload;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * Which decoding steps Swarm's offline phase profiles and on how many threads it runs
 * ({@code --profile-stride}, {@code --threads}), as a picocli mixin of the commands that profile a
 * synthetic workload and then score the steps after it ({@code compare-quality},
 * {@code cluster-build}): the profiled queries are every {@code --profile-stride}th decoding step
 * from 0, and the scored ones follow them.
 */
public final class ProfileStepOptions {

    @Option(names = "--profile-stride", defaultValue = "4",
            description = "Decoding steps between profiled queries; the scored steps follow the profiled ones"
                    + " (default: ${DEFAULT-VALUE}).")
    public int profileStride;

    @Option(names = "--threads", defaultValue = "0",
            description = "Threads of the profiling and clustering; 0 = available processors (default: ${DEFAULT-VALUE}).")
    public int threads;

    /** {@code --threads}, with 0 the available processors. */
    public int threads() {
        return threads > 0 ? threads : Runtime.getRuntime().availableProcessors();
    }

    /** The {@code count} profiled queries of {@code layer}: every {@code --profile-stride}th decoding step from 0. */
    public List<float[]> queries(SyntheticWorkload workload, int layer, int count) {
        List<float[]> profile = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            profile.add(workload.query(layer, i * profileStride));
        }
        return profile;
    }

    /** The first scored step after {@code count} profiled ones: decoding continues after them. */
    public int firstScored(int count) {
        return count * profileStride;
    }
}
