package io.kvoffload.internal.swarm;

import io.kvoffload.internal.util.Checks;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Swarm's Step 2, graph abstraction (§5.1), kept sparse: the edges {@code (i, j)} with
 * {@code d(i,j) ≤ τ}, i.e. co-activation count {@code f(i,j) ≥ T} for the pair threshold {@code T}.
 * The density of Eq. 4 is an entry's degree here, and the candidates of a medoid are its neighbours.
 *
 * <h2>Why no N×N matrix, and how the pairs are found</h2>
 * Distances to entries never co-activated are exactly 1 and τ is below 1, so only pairs with
 * {@code f ≥ T ≥ 1} are edges. But counting every co-activated pair is still quadratic in the
 * activation-set size (10% of a million entries is 10^5 per query, 5·10^9 pairs). The search uses
 * instead the threshold itself, as a set-similarity join with prefix filtering (Bayardo et al.,
 * "Scaling up all pairs similarity search", WWW 2007):
 * <ol>
 * <li>an entry activated fewer than {@code T} times has no edge; only the others ("frequent") take part;</li>
 * <li>order the queries by how many frequent entries they activated, rarest first; an entry's
 *     <em>prefix</em> is its first {@code count − T + 1} queries in that order. If two entries share
 *     {@code T} queries, their prefixes intersect (otherwise one of them would have fewer than
 *     {@code T} queries left outside its prefix), so a pair that shares no prefix query cannot be an edge;</li>
 * <li>index each entry under its prefix queries; for each entry, every earlier entry in one of its
 *     prefix lists is a candidate, verified exactly by a popcount of the two bitmaps.</li>
 * </ol>
 * The result is exact. Its cost is the candidate count, {@code Σ_q |list_q|²/2}, which is small when T
 * is close to the activation counts (short prefixes) and grows as τ loosens; probing runs on
 * {@code parallelism} threads over ranges of equal estimated work.
 *
 * <h2>Memory</h2>
 * {@code 4 × (entries + 1)} bytes of offsets plus 8 bytes per edge (both directions, int ids), plus
 * transient {@code 8 × frequent × ⌈queries/64⌉} bytes of reordered bitmaps and one int per frequent
 * entry per thread.
 */
final class CoActivationGraph {
    /** Directed edges an int-indexed adjacency holds. */
    static final long MAX_DIRECTED_EDGES = Integer.MAX_VALUE - 8;

    private final int entries;
    private final long pairThreshold;
    private final int frequent;
    private final int[] offsets;
    private final int[] neighbours;
    private final long candidatesChecked;

    private CoActivationGraph(int entries, long pairThreshold, int frequent, int[] offsets, int[] neighbours,
            long candidatesChecked) {
        this.entries = entries;
        this.pairThreshold = pairThreshold;
        this.frequent = frequent;
        this.offsets = offsets;
        this.neighbours = neighbours;
        this.candidatesChecked = candidatesChecked;
    }

