package io.kvoffload.internal.swarm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.util.TopK;
import java.util.Arrays;
import java.util.BitSet;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/**
 * {@link ReadExchange}: the rows stay, each exchange closes a read a part held alone and takes a
 * part of a read that stays open, and an exchange is made only where the part taken holds at least
 * {@code 1/RATE} of the share of the part given up.
 */
class ReadExchangeProperties {

    @Property(tries = 300)
    void keepsTheRowsAndSavesOneReadPerExchange(@ForAll @IntRange(min = 1, max = 4) int groups,
            @ForAll @IntRange(min = 1, max = 60) int parts, @ForAll @IntRange(min = 1, max = 3) int perReadLog,
            @ForAll @IntRange(min = 0, max = 100) int share, @ForAll long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        int perRead = 1 << perReadLog;
        int pairs = groups * parts;
        float[] scores = new float[pairs];
        for (int i = 0; i < pairs; i++) { // some non-candidates (the sinks' and window's parts), ties now and then
            scores[i] = rnd.nextInt(10) == 0 ? Float.NEGATIVE_INFINITY
                    : rnd.nextInt(4) == 0 ? 0.5f : (float) Math.pow(rnd.nextDouble(), 3);
        }
        int candidates = (int) Arrays.stream(toDoubles(scores)).filter(s -> s > Double.NEGATIVE_INFINITY).count();
        int n = Math.min(candidates, pairs * share / 100);
        int[] chosen = TopK.indices(scores.clone(), n);
        Arrays.sort(chosen);
        int[] before = chosen.clone();
        float[] original = scores.clone();
        int[] out = Arrays.copyOf(chosen, pairs);
        new ReadExchange(groups, parts, perRead).exchange(scores, groups, out, n);
        int[] after = Arrays.copyOf(out, n);

        BitSet was = bits(before), now = bits(after);
        for (int i = 1; i < n; i++) {
            assertTrue(after[i] > after[i - 1], "ascending and distinct");
        }
        for (int c : after) {
            assertTrue(original[c] > Float.NEGATIVE_INFINITY, "pair " + c + " is not a candidate");
        }
        int[] countBefore = readCounts(before, groups, parts, perRead);
        BitSet dropped = (BitSet) was.clone();
        dropped.andNot(now);
        BitSet added = (BitSet) now.clone();
        added.andNot(was);
        assertEquals(dropped.cardinality(), added.cardinality());
        int exchanges = dropped.cardinality();
        for (int c = dropped.nextSetBit(0); c >= 0; c = dropped.nextSetBit(c + 1)) {
            assertEquals(1, countBefore[read(c, parts, perRead)], "part " + c + " given up did not open its read alone");
        }
        for (int c = added.nextSetBit(0); c >= 0; c = added.nextSetBit(c + 1)) {
            assertTrue(countBefore[read(c, parts, perRead)] >= 2, "part " + c + " taken is not in a read that stays open");
        }
        assertEquals(reads(before, parts, perRead) - exchanges, reads(after, parts, perRead), "one read saved per exchange");
        // The exchanged pairs, lowest given up against highest taken, each pay at the rate.
        float[] give = shares(dropped, original), take = shares(added, original);
        Arrays.sort(give);
        Arrays.sort(take);
        for (int k = 0; k < exchanges; k++) {
            assertTrue(take[exchanges - 1 - k] * ReadExchange.RATE >= give[k],
                    "exchange " + k + ": took " + take[exchanges - 1 - k] + " for " + give[k]);
        }
    }

    /**
     * The exchange is the greedy one its documentation states, computed here the plain way: the alone
     * parts by ascending share and the free parts by descending share (equal shares lower pair first),
     * exchanged pairwise while the free part holds at least {@code 1/RATE} of the alone one's share.
     */
    @Property(tries = 300)
    void exchangesLowestAlonePartsForHighestFreePartsWhileThatPays(@ForAll @IntRange(min = 1, max = 4) int groups,
            @ForAll @IntRange(min = 1, max = 300) int parts, @ForAll @IntRange(min = 1, max = 3) int perReadLog,
            @ForAll @IntRange(min = 1, max = 60) int share, @ForAll long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        int perRead = 1 << perReadLog, pairs = groups * parts;
        float[] scores = new float[pairs];
        for (int i = 0; i < pairs; i++) { // wide range of shares, ties now and then, some non-candidates
            scores[i] = rnd.nextInt(12) == 0 ? Float.NEGATIVE_INFINITY
                    : rnd.nextInt(5) == 0 ? 0.25f : (float) Math.pow(rnd.nextDouble(), 1 + rnd.nextInt(8));
        }
        // Any ascending selection of candidates (not only the top ones): parts alone and free parts at any share.
        int[] all = java.util.stream.IntStream.range(0, pairs).filter(i -> scores[i] > Float.NEGATIVE_INFINITY).toArray();
        int[] chosen = java.util.stream.IntStream.of(all).filter(i -> rnd.nextInt(100) < share).toArray();
        int n = chosen.length;
        int[] out = Arrays.copyOf(chosen, pairs);
        new ReadExchange(groups, parts, perRead).exchange(scores, groups, out, n);

        int[] count = readCounts(chosen, groups, parts, perRead);
        BitSet was = bits(chosen);
        java.util.List<Integer> alone = new java.util.ArrayList<>(), free = new java.util.ArrayList<>();
        for (int c : chosen) {
            if (count[read(c, parts, perRead)] == 1) {
                alone.add(c);
            }
        }
        for (int c : all) {
            if (!was.get(c) && count[read(c, parts, perRead)] >= 2) {
                free.add(c);
            }
        }
        alone.sort((a, b) -> scores[a] != scores[b] ? Float.compare(scores[a], scores[b]) : Integer.compare(a, b));
        free.sort((a, b) -> scores[a] != scores[b] ? Float.compare(scores[b], scores[a]) : Integer.compare(a, b));
        BitSet expected = (BitSet) was.clone();
        for (int k = 0; k < Math.min(alone.size(), free.size())
                && scores[free.get(k)] * ReadExchange.RATE >= scores[alone.get(k)]; k++) {
            expected.clear(alone.get(k));
            expected.set(free.get(k));
        }
        assertEquals(expected, bits(Arrays.copyOf(out, n)));
    }

