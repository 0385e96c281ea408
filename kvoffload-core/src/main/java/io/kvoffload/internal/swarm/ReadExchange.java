package io.kvoffload.internal.swarm;

/**
 * Gives up ranked parts that open an aligned read alone for parts of reads the step opens anyway.
 * A page of one aligned read is ranked in parts ({@link BlockSize#ranked}); the top parts by
 * estimated share often sit one to a read, and each such read costs 4 KiB for a part's tokens,
 * while the other parts of a read that holds two chosen parts cost nothing more. Where a free part
 * holds at least {@code 1/RATE} of the share of a part alone in its read, the exchange keeps the
 * rows, gives up a little estimated mass and saves the read. Pairs are exchanged lowest alone part
 * against highest free part while that holds (equal shares: the lower pair first), so every exchange
 * saves one read.
 *
 * <p>A step's parts are indexed as (group, part) pairs, {@code group × parts + part}, group by group
 * (one group for a token-striped layer, the head groups of a per-head one); part {@code b} of a
 * group is in its read {@code b / partsPerRead}. Allocation-free once a step has chosen as many
 * parts as any before. A step costs a few passes over the chosen parts and a radix sort of the two
 * short lists of parts it may exchange: the lowest alone parts in ascending share, the free ones in
 * descending, equal shares lower pair first, so the exchanges are their first {@code k} pairs, {@code
 * k} the first where a free part no longer pays. Heaps popped one exchange at a time took 14% of a
 * step on Llama-3-8B's layer per head at 16K tokens, in mispredicted sift-downs (docs/benchmarks.md,
 * "Exchanges by a radix sort").
 */
final class ReadExchange {
    /**
     * A part alone in its read is exchanged for a free part holding at least half its estimated share:
     * on Llama-3-8B's layer per head at 16K tokens, recall 1.024 → 1.021 × the oracle's and bytes
     * 0.608 → 0.502 × (docs/benchmarks.md, "Parts for reads a step opens anyway").
     */
    static final float RATE = 2f;

    /** Buckets of one radix pass: keys are sorted a byte at a time, lowest first. */
    private static final int RADIX = 256;

    private final int parts;
    private final int shift;        // log2 of the parts in one read
    private final int readsPerGroup;
    private final byte[] count;     // chosen parts per read
    // Sized by the largest step seen (a step's chosen parts, not the layer's pairs): a step allocates
    // only when it chooses more parts than any before.
    private int[] readOf = new int[0];       // the read of each chosen part
    private int[] giveUp = new int[0];       // each chosen part alone in its read: its share's sort key (ascending), compacted
    private int[] giveUpPair = new int[0];
    private int[] free = new int[0];         // each unchosen candidate in a read with two chosen parts: its key, descending
    private int[] freePair = new int[0];
    private int[] sortKey = new int[0];      // the radix sort's other buffers, as long as the longer list
    private int[] sortPair = new int[0];
    private final int[] digits = new int[RADIX];
    private final long[] kept;      // the chosen pairs after the exchange

    /**
     * @param groups the most groups a step ranks
     * @param parts parts per group
     * @param partsPerRead parts in one aligned read, a power of two of at least 2
     */
    ReadExchange(int groups, int parts, int partsPerRead) {
        if (partsPerRead < 2 || Integer.bitCount(partsPerRead) != 1 || groups < 1 || parts < 1) {
            throw new IllegalArgumentException("groups = " + groups + ", parts = " + parts + ", partsPerRead = " + partsPerRead
                    + "; allowed: groups and parts >= 1, partsPerRead a power of two >= 2");
        }
        this.parts = parts;
        this.shift = Integer.numberOfTrailingZeros(partsPerRead);
        this.readsPerGroup = (parts + partsPerRead - 1) / partsPerRead;
        int pairs = groups * parts;
        this.count = new byte[groups * readsPerGroup];
        this.kept = new long[(pairs + 63) >>> 6];
    }