    /**
     * Finds every pair co-activated at least {@code pairThreshold} times.
     *
     * @param p the profile
     * @param pairThreshold {@code T ≥ 1}
     * @param parallelism threads, 1..256
     */
    static CoActivationGraph build(CoActivationProfile p, long pairThreshold, int parallelism) {
        Checks.notNull("profile", p);
        Checks.inRange("parallelism", parallelism, 1, 256);
        if (pairThreshold < 1) {
            throw new IllegalArgumentException("pairThreshold = " + pairThreshold + " is out of range; allowed: 1.."
                    + Long.MAX_VALUE);
        }
        int n = p.entries();
        int q = p.queries();
        int words = p.words();
        long[] bits = p.bitsUnsafe();
        int[] counts = p.countsUnsafe();
        int[] offsets = new int[n + 1];
        if (pairThreshold > q) {
            return new CoActivationGraph(n, pairThreshold, 0, offsets, new int[0], 0);
        }
        int t = (int) pairThreshold;

        // 1. Frequent entries, renumbered 0..F-1 in ascending entry order.
        int frequentCount = 0;
        for (int e = 0; e < n; e++) {
            if (counts[e] >= t) {
                frequentCount++;
            }
        }
        final int f = frequentCount;
        int[] global = new int[f];
        for (int e = 0, i = 0; e < n; e++) {
            if (counts[e] >= t) {
                global[i++] = e;
            }
        }
        if (f < 2) {
            return new CoActivationGraph(n, pairThreshold, f, offsets, new int[0], 0);
        }

        // 2. Queries ranked by how many frequent entries they activated, rarest first.
        long[] perQuery = new long[q];
        for (int e : global) {
            for (int w = 0; w < words; w++) {
                long x = bits[e * words + w];
                while (x != 0) {
                    perQuery[w * 64 + Long.numberOfTrailingZeros(x)]++;
                    x &= x - 1;
                }
            }
        }
        long[] keyed = new long[q];
        for (int i = 0; i < q; i++) {
            keyed[i] = (perQuery[i] << 20) | i; // q ≤ 2^16, counts < 2^31: no overlap
        }
        Arrays.sort(keyed);
        int[] rank = new int[q];
        for (int r = 0; r < q; r++) {
            rank[(int) (keyed[r] & 0xFFFFF)] = r;
        }

        // 3. Bitmaps with bit rank[q] for query q: an entry's prefix is then its lowest set bits.
        long[] ranked = new long[f * words];
        for (int i = 0; i < f; i++) {
            int e = global[i];
            for (int w = 0; w < words; w++) {
                long x = bits[e * words + w];
                while (x != 0) {
                    int r = rank[w * 64 + Long.numberOfTrailingZeros(x)];
                    ranked[i * words + (r >>> 6)] |= 1L << (r & 63);
                    x &= x - 1;
                }
            }
        }

        // 4. Prefix index: for each ranked query, the frequent entries (ascending) with it in their prefix.
        int[] listStart = new int[q + 1];
        for (int i = 0; i < f; i++) {
            forEachPrefixBit(ranked, i, words, counts[global[i]] - t + 1, r -> listStart[r + 1]++);
        }
        for (int r = 0; r < q; r++) {
            listStart[r + 1] += listStart[r];
        }
        int[] lists = new int[listStart[q]];
        int[] fill = Arrays.copyOf(listStart, q);
        long[] work = new long[f]; // candidates entry i will examine: its position in each of its lists
        for (int i = 0; i < f; i++) {
            final int entry = i;
            forEachPrefixBit(ranked, i, words, counts[global[i]] - t + 1, r -> {
                work[entry] += fill[r] - listStart[r];
                lists[fill[r]++] = entry;
            });
        }

        // 5. Probe, in ranges of equal estimated work.
        // Below ~1000 frequent entries a second thread costs more than it saves.
        int threads = Math.max(1, Math.min(parallelism, f / 1024 + 1));
        int[] cut = splitByWork(work, threads);
        List<EdgeBuffer> buffers = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            buffers.add(new EdgeBuffer());
        }
        Runnable[] tasks = new Runnable[threads];
        for (int i = 0; i < threads; i++) {
            int from = cut[i], to = cut[i + 1];
            EdgeBuffer out = buffers.get(i);
            tasks[i] = () -> probe(from, to, f, words, t, counts, global, ranked, listStart, lists, out);
        }
        runAll(tasks);

