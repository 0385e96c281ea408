package io.kvoffload.internal.util;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link PartialTopK}'s candidate pass through the Vector API: a lane mask of the scores that reach the
 * threshold and one compressing store of their indices ({@code vpcompressd} with AVX-512), 0.29 ms
 * against 0.70 ms for the branch-free scalar loop over 524,288 scores at 10% passing on this
 * project's machines (docs/benchmarks.md, "Selection time after the sampled top-k"). Loaded only where {@link PartialTopK}
 * found the module and 16-lane vectors; elsewhere the scalar loop runs.
 */
final class VectorCompaction {
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_PREFERRED;

    private VectorCompaction() {}

    /** Lanes a step compares (and indices it may store past the last candidate). */
    static int lanes() {
        return F.length() == I.length() ? F.length() : 0;
    }

    /**
     * Appends to {@code out} from {@code m} the indices {@code i ∈ [from, to)} with {@code scores[i] ≥
     * reach}, ascending, and returns the new count. {@code out} must have room for {@code m + (to − from)
     * + }{@link #lanes()} indices: a store writes whole vectors.
     */
    static int atLeast(float[] scores, int from, int to, float reach, int[] out, int m) {
        int lanes = F.length(), i = from, bound = from + F.loopBound(to - from);
        IntVector iota = IntVector.zero(I).addIndex(1);
        for (; i < bound; i += lanes) {
            VectorMask<Float> reaches = FloatVector.fromArray(F, scores, i).compare(VectorOperators.GE, reach);
            if (reaches.anyTrue()) {
                VectorMask<Integer> lanesOut = reaches.cast(I);
                iota.add(i).compress(lanesOut).intoArray(out, m);
                m += lanesOut.trueCount();
            }
        }
        for (; i < to; i++) {
            out[m] = i;
            m += scores[i] >= reach ? 1 : 0;
        }
        return m;
    }
}
