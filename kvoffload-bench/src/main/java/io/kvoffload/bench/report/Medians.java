package io.kvoffload.bench.report;

import java.util.Arrays;
import java.util.List;

/** The median the benchmarks report over their paired rounds. */
public final class Medians {
    private Medians() {}

    /** The median of {@code xs} (the mean of the middle two for an even count); NaN when empty. */
    public static double of(List<Double> xs) {
        return of(xs.stream().mapToDouble(Double::doubleValue).toArray());
    }

    /** The median of {@code xs} (the mean of the middle two for an even count); NaN when empty. */
    public static double of(double... xs) {
        double[] a = xs.clone();
        Arrays.sort(a);
        if (a.length == 0) {
            return Double.NaN;
        }
        return a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
    }
}
