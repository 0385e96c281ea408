package io.kvoffload.internal.swarm;

/**
 * The terms one {@link BlockMassIndex} step sweeps for a KV head's rows — {@code coef × row_j} per
 * dimension and summary — queued, pruned and swept into a chunk of block accumulators. Pruning drops
 * the terms whose reach {@code |coef| × spread} (how far a term can move one block's estimate against
 * another's) is smallest, as long as the dropped reaches sum to at most {@code pruneLogit} nats.
 * Allocation-free after construction.
 */
final class SweepTerms {
    /**
     * Blocks per sweep: a row's chunk of accumulators (16 KiB) stays in the cache while each kept row
     * streams a 4 KiB run; a pair of rows ({@link #sweepPair}) keeps its second chunk this far into the
     * accumulators, a constant, so that the JIT sees the two never overlap and vectorises (at a variable
     * distance it leaves the loop scalar). Runs of 1,024 blocks were 5–15% slower (docs/benchmarks.md,
     * "Clustered query heads"), and 2,048 for pairs ("Rows share their conversions"): a layer's summaries
     * outgrow the caches and shorter runs stream worse from DRAM.
     */
    static final int CHUNK = 4096;
    /** Mantissa bits that split a reach's power-of-two bucket ({@link #smallestKept}). */
    private static final int MANTISSA_BITS = 3;
    /** Buckets of a float's bits: sign and exponent, then the mantissa's top {@link #MANTISSA_BITS}. */
    private static final int BUCKETS = 1 << (9 + MANTISSA_BITS);

    private final float[] termCoef;
    private final byte[][] termRow;
    private final int[] termOff;
    private final float[] termReach;  // |coef| × spread
    private final float[] cutScratch; // the reaches of the bucket that holds the cut, sorted
    private final float[] pairCoef;   // two rows' terms reordered by pairUp, before they are copied back
    private final byte[][] pairRow;
    private final int[] pairOff;
    private final int[] sharedAt;     // pairUp: the first row's shared terms' slots
    private final float[] bucketSum = new float[BUCKETS]; // the reaches' sum per bucket (zero between calls)
    private final float pruneLogit;   // terms reaching at most this much together are skipped; 0: none
    private long termsQueued;         // sweep terms before and after pruning, over all steps
    private long termsSwept;

    /**
     * @param slots terms queued at most at once
     * @param pruneLogit a finite bound ≥ 0 (the index checks it)
     */
    SweepTerms(int slots, float pruneLogit) {
        this.termCoef = new float[slots];
        this.termRow = new byte[slots][];
        this.termOff = new int[slots];
        this.termReach = new float[slots];
        this.cutScratch = new float[slots];
        this.pairCoef = new float[slots];
        this.pairRow = new byte[slots][];
        this.pairOff = new int[slots];
        this.sharedAt = new int[slots];
        this.pruneLogit = pruneLogit;
    }

    /** The share of queued terms swept after pruning, over all steps (1 before any step). */
    double sweptShare() {
        return termsQueued == 0 ? 1 : (double) termsSwept / termsQueued;
    }

    /** Terms swept after pruning, over all steps. */
    long swept() {
        return termsSwept;
    }

    /** Bytes the queue holds (its references counted as 8). */
    long memoryBytes() {
        return 44L * termCoef.length + 4L * BUCKETS;
    }

    /** Queues {@code coef × row[off …]} for {@link #sweep}; returns the new count. */
    int term(int count, float coef, byte[] row, int off, float spread) {
        termCoef[count] = coef;
        termRow[count] = row;
        termOff[count] = off;
        termReach[count] = Math.abs(coef) * spread;
        return count + 1;
    }

    /**
     * Drops the queued terms that cannot move any block's estimate relative to the others by more
     * than {@code pruneLogit} together (the smallest reaches first), keeping the rest in order;
     * returns the count kept. A dropped term adds a per-block amount within its reach; what is
     * common to all blocks cancels in the ranking and in each head's softmax.
     */
    int prune(int base, int count) {
        int kept = keep(base, count);
        record(count, kept);
        return kept;
    }

    /** {@link #prune} without counting the terms in {@link #sweptShare}. */
    int keep(int base, int count) {
        return pruneLogit <= 0 || count == 0 ? count : dropSmallest(base, count);
    }

