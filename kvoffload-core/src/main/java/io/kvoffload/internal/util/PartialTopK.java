package io.kvoffload.internal.util;

/**
 * Exact top-k over a range of a score array without a sort and without allocating: a radix select
 * over the scores' bits finds the k-th largest score (counting passes of 11, 11 and 10 bits, linear
 * and branch-light where quickselect's partitioning mispredicts on a long range; only the first reads
 * the whole range, and the last leaves how many of the k tie with the k-th), then one pass writes the
 * winners. Ties at the threshold go to the lower index. NaN scores rank below everything. On long
 * ranges with a small k (the per-head selector's 524,288 (head group, block) pairs at 1M tokens) a
 * sampled threshold first narrows the select to about k candidates ({@link #sampledTop}), with the
 * same result. The library's one top-k: {@link TopK}'s allocating helpers use it too.
 */
public final class PartialTopK {
    /**
     * Ranges at least this long, with {@code k} at most a quarter of them, first try the sampled path
     * ({@link #sampledTop}): one pass over the range instead of three.
     */
    static final int SAMPLED_FROM = 1 << 15;
    /** The sampled path reads every {@code STRIDE}-th score for its threshold. */
    private static final int STRIDE = 16;
    /** Scores the sampled path's candidate pass compacts between two overflow checks. */
    private static final int RUN = 4096;
    /**
     * Vector lanes of the candidate pass ({@link VectorCompaction}), or 0 for the scalar loop: the
     * Vector API where {@link Softmax#VECTORISED} allows it and a vector holds at least 8 lanes (AVX2 or
     * AVX-512).
     */
    private static final int VECTOR_LANES = Softmax.VECTORISED && VectorCompaction.lanes() >= 8
            ? VectorCompaction.lanes() : 0;

    private final int[] keys;
    private final int sampledFrom;
    /** The sampled path's candidates (indices, then their scores); null when it is never taken. */
    private final int[] candidates;
    private final float[] candidateScores;
    /** {@link #VECTOR_LANES}, or 0 where this instance keeps the scalar candidate pass. */
    private final int compactLanes;
    /** How many calls the sampled path answered (tests check it is taken). */
    private long sampledCalls;
    /** Of the last {@link #kthLargest}'s k: how many equal its result (the rest are larger). */
    private int lastTies;
    /** The radix passes: bits 31–21, 20–10, 9–0 of the sortable key. */
    private static final int[] SHIFTS = {21, 10, 0};
    private static final int[] WIDTHS = {11, 11, 10};
    /** Counts of one radix pass (2^11 buckets). */
    private final int[] counts = new int[1 << 11];

    /** @param capacity the longest range ever asked for */
    public PartialTopK(int capacity) {
        this(capacity, SAMPLED_FROM, true);
    }

    /**
     * @param capacity the longest range ever asked for
     * @param vector whether the candidate pass may use the Vector API ({@code TopKBench} measures both)
     */
    public PartialTopK(int capacity, boolean vector) {
        this(capacity, SAMPLED_FROM, vector);
    }

    /**
     * @param sampledFrom the shortest range the sampled path is tried on (tests take it down to small ranges)
     * @param vector whether the candidate pass may use the Vector API (tests run both passes)
     */
    PartialTopK(int capacity, int sampledFrom, boolean vector) {
        Checks.inRange("capacity", capacity, 0, Integer.MAX_VALUE - 8);
        this.keys = new int[Math.max(1, capacity)];
        this.sampledFrom = Checks.inRange("sampledFrom", sampledFrom, 4 * STRIDE, Integer.MAX_VALUE);
        boolean sampled = capacity >= sampledFrom;
        this.compactLanes = vector ? VECTOR_LANES : 0;
        this.candidates = sampled ? new int[capacity / 2 + compactLanes] : null;
        this.candidateScores = sampled ? new float[capacity / 2] : null;
    }

    /**
     * Writes the indices {@code i ∈ [from, to)} of the {@code k} largest {@code scores[i]} into
     * {@code out[outOffset …]} in ascending order and returns how many were written: {@code min(k,
     * to − from)}, fewer only when NaN scores would have to be chosen.
     */
    public int top(float[] scores, int from, int to, int k, int[] out, int outOffset) {
        int len = to - from;
        if (k <= 0 || len <= 0) {
            return 0;
        }
        if (k >= len) {
            for (int t = from; t < to; t++) {
                out[outOffset + t - from] = t;
            }
            return len;
        }
        if (candidates != null && len >= sampledFrom && k <= len / 4 && len <= keys.length) {
            int n = sampledTop(scores, from, to, k, out, outOffset);
            if (n >= 0) {
                sampledCalls++;
                return n;
            }
        }
        return emit(scores, from, to, k, kthLargest(scores, from, to, k), null, out, outOffset);
    }

    /**
     * Writes the indices of the {@code k} largest of {@code scores[from, to)} given the k-th largest
     * ({@code threshold}, from {@link #kthLargest} over the same range), each mapped through {@code
     * map} when it is not null.
     */
    private int emit(float[] scores, int from, int to, int k, float threshold, int[] map, int[] out, int outOffset) {
        // Scores equal to the threshold that make the cut, lowest index first: the radix select's count,
        // except at zero, where −0 and +0 are distinct keys but equal floats (count as compared below).
        int ties = lastTies;
        if (threshold == 0f) {
            int above = 0;
            for (int i = from; i < to; i++) {
                if (scores[i] > threshold) {
                    above++;
                }
            }
            ties = k - above;
        }
        int n = 0;
        for (int i = from; i < to && n < k; i++) {
            float s = scores[i];
            if (s > threshold || (s == threshold && ties-- > 0)) {
                out[outOffset + n++] = map == null ? i : map[i];
            }
        }
        return n;
    }