    /**
     * Exchanges parts of {@code chosen[0, n)} (ascending pairs of {@code groups} groups) that open a
     * read alone for unchosen candidates of reads with two or more chosen parts; {@code scores} holds
     * every pair's estimated share, {@code −∞} for a pair that is not a candidate. Rewrites {@code
     * chosen[0, n)}, still ascending; the count does not change.
     */
    void exchange(float[] scores, int groups, int[] chosen, int n) {
        if (readOf.length < n) {
            readOf = new int[n];
            giveUp = new int[n];
            giveUpPair = new int[n];
            int most = (int) Math.min((long) n << shift, 64L * kept.length); // the rest of each chosen part's read
            free = new int[most];
            freePair = new int[most];
            sortKey = new int[Math.max(n, most)];
            sortPair = new int[sortKey.length];
        }
        java.util.Arrays.fill(count, 0, groups * readsPerGroup, (byte) 0);
        java.util.Arrays.fill(kept, 0, (groups * parts + 63) >>> 6, 0L);
        // chosen ascends group by group: each part's read without a division (partsPerRead is a power of two)
        for (int i = 0, base = 0, end = parts, firstRead = 0; i < n; i++) {
            int c = chosen[i];
            while (c >= end) {
                base = end;
                end += parts;
                firstRead += readsPerGroup;
            }
            int r = firstRead + ((c - base) >>> shift);
            readOf[i] = r;
            kept[c >>> 6] |= 1L << c;
            if (count[r] < Byte.MAX_VALUE) {
                count[r]++;
            }
        }
        int gives = 0;
        float leastAlone = Float.POSITIVE_INFINITY;
        for (int i = 0; i < n; i++) {
            if (count[readOf[i]] == 1) {
                int c = chosen[i];
                leastAlone = Math.min(leastAlone, scores[c]);
                giveUp[gives] = key(scores[c]);
                giveUpPair[gives++] = c;
            }
        }
        if (gives == 0) {
            return;
        }
        // Only parts that could pass the exchange's test against some other are sorted: a free part below
        // every alone part's share / RATE, or an alone part above every free part's share × RATE, fails it
        // against all, and sits past where the walk below stops (the lists' other orders are unchanged).
        float mostFree = Float.NEGATIVE_INFINITY;
        int frees = 0;
        for (int i = 0, last = -1, base = 0, end = parts; i < n; i++) { // a read's chosen parts are consecutive
            int c = chosen[i], r = readOf[i];
            while (c >= end) {
                base = end;
                end += parts;
            }
            if (r == last || count[r] < 2) {
                continue;
            }
            last = r;
            int from = base + ((c - base) >>> shift << shift);
            for (int p = from, to = Math.min(end, from + (1 << shift)); p < to; p++) {
                if (scores[p] > Float.NEGATIVE_INFINITY && scores[p] * RATE >= leastAlone && (kept[p >>> 6] & 1L << p) == 0) {
                    mostFree = Math.max(mostFree, scores[p]);
                    free[frees] = ~key(scores[p]); // descending
                    freePair[frees++] = p;
                }
            }
        }
        if (frees == 0) {
            return;
        }
        int left = 0;
        for (int i = 0; i < gives; i++) {
            if (mostFree * RATE >= scores[giveUpPair[i]]) {
                giveUp[left] = giveUp[i];
                giveUpPair[left++] = giveUpPair[i];
            }
        }
        gives = left;
        // The highest free part against the lowest alone part while it pays: both lists sorted (stable,
        // and each was compacted in ascending pairs, so equal shares keep the lower pair first).
        sort(free, freePair, frees);
        sort(giveUp, giveUpPair, gives);
        int exchanged = 0;
        for (int most = Math.min(frees, gives); exchanged < most
                && scores[freePair[exchanged]] * RATE >= scores[giveUpPair[exchanged]]; exchanged++) {
            int drop = giveUpPair[exchanged], add = freePair[exchanged];
            kept[drop >>> 6] &= ~(1L << drop);
            kept[add >>> 6] |= 1L << add;
        }
        if (exchanged == 0) {
            return;
        }
        int out = 0;
        for (int w = 0, words = (groups * parts + 63) >>> 6; w < words; w++) {
            for (long bits = kept[w]; bits != 0; bits &= bits - 1) {
                chosen[out++] = (w << 6) + Long.numberOfTrailingZeros(bits);
            }
        }
    }

    /**
     * A share's sort key: unsigned order of the keys is the order of the shares ({@code +0} and {@code
     * −0} apart, though a share is never {@code −0}).
     */
    private static int key(float share) {
        int bits = Float.floatToRawIntBits(share);
        return bits >= 0 ? bits ^ Integer.MIN_VALUE : ~bits;
    }

    /**
     * Sorts {@code key[0, n)} (with its {@code pair}s) by unsigned key, stably: least significant byte
     * first, a pass skipped where every key has the same byte there. Ends with the sorted lists in
     * {@code key} and {@code pair} (swapping in this exchange's buffers after an odd number of passes).
     */
    private void sort(int[] key, int[] pair, int n) {
        if (n < 2) {
            return;
        }
        int[] k = key, p = pair, k2 = sortKey, p2 = sortPair;
        int[] count = digits;
        for (int shift = 0; shift < Integer.SIZE; shift += 8) {
            java.util.Arrays.fill(count, 0);
            for (int i = 0; i < n; i++) {
                count[(k[i] >>> shift) & (RADIX - 1)]++;
            }
            if (count[(k[0] >>> shift) & (RADIX - 1)] == n) {
                continue;
            }
            for (int b = 0, at = 0; b < RADIX; b++) {
                int c = count[b];
                count[b] = at;
                at += c;
            }
            for (int i = 0; i < n; i++) {
                int at = count[(k[i] >>> shift) & (RADIX - 1)]++;
                k2[at] = k[i];
                p2[at] = p[i];
            }
            int[] t = k;
            k = k2;
            k2 = t;
            t = p;
            p = p2;
            p2 = t;
        }
        if (k != key) {
            System.arraycopy(k, 0, key, 0, n);
            System.arraycopy(p, 0, pair, 0, n);
        }
    }

    /** DRAM the exchange's scratch holds. */
    long memoryBytes() {
        return count.length + 4L * (readOf.length + giveUp.length + giveUpPair.length + free.length + freePair.length
                + sortKey.length + sortPair.length + digits.length) + 8L * kept.length;
    }
}