    /** Counts a row's step in {@link #sweptShare}: {@code queued} terms a whole sweep has, {@code swept} swept. */
    void record(int queued, int swept) {
        termsQueued += queued;
        termsSwept += swept;
    }

    /** Moves {@code count} queued terms from slot {@code from} to slot {@code to} (the ranges do not overlap). */
    void move(int from, int to, int count) {
        System.arraycopy(termCoef, from, termCoef, to, count);
        System.arraycopy(termRow, from, termRow, to, count);
        System.arraycopy(termOff, from, termOff, to, count);
        System.arraycopy(termReach, from, termReach, to, count);
    }

    /** Term {@code t}'s coefficient. */
    float coef(int t) {
        return termCoef[t];
    }

    /** Term {@code t}'s summary row. */
    byte[] row(int t) {
        return termRow[t];
    }

    /** Term {@code t}'s offset in its row. */
    int offset(int t) {
        return termOff[t];
    }

    /** {@link #prune} of the {@code count} terms queued from {@code base}, kept ones moved to the front. */
    private int dropSmallest(int base, int count) {
        int end = base + count;
        float total = 0;
        for (int t = base; t < end; t++) {
            total += termReach[t];
        }
        if (total <= pruneLogit) {
            return 0;
        }
        float cut = smallestKept(base, count);
        int kept = base;
        for (int t = base; t < end; t++) {
            if (termReach[t] >= cut) {
                termCoef[kept] = termCoef[t];
                termRow[kept] = termRow[t];
                termOff[kept] = termOff[t];
                termReach[kept] = termReach[t];
                kept++;
            }
        }
        return kept - base;
    }

    /**
     * The smallest reach kept: the reaches below it sum to at most {@code pruneLogit}, and with the
     * terms of its value they would not. One pass buckets the reaches by their float bits (exponent and
     * top three mantissa bits: the buckets ascend with the value) with each bucket's sum; a
     * walk up the buckets finds the one where the dropped sum would pass the bound, and only that
     * bucket's few reaches are sorted. Branch-light where the weighted quickselect it replaced took
     * about 3 µs a row of 128 terms in mispredicted partitions (docs/benchmarks.md, "Pruning's cut by
     * buckets"). Needs the reaches to sum to more than {@code pruneLogit}.
     */
    private float smallestKept(int base, int count) {
        float[] sum = bucketSum;
        int lo = BUCKETS, hi = -1;
        for (int t = base, end = base + count; t < end; t++) {
            float r = termReach[t];
            if (r == 0) {
                continue; // reaches nothing: always dropped (the bound is positive here)
            }
            int b = bucket(r);
            sum[b] += r;
            lo = Math.min(lo, b);
            hi = Math.max(hi, b);
        }
        float dropped = 0;
        int cut = lo;
        while (cut < hi && dropped + sum[cut] <= pruneLogit) {
            dropped += sum[cut++];
        }
        // The cut lies in bucket `cut`: its reaches ascending, value by value, while they fit.
        float[] a = cutScratch;
        int m = 0;
        for (int t = base, end = base + count; t < end; t++) {
            float r = termReach[t];
            if (r != 0 && bucket(r) == cut) {
                a[m++] = r;
            }
        }
        java.util.Arrays.sort(a, 0, m);
        java.util.Arrays.fill(sum, lo, hi + 1, 0);
        for (int i = 0; i < m; ) {
            float v = a[i];
            float group = 0;
            int j = i;
            for (; j < m && a[j] == v; j++) {
                group += v;
            }
            if (dropped + group > pruneLogit) {
                return v;
            }
            dropped += group;
            i = j;
        }
        return Float.POSITIVE_INFINITY; // not reached while the reaches sum past the bound
    }

    /** Reaches' buckets: a non-negative float's bits ascend with its value; sign, exponent and 3 mantissa bits. */
    private static int bucket(float reach) {
        return Float.floatToRawIntBits(reach) >>> (23 - MANTISSA_BITS);
    }