    /**
     * The exact top k by way of a sample: the {@code (k/STRIDE + margin)}-th largest of every
     * {@code STRIDE}-th score is a threshold that, by a margin of three standard deviations of the
     * sample's count, at least {@code k} scores reach; one pass compacts the scores that reach it (about
     * {@code k}, far fewer than the range) and the radix select runs over those. Since every score at or
     * above the true k-th largest is among the candidates, the result is exactly {@link #top}'s; when the
     * sample misleads (fewer than {@code k} reach the threshold, or more than the candidate arrays hold)
     * it returns −1 and the caller selects over the whole range.
     */
    private int sampledTop(float[] scores, int from, int to, int k, int[] out, int outOffset) {
        int len = to - from, samples = len / STRIDE;
        float[] vals = candidateScores;
        for (int i = 0; i < samples; i++) {
            vals[i] = scores[from + i * STRIDE + STRIDE / 2];
        }
        double expected = (double) k / STRIDE;
        int rank = (int) Math.min(samples, expected + 3 * Math.sqrt(expected) + 8);
        float reach = kthLargest(vals, 0, samples, rank);
        int[] cand = candidates;
        int m = 0;
        for (int run = from; run < to; run += RUN) {
            int end = Math.min(to, run + RUN);
            if (m + (end - run) > cand.length - compactLanes) {
                return -1; // more reach the threshold than the arrays hold: the sample was unrepresentative
            }
            m = compactLanes > 0 ? VectorCompaction.atLeast(scores, run, end, reach, cand, m)
                    : atLeast(scores, run, end, reach, cand, m);
        }
        if (m < k) {
            return -1;
        }
        for (int j = 0; j < m; j++) {
            vals[j] = scores[cand[j]];
        }
        return emit(vals, 0, m, k, kthLargest(vals, 0, m, k), cand, out, outOffset);
    }

    /**
     * The candidate pass without the Vector API: appends to {@code out} from {@code m} the indices {@code
     * i ∈ [from, to)} with {@code scores[i] ≥ reach}, ascending, and returns the new count. Branch-free:
     * it writes every index and advances past those that reach ({@code out} needs room for one more).
     */
    static int atLeast(float[] scores, int from, int to, float reach, int[] out, int m) {
        for (int i = from; i < to; i++) {
            out[m] = i;
            m += scores[i] >= reach ? 1 : 0;
        }
        return m;
    }

    long sampledCalls() {
        return sampledCalls;
    }

    /** The {@code k}-th largest of {@code scores[from, to)} (1-based; NaN counts as −∞). */
    public float kthLargest(float[] scores, int from, int to, int k) {
        int len = to - from;
        if (k < 1 || k > len || len > keys.length) {
            throw new IllegalArgumentException("k = " + k + " over a range of " + len + " (capacity " + keys.length
                    + ") is out of range; allowed: 1.." + Math.min(len, keys.length));
        }
        // Keys whose unsigned order is the floats' order (−∞ … −0 … +0 … +∞); NaN as −∞. The first
        // pass counts every key; each later pass counts only the keys that share the prefix fixed so
        // far, gathered to the front of the array (usually a small share of the range).
        int[] u = keys;
        int[] c = counts;
        java.util.Arrays.fill(c, 0, 1 << WIDTHS[0], 0);
        for (int i = 0; i < len; i++) {
            float s = scores[from + i];
            int key = sortable(s != s ? Float.NEGATIVE_INFINITY : s);
            u[i] = key;
            c[key >>> SHIFTS[0]]++;
        }
        int rank = k, n = len, prefix = 0;
        for (int pass = 0; ; pass++) {
            int shift = SHIFTS[pass], buckets = 1 << WIDTHS[pass];
            int b = buckets - 1;
            while (c[b] < rank) {
                rank -= c[b];
                b--;
            }
            prefix |= b << shift;
            if (pass == SHIFTS.length - 1) {
                lastTies = rank; // the k-th is the rank-th of the keys equal to the prefix
                return unsortable(prefix);
            }
            int next = SHIFTS[pass + 1], nextBuckets = 1 << WIDTHS[pass + 1], m = 0;
            java.util.Arrays.fill(c, 0, nextBuckets, 0);
            for (int i = 0; i < n; i++) {
                int key = u[i];
                if (((key >>> shift) & (buckets - 1)) == b) {
                    u[m++] = key;
                    c[(key >>> next) & (nextBuckets - 1)]++;
                }
            }
            n = m;
        }
    }

    /** The float's bits with unsigned order equal to the float order (for non-NaN values). */
    private static int sortable(float f) {
        int bits = Float.floatToRawIntBits(f);
        return bits < 0 ? ~bits : bits | 0x80000000;
    }

    private static float unsortable(int u) {
        return Float.intBitsToFloat(u < 0 ? u & 0x7FFFFFFF : ~u);
    }
}