    @Test
    void anAlonePartIsGivenUpForAFreePartOfHalfItsShare() {
        // One group, reads of 4 parts: parts 0 and 1 share read 0, part 4 opens read 1 alone.
        float[] scores = {0.9f, 0.8f, 0.45f, 0.1f, 0.85f, 0.05f, 0.05f, 0.05f};
        int[] chosen = {0, 1, 4, 0, 0, 0, 0, 0};
        new ReadExchange(1, 8, 4).exchange(scores, 1, chosen, 3);
        assertArrayEquals(new int[] {0, 1, 2}, Arrays.copyOf(chosen, 3), "0.45 × 2 >= 0.85: read 1 is saved");
        float[] dear = {0.9f, 0.8f, 0.40f, 0.1f, 0.85f, 0.05f, 0.05f, 0.05f};
        int[] kept = {0, 1, 4, 0, 0, 0, 0, 0};
        new ReadExchange(1, 8, 4).exchange(dear, 1, kept, 3);
        assertArrayEquals(new int[] {0, 1, 4}, Arrays.copyOf(kept, 3), "0.40 × 2 < 0.85: no exchange");
    }

    /** A step allocates nothing once a step has chosen as many parts (the decode hot path). */
    @Test
    void aStepAllocatesNothingOnceWarm() {
        int groups = 8, parts = 2048, pairs = groups * parts;
        SplittableRandom rnd = new SplittableRandom(3);
        float[] scores = new float[pairs];
        for (int i = 0; i < pairs; i++) {
            scores[i] = (float) Math.pow(rnd.nextDouble(), 4);
        }
        int n = pairs / 10;
        int[] top = TopK.indices(scores.clone(), n);
        Arrays.sort(top);
        int[] chosen = new int[pairs];
        ReadExchange exchange = new ReadExchange(groups, parts, 4);
        int[] sink = {0};
        Runnable step = () -> {
            System.arraycopy(top, 0, chosen, 0, n);
            exchange.exchange(scores, groups, chosen, n);
            sink[0] += chosen[n - 1];
        };
        for (int i = 0; i < 3000; i++) { // the JIT compiles the step before it is measured
            step.run();
        }
        assertTrue(!Arrays.equals(top, Arrays.copyOf(chosen, n)), "the step exchanges parts");
        long allocated = io.kvoffload.testing.Allocations.leastOverWindows(() -> {
            for (int i = 0; i < 20; i++) {
                step.run();
            }
        }, 20);
        assertEquals(0, allocated, "bytes allocated by 20 steps (" + sink[0] + ")");
    }

    @Test
    void badArgumentsAreNamed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new ReadExchange(1, 8, 3));
        assertTrue(e.getMessage().contains("partsPerRead = 3"), e.getMessage());
    }

    private static double[] toDoubles(float[] f) {
        double[] d = new double[f.length];
        for (int i = 0; i < f.length; i++) {
            d[i] = f[i];
        }
        return d;
    }

    private static BitSet bits(int[] a) {
        BitSet b = new BitSet();
        for (int c : a) {
            b.set(c);
        }
        return b;
    }

    private static float[] shares(BitSet set, float[] scores) {
        float[] s = new float[set.cardinality()];
        int i = 0;
        for (int c = set.nextSetBit(0); c >= 0; c = set.nextSetBit(c + 1)) {
            s[i++] = scores[c];
        }
        return s;
    }

    private static int read(int pair, int parts, int perRead) {
        int readsPerGroup = (parts + perRead - 1) / perRead;
        return pair / parts * readsPerGroup + pair % parts / perRead;
    }

    private static int[] readCounts(int[] chosen, int groups, int parts, int perRead) {
        int[] count = new int[groups * ((parts + perRead - 1) / perRead)];
        for (int c : chosen) {
            count[read(c, parts, perRead)]++;
        }
        return count;
    }

    private static int reads(int[] chosen, int parts, int perRead) {
        BitSet r = new BitSet();
        for (int c : chosen) {
            r.set(read(c, parts, perRead));
        }
        return r.cardinality();
    }
}