    /**
     * {@code acc[at + i] += Σ coef_t × row_t[off_t + i]} over the queued terms, four at a time: one load and
     * store of the accumulators per four int8 rows keeps the sweep on the rows' bandwidth. {@link
     * Math#fma} because Java never fuses {@code a × b + c} itself: a multiply and an add per term
     * otherwise (5–10% of a step at 128K tokens, docs/benchmarks.md).
     */
    void sweep(float[] acc, int at, int n, int base, int count, int from) {
        int t = base, terms = base + count;
        for (; t + 3 < terms; t += 4) {
            float c0 = termCoef[t], c1 = termCoef[t + 1], c2 = termCoef[t + 2], c3 = termCoef[t + 3];
            byte[] x0 = termRow[t], x1 = termRow[t + 1], x2 = termRow[t + 2], x3 = termRow[t + 3];
            int o0 = termOff[t] + from, o1 = termOff[t + 1] + from, o2 = termOff[t + 2] + from, o3 = termOff[t + 3] + from;
            for (int i = 0; i < n; i++) {
                acc[at + i] = Math.fma(c3, x3[o3 + i], Math.fma(c2, x2[o2 + i], Math.fma(c1, x1[o1 + i],
                        Math.fma(c0, x0[o0 + i], acc[at + i]))));
            }
        }
        if (terms - t == 3) { // the last three terms in one pass over the accumulators
            float c0 = termCoef[t], c1 = termCoef[t + 1], c2 = termCoef[t + 2];
            byte[] x0 = termRow[t], x1 = termRow[t + 1], x2 = termRow[t + 2];
            int o0 = termOff[t] + from, o1 = termOff[t + 1] + from, o2 = termOff[t + 2] + from;
            for (int i = 0; i < n; i++) {
                acc[at + i] = Math.fma(c2, x2[o2 + i], Math.fma(c1, x1[o1 + i], Math.fma(c0, x0[o0 + i], acc[at + i])));
            }
            return;
        }
        if (terms - t == 2) { // the last two
            float c0 = termCoef[t], c1 = termCoef[t + 1];
            byte[] x0 = termRow[t], x1 = termRow[t + 1];
            int o0 = termOff[t] + from, o1 = termOff[t + 1] + from;
            for (int i = 0; i < n; i++) {
                acc[at + i] = Math.fma(c1, x1[o1 + i], Math.fma(c0, x0[o0 + i], acc[at + i]));
            }
            t += 2;
        }
        if (t < terms) {
            axpy(acc, at, n, termCoef[t], termRow[t], termOff[t] + from);
        }
    }

    /**
     * Reorders two rows' kept terms (after {@link #prune}: {@code aCount} from {@code a}, {@code bCount}
     * from {@code b}, disjoint) so that the terms both rows sweep over the same summary bytes (one row
     * array at one offset, each with its own coefficient) come first in each, pairwise in the same
     * order, the others after them in their order; returns how many are shared. {@link #sweepPair}
     * converts each shared run of int8 once for both rows. The terms' reaches are not moved: pruning is
     * over for the step. Rows queued in ascending offsets (one term per offset, as every scoring
     * queues them) are matched completely; otherwise some shared terms stay apart, which costs time,
     * never a term.
     */
    int pairUp(int a, int aCount, int b, int bCount) {
        int shared = match(a, aCount, b, bCount, true);
        if (shared > 0) {
            reorder(a, aCount, 0, shared);
            reorder(b, bCount, aCount, shared);
        }
        return shared;
    }

    /** How many terms {@link #pairUp} would find shared by the two rows, without moving any. */
    int shared(int a, int aCount, int b, int bCount) {
        return match(a, aCount, b, bCount, false);
    }

    /** The terms two rows share, by a merge over their offsets; {@code record}: their slots into {@code sharedAt}. */
    private int match(int a, int aCount, int b, int bCount, boolean record) {
        int shared = 0;
        for (int i = a, j = b, ea = a + aCount, eb = b + bCount; i < ea && j < eb; ) {
            int oi = termOff[i], oj = termOff[j];
            if (oi != oj) {
                i += oi < oj ? 1 : 0;
                j += oj < oi ? 1 : 0;
                continue;
            }
            if (termRow[i] == termRow[j]) {
                if (record) {
                    sharedAt[shared] = i;
                    sharedAt[aCount + shared] = j; // the second row's slots after the first row's (aCount ≥ shared)
                }
                shared++;
            }
            i++;
            j++;
        }
        return shared;
    }

