package io.kvoffload.bench.report;

import java.util.List;

/** The median the benchmarks report over their paired rounds. */
public final class Medians {
    private Medians() {}

    /** The median of {@code xs} (the mean of the middle two for an even count); NaN when empty. */
    public static double of(List<Double> xs) {
        double[] a = xs.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        if (a.length == 0) {
            return Double.NaN;
        }
        return a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
    }
}
