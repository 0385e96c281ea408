package io.kvoffload.workload;

import static io.kvoffload.workload.SyntheticWorkloadTest.assertMessage;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import io.kvoffload.internal.util.TopK;
import java.util.Arrays;
import java.util.Comparator;
import java.util.stream.IntStream;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

class TopKProperties {

    /** Quickselect agrees with a full sort by (score descending, index ascending). */
    @Property(tries = 300)
    void agreesWithSorting(@ForAll @Size(min = 1, max = 300) float[] raw, @ForAll @IntRange(min = 0, max = 300) int k0) {
        float[] scores = new float[raw.length];
        for (int i = 0; i < raw.length; i++) {
            // few distinct values, so ties are common; no NaN
            scores[i] = Float.isNaN(raw[i]) ? 0f : Math.round(raw[i]) % 5;
        }
        int k = Math.min(k0, scores.length);
        Integer[] order = IntStream.range(0, scores.length).boxed().toArray(Integer[]::new);
        Arrays.sort(order, Comparator.<Integer>comparingDouble(i -> -scores[i]).thenComparingInt(i -> i));
        int[] expectedRanked = Arrays.stream(order).limit(k).mapToInt(Integer::intValue).toArray();
        int[] expectedSet = expectedRanked.clone();
        Arrays.sort(expectedSet);
        assertArrayEquals(expectedSet, TopK.indices(scores, k));
        assertArrayEquals(expectedRanked, TopK.ranked(scores, k));
    }

    @Example
    void rejectsNaNAndBadK() {
        assertMessage(() -> TopK.indices(new float[] {1f, Float.NaN}, 1), "NaN");
        assertMessage(() -> TopK.indices(new float[] {1f}, 2), "k = 2", "0..1");
    }
}
