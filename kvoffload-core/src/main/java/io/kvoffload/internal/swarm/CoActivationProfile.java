package io.kvoffload.internal.swarm;

import io.kvoffload.internal.util.Checks;
import io.kvoffload.attention.ExactAttention;
import io.kvoffload.strategy.LayerKv;
import io.kvoffload.internal.util.TopK;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ForkJoinPool;
import java.util.stream.IntStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Swarm's Step 1, pattern extraction (§5.1): which KV entries of one layer each profiled query
 * activated, from which the co-activation count {@code f(i,j)}, the probability
 * {@code P(i,j) = f(i,j)/Z} (Eq. 2) and the distance {@code d(i,j) = 1 − P(i,j)} (Eq. 3) follow.
 *
 * <p>The paper builds an adjacency matrix of {@code f}; at a million entries that is 10^12 cells. This
 * profile keeps instead, per entry, a bitmap over the profiled queries ({@code ⌈queries/64⌉} longs):
 * {@code f(i,j)} is the popcount of two bitmaps ANDed, and the memory is {@code 8 × entries ×
 * ⌈queries/64⌉} bytes (8 MiB for a million entries and 64 queries).
 *
 * <p>Two ways in: the engine hands the activation sets it observed ({@link #fromActivationSets}), or it
 * hands queries and the profile computes exact top-k activations itself ({@link #fromQueries}).
 */
public final class CoActivationProfile {
    private static final Logger LOG = LoggerFactory.getLogger(CoActivationProfile.class);
    /** Most queries one profile holds. */
    public static final int MAX_QUERIES = 1 << 16;
    /** Default share of entries a profiled query activates (the papers' 10% sparsity). */
    public static final double DEFAULT_SPARSITY_RATIO = 0.10;

    private final int entries;
    private final int queries;
    private final int words;
    private final long[] bits;
    private final int[] counts;
    private final long[] setSizes;
    private final long normaliser;

    private CoActivationProfile(int entries, int queries, long[] bits, CoActivationNormaliser normaliser) {
        this.entries = entries;
        this.queries = queries;
        this.words = wordsFor(queries);
        this.bits = bits;
        this.counts = new int[entries];
        this.setSizes = new long[queries];
        for (int e = 0; e < entries; e++) {
            int c = 0;
            for (int w = 0; w < words; w++) {
                long x = bits[e * words + w];
                c += Long.bitCount(x);
                while (x != 0) {
                    setSizes[w * 64 + Long.numberOfTrailingZeros(x)]++;
                    x &= x - 1;
                }
            }
            counts[e] = c;
        }
        long z = normaliser.normaliser(queries, setSizes.clone());
        if (z < 1) {
            throw new IllegalArgumentException("normaliser returned Z = " + z + "; allowed: 1.." + Long.MAX_VALUE);
        }
        this.normaliser = z;
    }

    /**
     * A profile from activation sets observed by the engine, e.g. the top-k token ids of each
     * sampled prefill query of one layer. Duplicates inside a set count once.
     *
     * @param entries KV entries of the layer (token positions {@code 0..entries−1}), at least 1
     * @param activationSets one set per profiled query, 1..{@link #MAX_QUERIES} sets, ids in range
     */
    public static CoActivationProfile fromActivationSets(int entries, List<int[]> activationSets,
            CoActivationNormaliser normaliser) {
        Checks.notNull("activationSets", activationSets);
        Checks.notNull("normaliser", normaliser);
        int q = activationSets.size();
        long[] bits = allocate(entries, q);
        int words = wordsFor(q);
        for (int i = 0; i < q; i++) {
            int[] set = Checks.notNull("activationSets[" + i + "]", activationSets.get(i));
            long mask = 1L << (i & 63);
            int word = i >>> 6;
            for (int e : set) {
                Checks.index("activationSets[" + i + "] entry", e, entries);
                bits[e * words + word] |= mask;
            }
        }
        return new CoActivationProfile(entries, q, bits, normaliser);
    }

    /**
     * A profile computed from queries: each query's exact attention over the layer's keys
     * ({@link ExactAttention}, weights averaged over the query heads) and its top
     * {@code ⌈sparsityRatio × eligible⌉} entries as the activation set.
     *
     * @param keys the layer's keys
     * @param queries profiled queries, {@code queryHeads × headDim} floats each, 1..{@link #MAX_QUERIES}
     * @param queryHeads a positive multiple of the layer's KV heads
     * @param sparsityRatio share of eligible entries a query activates, (0, 1]; default 0.10
     * @param excluded entries never counted as activated, or {@code null}: pass the ones the engine
     *     keeps resident in DRAM anyway (attention sinks, the local window). They are activated by
     *     nearly every query, so they would sit within the radius of every frequent entry and be
     *     replicated into every cluster; fetching them is never needed.
     * @param parallelism threads scoring queries, 1..256
     */
    public static CoActivationProfile fromQueries(LayerKv keys, List<float[]> queries, int queryHeads,
            double sparsityRatio, BitSet excluded, CoActivationNormaliser normaliser, int parallelism) {
        Checks.notNull("keys", keys);
        Checks.notNull("queries", queries);
        Checks.notNull("normaliser", normaliser);
        Checks.inRange("queries.size()", queries.size(), 1, MAX_QUERIES);
        if (!(sparsityRatio > 0 && sparsityRatio <= 1)) {
            throw new IllegalArgumentException("sparsityRatio = " + sparsityRatio + " is out of range; allowed: (0, 1]");
        }
        Checks.inRange("parallelism", parallelism, 1, 256);
        int n = keys.tokens();
        if (excluded != null && excluded.length() > n) {
            throw new IllegalArgumentException("excluded holds entry " + (excluded.length() - 1)
                    + "; allowed: 0.." + (n - 1));
        }
        int eligible = n - (excluded == null ? 0 : excluded.cardinality());
        if (eligible == 0) {
            throw new IllegalArgumentException("excluded covers all " + n + " entries; allowed: at least one eligible entry");
        }
        int k = (int) Math.min(eligible, Math.ceil(sparsityRatio * eligible));
        ExactAttention attention = new ExactAttention(queryHeads, keys.kvHeads(), keys.headDim());
        int[][] sets = new int[queries.size()][];
        long start = System.nanoTime();
        Runnable work = () -> IntStream.range(0, sets.length).parallel().forEach(i -> {
            float[] w = attention.weights(keys, queries.get(i));
            if (excluded != null) {
                for (int e = excluded.nextSetBit(0); e >= 0; e = excluded.nextSetBit(e + 1)) {
                    w[e] = Float.NEGATIVE_INFINITY;
                }
            }
            sets[i] = TopK.indices(w, k);
        });
        runWith(parallelism, work);
        LOG.debug("profiled {} queries over {} entries (top {}) in {} ms", sets.length, n, k,
                (System.nanoTime() - start) / 1_000_000);
        return fromActivationSets(n, List.of(sets), normaliser);
    }

    /** Runs a parallel-stream task on a pool of {@code parallelism} threads (not the common pool). */
    static void runWith(int parallelism, Runnable task) {
        if (parallelism == 1) {
            task.run(); // a parallel stream started on this thread would still use the common pool
            return;
        }
        ForkJoinPool pool = new ForkJoinPool(parallelism);
        try {
            pool.submit(task).get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while profiling", e);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw new IllegalStateException(e.getCause());
        } finally {
            pool.shutdown();
        }
    }

    private static long[] allocate(int entries, int queries) {
        Checks.inRange("entries", entries, 1, Integer.MAX_VALUE - 8);
        Checks.inRange("queries", queries, 1, MAX_QUERIES);
        long cells = (long) entries * wordsFor(queries);
        if (cells > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("entries × ⌈queries/64⌉ = " + cells + " words; allowed: up to "
                    + (Integer.MAX_VALUE - 8) + " (profile fewer queries)");
        }
        return new long[(int) cells];
    }

    static int wordsFor(int queries) {
        return (queries + 63) >>> 6;
    }

    /** KV entries (token positions) of the layer. */
    public int entries() { return entries; }

    /** Profiled queries. */
    public int queries() { return queries; }

    /** {@code Z} of Eq. 2. */
    public long normaliser() { return normaliser; }

    /** How many profiled queries activated {@code entry}. */
    public int activations(int entry) {
        Checks.index("entry", entry, entries);
        return counts[entry];
    }

    /** Distinct entries activated by query {@code query}. */
    public long activationSetSize(int query) {
        Checks.index("query", query, queries);
        return setSizes[query];
    }

    /** Whether query {@code query} activated {@code entry}. */
    public boolean activated(int entry, int query) {
        Checks.index("entry", entry, entries);
        Checks.index("query", query, queries);
        return (bits[entry * words + (query >>> 6)] & (1L << (query & 63))) != 0;
    }

    /** {@code f(i,j)}: the number of profiled queries that activated both entries. */
    public int coActivations(int i, int j) {
        Checks.index("i", i, entries);
        Checks.index("j", j, entries);
        return overlap(i, j);
    }

    /** Eq. 2: {@code P(i,j) = f(i,j) / Z}. */
    public double probability(int i, int j) {
        return coActivations(i, j) / (double) normaliser;
    }

    /** Eq. 3: {@code d(i,j) = 1 − P(i,j)}. */
    public double distance(int i, int j) {
        return 1.0 - probability(i, j);
    }

    /** Bytes held by this profile. */
    public long memoryBytes() {
        return 8L * bits.length + 4L * counts.length + 8L * setSizes.length;
    }

    int overlap(int i, int j) {
        int a = i * words, b = j * words, f = 0;
        for (int w = 0; w < words; w++) {
            f += Long.bitCount(bits[a + w] & bits[b + w]);
        }
        return f;
    }

    int words() { return words; }

    /** The bitmaps, entry-major ({@code words()} longs per entry); callers must not modify them. */
    long[] bitsUnsafe() { return bits; }

    /** Activation counts per entry; callers must not modify them. */
    int[] countsUnsafe() { return counts; }

    long[] setSizesUnsafe() { return setSizes; }
}