        // 6. Adjacency in both directions, in global ids.
        long directed = 0;
        long candidates = 0;
        for (EdgeBuffer b : buffers) {
            directed += b.size; // two ints per pair = two directed edges
            candidates += b.candidates;
        }
        if (directed > MAX_DIRECTED_EDGES) {
            throw new IllegalArgumentException("the radius admits " + directed / 2 + " co-activated pairs; allowed: up to "
                    + MAX_DIRECTED_EDGES / 2 + " (choose a smaller radius or quantile)");
        }
        for (EdgeBuffer b : buffers) {
            for (int k = 0; k < b.size; k++) {
                offsets[global[b.data[k]] + 1]++;
            }
        }
        for (int e = 0; e < n; e++) {
            offsets[e + 1] += offsets[e];
        }
        int[] neighbours = new int[(int) directed];
        int[] pos = Arrays.copyOf(offsets, n);
        for (EdgeBuffer b : buffers) {
            for (int k = 0; k < b.size; k += 2) {
                int x = global[b.data[k]], y = global[b.data[k + 1]];
                neighbours[pos[x]++] = y;
                neighbours[pos[y]++] = x;
            }
        }
        return new CoActivationGraph(n, pairThreshold, f, offsets, neighbours, candidates);
    }

    private static void probe(int from, int to, int f, int words, int t, int[] counts, int[] global, long[] ranked,
            int[] listStart, int[] lists, EdgeBuffer out) {
        int[] seen = new int[f];
        Arrays.fill(seen, -1);
        for (int x = from; x < to; x++) {
            final int xx = x;
            forEachPrefixBit(ranked, x, words, counts[global[x]] - t + 1, r -> {
                for (int k = listStart[r], end = listStart[r + 1]; k < end; k++) {
                    int y = lists[k];
                    if (y >= xx) {
                        break; // lists are ascending: later entries find x themselves
                    }
                    if (seen[y] == xx) {
                        continue;
                    }
                    seen[y] = xx;
                    out.candidates++;
                    int overlap = 0;
                    int a = xx * words, b = y * words;
                    for (int w = 0; w < words; w++) {
                        overlap += Long.bitCount(ranked[a + w] & ranked[b + w]);
                    }
                    if (overlap >= t) {
                        out.add(xx, y);
                    }
                }
            });
        }
    }

    private interface RankConsumer {
        void accept(int rank);
    }

    /** Calls {@code action} for the lowest {@code prefix} set bits of entry {@code i}'s ranked bitmap. */
    private static void forEachPrefixBit(long[] ranked, int i, int words, int prefix, RankConsumer action) {
        int left = prefix;
        for (int w = 0; w < words && left > 0; w++) {
            long x = ranked[i * words + w];
            while (x != 0 && left > 0) {
                action.accept(w * 64 + Long.numberOfTrailingZeros(x));
                x &= x - 1;
                left--;
            }
        }
    }

    /** Range boundaries {@code cut[0] = 0 < ... < cut[parts] = work.length} of about equal total work. */
    private static int[] splitByWork(long[] work, int parts) {
        long total = 0;
        for (long w : work) {
            total += w + 1;
        }
        int[] cut = new int[parts + 1];
        cut[parts] = work.length;
        long acc = 0;
        int next = 1;
        for (int i = 0; i < work.length && next < parts; i++) {
            acc += work[i] + 1;
            if (acc >= total * next / parts) {
                cut[next++] = i + 1;
            }
        }
        for (int i = next; i < parts; i++) {
            cut[i] = work.length;
        }
        return cut;
    }

    private static void runAll(Runnable[] tasks) {
        if (tasks.length == 1) {
            tasks[0].run();
            return;
        }
        Thread[] threads = new Thread[tasks.length - 1];
        RuntimeException[] failure = new RuntimeException[tasks.length];
        for (int i = 1; i < tasks.length; i++) {
            int id = i;
            threads[i - 1] = Thread.ofPlatform().name("kvo-coactivation-" + i).start(() -> {
                try {
                    tasks[id].run();
                } catch (RuntimeException e) {
                    failure[id] = e;
                }
            });
        }
        tasks[0].run();
        for (Thread th : threads) {
            try {
                th.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while building the co-activation graph", e);
            }
        }
        for (RuntimeException e : failure) {
            if (e != null) {
                throw e;
            }
        }
    }

    /** Growable pairs (x, y) of local ids. */
    private static final class EdgeBuffer {
        int[] data = new int[1024];
        int size;
        long candidates;

        void add(int x, int y) {
            if (size + 2 > data.length) {
                if (data.length >= MAX_DIRECTED_EDGES) {
                    throw new IllegalArgumentException("the radius admits more than " + MAX_DIRECTED_EDGES / 2
                            + " co-activated pairs; choose a smaller radius or quantile");
                }
                data = Arrays.copyOf(data, (int) Math.min(MAX_DIRECTED_EDGES, 2L * data.length));
            }
            data[size++] = x;
            data[size++] = y;
        }
    }

    int entries() { return entries; }

    long pairThreshold() { return pairThreshold; }

    /** Entries activated at least {@code T} times (the only ones that can have edges). */
    int frequentEntries() { return frequent; }

    /** Eq. 4: {@code ρ(i) = |{j ≠ i : d(i,j) ≤ τ}|}. */
    int density(int entry) {
        Checks.index("entry", entry, entries);
        return offsets[entry + 1] - offsets[entry];
    }

    /** Neighbours of {@code entry} are {@code neighbour(k)} for k in [neighbourStart, neighbourEnd). */
    int neighbourStart(int entry) {
        Checks.index("entry", entry, entries);
        return offsets[entry];
    }

    int neighbourEnd(int entry) {
        Checks.index("entry", entry, entries);
        return offsets[entry + 1];
    }

    int neighbour(int index) {
        Checks.index("index", index, neighbours.length);
        return neighbours[index];
    }

    /** Pairs within the radius. */
    long edges() { return neighbours.length / 2; }

    /** Candidate pairs verified by popcount (the join's work). */
    long candidatesChecked() { return candidatesChecked; }

    long memoryBytes() {
        return 4L * offsets.length + 4L * neighbours.length;
    }
}
