package io.kvoffload.internal.swarm;

/**
 * The estimated block logits that each query row of a {@link BlockMassIndex} (MIX scoring) carries
 * from one step to the next, with the sweep coefficients they hold, so that a step sweeps only what
 * changed. Consecutive decoding queries of a head are alike (the same topics, a slowly drifting
 * mixture), and a row's estimate is linear in its coefficients: {@code L = ln n + Σ c_t × row_t}. So
 * a step queues, per term, the change {@code c_t − applied_t} instead of {@code c_t}, and pruning
 * drops the changes whose reaches {@code |c_t − applied_t| × spread_t} sum to at most the index's
 * bound: the carried estimate then differs from the one with every term swept by no more than a
 * fresh step's pruned estimate may, the same guarantee.
 *
 * <p>Where the query moved so far that its changes keep more terms than a fresh sweep would (an
 * unrelated query, a row whose query heads regrouped), the row starts fresh from {@code ln n}, so a
 * step never sweeps more terms than without carrying. Every {@link #REFRESH_STEPS} steps every row
 * starts fresh, so that float rounding does not add up over a long decode.
 *
 * <p>Row {@code k} of KV head {@code h} is slot {@code h × maxPerHead + k}: a row that regroups other
 * query heads than in the last step only changes its coefficients. Allocation-free after construction.
 */
final class CarriedLogits {
    /** Steps after which every row is swept fresh again. */
    static final int REFRESH_STEPS = 256;

    private final int slotsPerHead;
    private final int dims;
    private final int scored;
    private final float[] applied;  // [slot][side: hi, lo][dim]: the coefficient the carried logits hold
    private final float[] logits;   // [slot][scored block]: ln(tokens) + Σ applied × row
    private final boolean[] fresh;  // per row of the KV head being swept: starts from ln(tokens)
    private int steps = -1;         // steps since all rows started fresh; -1: none yet

    CarriedLogits(int kvHeads, int slotsPerHead, int dims, int scored) {
        this.slotsPerHead = slotsPerHead;
        this.dims = dims;
        this.scored = scored;
        long carried = (long) kvHeads * slotsPerHead * scored;
        if (carried > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("kvHeads × rows a KV head × blocks = " + carried
                    + " carried logits do not fit one array; allowed: up to " + (Integer.MAX_VALUE - 8));
        }
        this.applied = new float[kvHeads * slotsPerHead * 2 * dims];
        this.logits = new float[(int) carried];
        this.fresh = new boolean[slotsPerHead];
    }

    /** Starts a step; every {@link #REFRESH_STEPS} steps (and the first) all rows start fresh. */
    void step() {
        steps = steps < 0 || steps + 1 >= REFRESH_STEPS ? 0 : steps + 1;
    }

    /** Term slots one row needs: its changes (two per dimension at most), then a fresh row's terms. */
    static int slotsPerRow(int dims) {
        return 3 * dims;
    }

    /**
     * Queues row {@code k} of KV head {@code h} at {@code terms[at …]} (query {@code query[q0 …]}, MIX
     * rows {@code hi} and {@code lo}, the same array where a part is one token), pruned; returns the
     * terms to sweep: the changes since the carried step, or, where that keeps no fewer, the fresh
     * terms, the row then starting from {@code ln n} ({@link #start}).
     */
    int queue(SweepTerms terms, int at, int h, int k, float[] query, int q0, Int8Rows hi, Int8Rows lo) {
        int d = dims, slot = (h * slotsPerHead + k) * 2 * d;
        boolean one = lo == hi;
        byte[] hiRow = hi.row(h), loRow = lo.row(h);
        int f0 = at + 2 * d, queued = f0, changes = at;
        float freshReach = 0, changeReach = 0;
        boolean carried = steps > 0;
        for (int j = 0, off = 0; j < d; j++, off += scored) {
            float q = query[q0 + j];
            boolean up = q >= 0 || one;
            Int8Rows side = up ? hi : lo;
            float c = q * side.scale(h, j), spread = side.spread(h, j);
            queued = terms.term(queued, c, side.row(h), off, spread);
            freshReach += Math.abs(c) * spread;
            if (carried) {
                float ch = (up ? c : 0f) - applied[slot + j], cl = (up ? 0f : c) - applied[slot + d + j];
                float hs = hi.spread(h, j), ls = lo.spread(h, j);
                changeReach += Math.abs(ch) * hs + Math.abs(cl) * ls;
                if (ch != 0) {
                    changes = terms.term(changes, ch, hiRow, off, hs);
                }
                if (cl != 0) {
                    changes = terms.term(changes, cl, loRow, off, ls);
                }
            }
        }
        // Changes that reach as far as the fresh terms do (an unrelated query) are not worth pruning.
        boolean carry = carried && changeReach < freshReach;
        int kept = carry ? terms.keep(at, changes - at) : 0;
        int freshKept = terms.keep(f0, queued - f0);
        // Carrying reads the carried logits besides the terms' rows: about one term's sweep more.
        boolean restart = !carry || freshKept <= kept + 1;
        fresh[k] = restart;
        if (restart) {
            terms.move(f0, at, freshKept);
            java.util.Arrays.fill(applied, slot, slot + 2 * d, 0f);
            kept = freshKept;
        }
        for (int t = at; t < at + kept; t++) {
            applied[slot + (terms.row(t) == hiRow ? 0 : d) + terms.offset(t) / scored] += terms.coef(t);
        }
        terms.record(d, kept);
        return kept;
    }

    /** Row {@code k}'s chunk of accumulators before its sweep: its carried logits, or ln(block tokens) if fresh. */
    void start(float[] acc, int at, int h, int k, int from, int n, float[] logBlockTokens) {
        if (fresh[k]) {
            System.arraycopy(logBlockTokens, from, acc, at, n);
        } else {
            System.arraycopy(logits, offset(h, k) + from, acc, at, n);
        }
    }

    /**
     * Where row {@code k} of KV head {@code h} keeps its logits, in {@link #logits()}: the index writes its
     * swept chunks there and exponentiates them into its shares from there, so the next step finds them.
     */
    int offset(int h, int k) {
        return (h * slotsPerHead + k) * scored;
    }

    float[] logits() {
        return logits;
    }

    long memoryBytes() {
        return 4L * (applied.length + logits.length) + fresh.length;
    }
}
