package io.kvoffload.internal.util;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link PartialTopK}'s candidate pass through the Vector API: a lane mask of the scores that reach the
 * threshold, then the indices of its set lanes stored contiguously, without a branch on the data. With
 * 16 lanes (AVX-512) one compressing store writes them ({@code vpcompressd}): 0.29 ms against 0.70 ms
 * for the branch-free scalar loop over 524,288 scores at 10% passing (docs/benchmarks.md, "Selection
 * time after the sampled top-k"). With 8 lanes (AVX2) compress is emulated and slower than scalar, so
 * the mask's 8 bits pick a row of a 256-row table of lane offsets, and one whole-vector store writes them
 * plus the run's base: the whole top 10% of 65,536 scores in 59 µs against 165 µs with the scalar loop,
 * of 524,288 in 452 against 1,628 µs; walking the mask's set bits instead, whose loop mispredicts, took
 * 61 and 747 µs (docs/benchmarks.md, "The candidate pass on AVX2"). Loaded only where {@link
 * PartialTopK} found the module and at least 8 lanes; elsewhere the scalar loop runs.
 */
final class VectorCompaction {
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_PREFERRED;
    /** The 8-lane species of {@link #byTable}, on any machine with AVX2 or more. */
    private static final VectorSpecies<Float> F8 = FloatVector.SPECIES_256;
    private static final VectorSpecies<Integer> I8 = IntVector.SPECIES_256;
    /**
     * Row {@code mask} (8 ints) lists the set lanes of an 8-bit mask, ascending, then zeros: where a
     * compressing store would put each lane.
     */
    private static final int[] LANES_OF_MASK = lanesOfMask();

    private VectorCompaction() {}

    private static int[] lanesOfMask() {
        int[] table = new int[256 * 8];
        for (int mask = 0; mask < 256; mask++) {
            int j = 0;
            for (int lane = 0; lane < 8; lane++) {
                if ((mask >>> lane & 1) != 0) {
                    table[mask * 8 + j++] = lane;
                }
            }
        }
        return table;
    }

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
        return F.length() > 8 ? compressed(scores, from, to, reach, out, m) : byTable(scores, from, to, reach, out, m);
    }

    /** {@link #atLeast} by compressing stores (native with AVX-512). */
    static int compressed(float[] scores, int from, int to, float reach, int[] out, int m) {
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
        return PartialTopK.atLeast(scores, i, to, reach, out, m);
    }

    /** {@link #atLeast} 8 lanes at a time through {@link #LANES_OF_MASK}; {@code out} needs 8 spare slots. */
    static int byTable(float[] scores, int from, int to, float reach, int[] out, int m) {
        int i = from, bound = from + F8.loopBound(to - from);
        for (; i < bound; i += 8) {
            int mask = (int) FloatVector.fromArray(F8, scores, i).compare(VectorOperators.GE, reach).toLong();
            IntVector.fromArray(I8, LANES_OF_MASK, mask * 8).add(i).intoArray(out, m);
            m += Integer.bitCount(mask);
        }
        return PartialTopK.atLeast(scores, i, to, reach, out, m);
    }
}