    /** Writes one row's terms back with its shared ones (their slots at {@code sharedAt[at …]}) first. */
    private void reorder(int base, int count, int at, int shared) {
        int w = 0;
        for (int s = 0; s < shared; s++) {
            w = copyToPair(sharedAt[at + s], w);
        }
        for (int t = base, s = 0, end = base + count; t < end; t++) {
            if (s < shared && sharedAt[at + s] == t) {
                s++;
            } else {
                w = copyToPair(t, w);
            }
        }
        System.arraycopy(pairCoef, 0, termCoef, base, count);
        System.arraycopy(pairRow, 0, termRow, base, count);
        System.arraycopy(pairOff, 0, termOff, base, count);
    }

    private int copyToPair(int t, int w) {
        pairCoef[w] = termCoef[t];
        pairRow[w] = termRow[t];
        pairOff[w] = termOff[t];
        return w + 1;
    }

    /**
     * {@link #sweep} of two rows' first {@code shared} terms (from {@link #pairUp}: the same bytes, two
     * coefficients) into {@code acc[0, n)} and {@code acc[CHUNK, CHUNK + n)}, each int8 converted once
     * for both: a conversion costs about what a fused multiply-add does, so a shared term costs
     * two-thirds of two terms swept apart.
     */
    void sweepPair(float[] acc, int n, int a, int b, int shared, int from) {
        int t = 0;
        for (; t + 3 < shared; t += 4) {
            float a0 = termCoef[a + t], a1 = termCoef[a + t + 1], a2 = termCoef[a + t + 2], a3 = termCoef[a + t + 3];
            float b0 = termCoef[b + t], b1 = termCoef[b + t + 1], b2 = termCoef[b + t + 2], b3 = termCoef[b + t + 3];
            byte[] x0 = termRow[a + t], x1 = termRow[a + t + 1], x2 = termRow[a + t + 2], x3 = termRow[a + t + 3];
            int o0 = termOff[a + t] + from, o1 = termOff[a + t + 1] + from, o2 = termOff[a + t + 2] + from,
                    o3 = termOff[a + t + 3] + from;
            for (int i = 0; i < n; i++) {
                float v0 = x0[o0 + i], v1 = x1[o1 + i], v2 = x2[o2 + i], v3 = x3[o3 + i];
                acc[i] = Math.fma(a3, v3, Math.fma(a2, v2, Math.fma(a1, v1, Math.fma(a0, v0, acc[i]))));
                acc[CHUNK + i] = Math.fma(b3, v3, Math.fma(b2, v2, Math.fma(b1, v1, Math.fma(b0, v0, acc[CHUNK + i]))));
            }
        }
        if (shared - t >= 2) {
            float a0 = termCoef[a + t], a1 = termCoef[a + t + 1], b0 = termCoef[b + t], b1 = termCoef[b + t + 1];
            byte[] x0 = termRow[a + t], x1 = termRow[a + t + 1];
            int o0 = termOff[a + t] + from, o1 = termOff[a + t + 1] + from;
            for (int i = 0; i < n; i++) {
                float v0 = x0[o0 + i], v1 = x1[o1 + i];
                acc[i] = Math.fma(a1, v1, Math.fma(a0, v0, acc[i]));
                acc[CHUNK + i] = Math.fma(b1, v1, Math.fma(b0, v0, acc[CHUNK + i]));
            }
            t += 2;
        }
        if (t < shared) {
            float ca = termCoef[a + t], cb = termCoef[b + t];
            byte[] x = termRow[a + t];
            int o = termOff[a + t] + from;
            for (int i = 0; i < n; i++) {
                float v = x[o + i];
                acc[i] = Math.fma(ca, v, acc[i]);
                acc[CHUNK + i] = Math.fma(cb, v, acc[CHUNK + i]);
            }
        }
    }

    /** {@code acc[at + i] += a × x[off + i]} for {@code i < n}: the vectorised sweep. */
    static void axpy(float[] acc, int at, int n, float a, byte[] x, int off) {
        for (int i = 0; i < n; i++) {
            acc[at + i] = Math.fma(a, x[off + i], acc[at + i]);
        }
    }
}
