package io.kvoffload.internal.swarm;

import io.kvoffload.internal.util.Checks;
import java.util.Arrays;
import java.util.function.IntPredicate;

/**
 * Swarm's online cluster maintenance for one layer (§6.2, Eq. 9). A token generated during decoding
 * stays in the DRAM local window for {@code W} steps; meanwhile this class counts, for every cluster,
 * the steps in which the token and the cluster's medoid were activated together. When the token
 * leaves the window it is assigned ({@link MaintenancePolicy}): under {@link MaintenancePolicy#SWARM}
 * to every cluster with
 * <pre>  d(e, C) = 1 − f(e, m_C) / W  &lt;  τ</pre>
 * (replication), or, when no cluster is that close, to a new cluster whose medoid it becomes. The
 * assignments collect until the decoder writes them with
 * {@code ClusterLayoutWriter.append}, which places each member on its cluster's next device.
 *
 * <h2>The activation signal</h2>
 * Per decoding step the decoder hands {@link #observeStep}: the clusters it selected (their medoids
 * are the activated representatives: that is what the medoid index decides on) and the window
 * tokens that step activated, i.e. those in its top-k by attention score. Both are prefixes of
 * arrays the decoder reuses, so the call allocates nothing.
 *
 * <h2>Distance and normaliser</h2>
 * {@code W} in Eq. 9 is the number of steps the token was observed in the window: the window size
 * in steady state, fewer for a token evicted early (a short first window), never more than the
 * window capacity (older steps drop out of the history ring). {@code 1 − f/W} is the offline
 * distance {@code 1 − f/Z} of Eq. 2–3 with the per-query normaliser ({@code Z} = profiled queries),
 * so the offline τ applies unchanged; with the sum-of-counts normaliser, pass a τ chosen for this
 * scale. A token observed for 0 steps is at distance 1 from everything. The comparison is strict
 * ({@code d < τ}), as the paper words it.
 *
 * <h2>Memory and cost</h2>
 * Instead of a cluster-by-token count matrix, it keeps the last {@code W} steps' activated clusters
 * in a ring ({@code W × maxActivatedClusters} ints) and, per window slot, a {@code W}-bit mask of the
 * steps in which that token was activated. {@link #evict} sums the ring rows the token's mask names:
 * {@code O(activated steps × clusters per step)}. Per step, {@link #observeStep} costs
 * {@code O(activated clusters + activated tokens + W)}. Neither allocates; only the creation of a
 * cluster beyond the current capacity grows the per-cluster tables (amortised doubling), and pending
 * assignments grow their buffers until {@link #drainAssignments} (off the per-step path) hands them
 * over.
 *
 * <p>Not thread-safe: one instance per layer, driven by that layer's decoding thread.
 */
public final class OnlineClusterMaintenance {

    /** Difference between a token's key and a medoid's key, for {@link MaintenancePolicy#MIN_DIFF}. */
    @FunctionalInterface
    public interface KeyDifference {
        /** A non-negative difference (e.g. L2 distance over all KV heads); smaller is more similar. */
        double difference(int token, int medoidToken);
    }

    /**
     * Assignments of the tokens that left the window since the last drain, in eviction order, as
     * {@code ClusterLayoutWriter.append} takes them: token {@code tokens[i]} joined clusters
     * {@code clusterIds[clusterStart[i] .. clusterStart[i+1])}, with the Eq. 9 distance of each in
     * {@code distances} (same indices; 1 for a new cluster). Clusters with ids from
     * {@code firstNewCluster} were created in this period, in id order, with medoids
     * {@code newMedoids}.
     */
    public record Assignments(int[] tokens, int[] clusterStart, int[] clusterIds, double[] distances,
            int firstNewCluster, int[] newMedoids) {
        /** Tokens assigned. */
        public int size() {
            return tokens.length;
        }
    }

    private final MaintenancePolicy policy;
    private final double tau;
    private final int window;
    private final int words;
    private final int maxActivated;
    private final int maxReplicas;
    private final KeyDifference keyDifference;

    private int clusters;
    private int[] medoid;
    private long[] size;

    // History ring: step s's activated clusters are ring[(s mod W) × A ..], ringCount[s mod W] of them.
    private final int[] ring;
    private final int[] ringCount;
    private long steps;

    // Window slots: token t sits in slot t mod W; mask row = the ring rows in which it was activated.
    private final int[] slotToken;
    private final long[] slotAdmitted;
    private final long[] mask;
    private int occupied;

    // Scratch, one entry per cluster.
    private int[] count;
    private int[] touched;
    private long[] candidates;
    private long[] stamp;
    private long epoch;

    // Pending assignments.
    private int pending;
    private int[] pendingToken = new int[64];
    private int[] pendingStart = new int[65];
    private int[] pendingCluster = new int[64];
    private double[] pendingDistance = new double[64];
    private int drainedClusters;

    private boolean lastCreated;

    /**
     * One layer's maintenance from its current clustering.
     *
     * @param policy how evicted tokens are assigned
     * @param medoids the medoid token of every cluster, in cluster-id order, at least one cluster
     * @param clusterSizes the members of every cluster (replicas count), each at least 1; same length
     * @param tau the radius τ of Eq. 9, [0, 1): the offline clustering's, with the per-query normaliser
     * @param window W, the local window in tokens (= steps a token spends in it), 1..65536; the paper uses 256
     * @param maxActivatedClusters most clusters one step may name, 1..2^24
     * @param maxReplicas most clusters one token joins under SWARM (the closest first),
     *     1..{@link ClusteringConfig#UNLIMITED}; {@code UNLIMITED} is Eq. 9 as published
     * @param keyDifference required for {@link MaintenancePolicy#MIN_DIFF}, ignored otherwise (may be null)
     */
    public OnlineClusterMaintenance(MaintenancePolicy policy, int[] medoids, long[] clusterSizes, double tau, int window,
            int maxActivatedClusters, int maxReplicas, KeyDifference keyDifference) {
        this.policy = Checks.notNull("policy", policy);
        Checks.notNull("medoids", medoids);
        Checks.notNull("clusterSizes", clusterSizes);
        this.tau = Checks.inHalfOpen("tau", tau, 0.0, 1.0);
        this.window = Checks.inRange("window", window, 1, 1 << 16);
        this.maxActivated = Checks.inRange("maxActivatedClusters", maxActivatedClusters, 1, 1 << 24);
        this.maxReplicas = Checks.inRange("maxReplicas", maxReplicas, 1, ClusteringConfig.UNLIMITED);
        if (policy == MaintenancePolicy.MIN_DIFF && keyDifference == null) {
            throw new NullPointerException("keyDifference must not be null for policy MIN_DIFF");
        }
        this.keyDifference = keyDifference;
        Checks.inRange("medoids.length", medoids.length, 1, Integer.MAX_VALUE - 8);
        if (clusterSizes.length != medoids.length) {
            throw new IllegalArgumentException("clusterSizes.length = " + clusterSizes.length + " is out of range; allowed: "
                    + medoids.length + ".." + medoids.length + " (one per medoid)");
        }
        for (int c = 0; c < medoids.length; c++) {
            Checks.inRange("medoids[" + c + "]", medoids[c], 0, Integer.MAX_VALUE);
            Checks.inRange("clusterSizes[" + c + "]", clusterSizes[c], 1, Long.MAX_VALUE);
        }
        long ringInts = (long) window * maxActivatedClusters;
        if (ringInts > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("window × maxActivatedClusters = " + ringInts + " is out of range; allowed: 1.."
                    + (Integer.MAX_VALUE - 8));
        }
        this.clusters = medoids.length;
        this.drainedClusters = clusters;
        int cap = clusters + 16;
        this.medoid = Arrays.copyOf(medoids, cap);
        this.size = Arrays.copyOf(clusterSizes, cap);
        this.count = new int[cap];
        this.touched = new int[cap];
        this.candidates = new long[cap];
        this.stamp = new long[cap];
        this.words = (window + 63) >>> 6;
        this.ring = new int[(int) ringInts];
        this.ringCount = new int[window];
        this.slotToken = new int[window];
        Arrays.fill(slotToken, -1);
        this.slotAdmitted = new long[window];
        this.mask = new long[window * words];
    }

    /** From a clustering (medoids, sizes, τ). */
    public static OnlineClusterMaintenance of(Clustering clustering, MaintenancePolicy policy, int window,
            int maxActivatedClusters, int maxReplicas, KeyDifference keyDifference) {
        Checks.notNull("clustering", clustering);
        long[] sizes = new long[clustering.clusterCount()];
        for (int c = 0; c < sizes.length; c++) {
            sizes[c] = clustering.size(c);
        }
        return new OnlineClusterMaintenance(policy, clustering.medoids(), sizes, clustering.stats().tau(), window,
                maxActivatedClusters, maxReplicas, keyDifference);
    }

    /** Eq. 9: {@code 1 − f/W}, or 1 when the token was observed for no step. */
    public static double eq9Distance(int coActivations, int observedSteps) {
        return observedSteps <= 0 ? 1.0 : 1.0 - coActivations / (double) observedSteps;
    }

    // ------------------------------------------------------------------ the window

    /**
     * A new token enters the local window (it was just generated). It takes slot
     * {@code token mod W}, so the window holds at most {@code W} tokens of distinct residues, which
     * consecutive positions always are.
     *
     * @throws IllegalStateException if that slot still holds a token: evict it first
     */
    public void admit(int token) {
        Checks.inRange("token", token, 0, Integer.MAX_VALUE);
        int slot = token % window;
        if (slotToken[slot] >= 0) {
            throw new IllegalStateException("window slot " + slot + " still holds token " + slotToken[slot]
                    + "; evict it before admitting token " + token + " (window " + window + ")");
        }
        slotToken[slot] = token;
        slotAdmitted[slot] = steps;
        Arrays.fill(mask, slot * words, (slot + 1) * words, 0L);
        occupied++;
    }

    /** Whether {@code token} is in the window. */
    public boolean inWindow(int token) {
        return token >= 0 && slotToken[token % window] == token;
    }

    /** Tokens in the window. */
    public int windowTokens() {
        return occupied;
    }

    /**
     * One decoding step of this layer. Allocation-free.
     *
     * @param activatedClusters the clusters selected this step (their medoids were activated), ids
     *     in {@code [0, clusterCount())}, distinct; the first {@code nActivated} entries are read
     * @param nActivated 0..min(activatedClusters.length, maxActivatedClusters)
     * @param activatedWindowTokens window tokens in this step's top-k (admitted, not yet evicted);
     *     the first {@code nWindow} are read; repeats are harmless
     * @param nWindow 0..activatedWindowTokens.length
     */
    public void observeStep(int[] activatedClusters, int nActivated, int[] activatedWindowTokens, int nWindow) {
        Checks.notNull("activatedClusters", activatedClusters);
        Checks.notNull("activatedWindowTokens", activatedWindowTokens);
        Checks.inRange("nActivated", nActivated, 0, Math.min(activatedClusters.length, maxActivated));
        Checks.inRange("nWindow", nWindow, 0, activatedWindowTokens.length);
        for (int i = 0; i < nWindow; i++) {
            int t = activatedWindowTokens[i];
            if (!inWindow(t)) {
                throw new IllegalArgumentException("activatedWindowTokens[" + i + "] = " + t + " is out of range; allowed:"
                        + " a token in the window (admitted, not evicted)");
            }
        }
        long e = ++epoch; // checks before any change, so a rejected step leaves no trace
        for (int i = 0; i < nActivated; i++) {
            int c = activatedClusters[i];
            if (c < 0 || c >= clusters) {
                throw new IllegalArgumentException("activatedClusters[" + i + "] = " + c + " is out of range; allowed: 0.."
                        + (clusters - 1));
            }
            if (stamp[c] == e) {
                throw new IllegalArgumentException("activatedClusters[" + i + "] = " + c + " repeats a cluster of this"
                        + " step; allowed: distinct clusters");
            }
            stamp[c] = e;
        }
        int r = (int) (steps % window);
        int word = r >>> 6;
        long bit = 1L << (r & 63);
        // Ring row r now holds this step: the step W ago leaves every token's history.
        for (int s = 0; s < window; s++) {
            mask[s * words + word] &= ~bit;
        }
        System.arraycopy(activatedClusters, 0, ring, r * maxActivated, nActivated);
        ringCount[r] = nActivated;
        for (int i = 0; i < nWindow; i++) {
            mask[(activatedWindowTokens[i] % window) * words + word] |= bit;
        }
        steps++;
    }

    /** Steps observed so far. */
    public long steps() {
        return steps;
    }

    /** {@code W} of Eq. 9 for a window token: steps observed since it entered, at most the window. */
    public int observedSteps(int token) {
        requireInWindow(token);
        return (int) Math.min(window, steps - slotAdmitted[token % window]);
    }

    /** {@code f(e, m_C)} of Eq. 9 for a window token: steps in which it and the cluster's medoid were both activated. */
    public int coActivations(int token, int cluster) {
        requireInWindow(token);
        Checks.index("cluster", cluster, clusters);
        int slot = token % window;
        int f = 0;
        for (int w = 0; w < words; w++) {
            long x = mask[slot * words + w];
            while (x != 0) {
                int r = w * 64 + Long.numberOfTrailingZeros(x);
                x &= x - 1;
                for (int i = r * maxActivated, end = i + ringCount[r]; i < end; i++) {
                    if (ring[i] == cluster) {
                        f++;
                    }
                }
            }
        }
        return f;
    }

    /** Eq. 9's {@code d(e, C)} for a window token. */
    public double distance(int token, int cluster) {
        return eq9Distance(coActivations(token, cluster), observedSteps(token));
    }

    /**
     * The token leaves the window: assigns it by the policy and records the assignment for the next
     * {@link #drainAssignments}. Allocation-free unless it creates a cluster beyond the current
     * capacity or the pending buffers must grow.
     *
     * @return the number of clusters it joined (at least 1); {@link #lastCluster} names them
     */
    public int evict(int token) {
        requireInWindow(token);
        int slot = token % window;
        int w = (int) Math.min(window, steps - slotAdmitted[slot]);
        int nTouched = 0;
        for (int k = 0; k < words; k++) {
            long x = mask[slot * words + k];
            while (x != 0) {
                int r = k * 64 + Long.numberOfTrailingZeros(x);
                x &= x - 1;
                for (int i = r * maxActivated, end = i + ringCount[r]; i < end; i++) {
                    int c = ring[i];
                    if (count[c]++ == 0) {
                        touched[nTouched++] = c;
                    }
                }
            }
        }
        ensurePending(pending + 1, maxReplicas == ClusteringConfig.UNLIMITED ? Math.max(1, nTouched)
                : Math.min(maxReplicas, Math.max(1, nTouched)));
        int at = pendingStart[pending];
        lastCreated = false;
        try {
            at = assign(token, w, nTouched, at);
        } finally {
            for (int i = 0; i < nTouched; i++) {
                count[touched[i]] = 0;
            }
        }
        pendingToken[pending] = token;
        pendingStart[++pending] = at;
        slotToken[slot] = -1;
        occupied--;
        return at - pendingStart[pending - 1];
    }

    /** Records the token's clusters from {@code pendingCluster[at]} on; returns the new end. */
    private int assign(int token, int w, int nTouched, int at) {
        switch (policy) {
            case SWARM -> {
                int nc = 0;
                for (int i = 0; i < nTouched; i++) {
                    int c = touched[i];
                    if (eq9Distance(count[c], w) < tau) {
                        // closest first (most co-activations), ties by id
                        candidates[nc++] = ((long) (Integer.MAX_VALUE - count[c]) << 32) | c;
                    }
                }
                if (nc == 0) {
                    int c = createCluster(token);
                    pendingCluster[at] = c;
                    pendingDistance[at++] = 1.0;
                    lastCreated = true;
                } else {
                    Arrays.sort(candidates, 0, nc);
                    for (int i = 0; i < Math.min(nc, maxReplicas); i++) {
                        int c = (int) candidates[i];
                        pendingCluster[at] = c;
                        pendingDistance[at++] = eq9Distance(count[c], w);
                        size[c]++;
                    }
                }
            }
            case MIN_SIZE -> {
                int best = 0;
                for (int c = 1; c < clusters; c++) {
                    if (size[c] < size[best]) {
                        best = c;
                    }
                }
                pendingCluster[at] = best;
                pendingDistance[at++] = eq9Distance(count[best], w);
                size[best]++;
            }
            case MIN_DIFF -> {
                int best = -1;
                double bestDiff = Double.POSITIVE_INFINITY;
                for (int c = 0; c < clusters; c++) {
                    double d = keyDifference.difference(token, medoid[c]);
                    if (!(d >= 0)) {
                        throw new IllegalStateException("keyDifference(" + token + ", " + medoid[c] + ") = " + d
                                + "; allowed: a non-negative number");
                    }
                    if (d < bestDiff) {
                        bestDiff = d;
                        best = c;
                    }
                }
                pendingCluster[at] = best;
                pendingDistance[at++] = eq9Distance(count[best], w);
                size[best]++;
            }
        }
        return at;
    }

    /** Cluster {@code i} (0-based, fewer than {@link #evict}'s result) the last evicted token joined. */
    public int lastCluster(int i) {
        if (pending == 0) {
            throw new IllegalStateException("no assignment since the last drain");
        }
        Checks.index("i", i, pendingStart[pending] - pendingStart[pending - 1]);
        return pendingCluster[pendingStart[pending - 1] + i];
    }

    /** The Eq. 9 distance of {@link #lastCluster(int) lastCluster(i)} (1 for a cluster just created). */
    public double lastDistance(int i) {
        lastCluster(i);
        return pendingDistance[pendingStart[pending - 1] + i];
    }

    /** Whether the last evicted token became the medoid of a new cluster. */
    public boolean lastCreatedCluster() {
        return lastCreated;
    }

    /**
     * Hands over the assignments since the last drain and forgets them. Call it when writing them
     * ({@code ClusterLayoutWriter.append}); the layout written must have had {@link Assignments#firstNewCluster()}
     * clusters, i.e. every earlier drain was appended. Allocates (off the per-step path).
     */
    public Assignments drainAssignments() {
        int ids = pendingStart[pending];
        int[] newMedoids = Arrays.copyOfRange(medoid, drainedClusters, clusters);
        Assignments a = new Assignments(Arrays.copyOf(pendingToken, pending), Arrays.copyOf(pendingStart, pending + 1),
                Arrays.copyOf(pendingCluster, ids), Arrays.copyOf(pendingDistance, ids), drainedClusters, newMedoids);
        pending = 0;
        drainedClusters = clusters;
        return a;
    }

    /** Assignments recorded since the last drain. */
    public int pendingAssignments() {
        return pending;
    }

    // ------------------------------------------------------------------ the clusters

    public MaintenancePolicy policy() { return policy; }

    public double tau() { return tau; }

    public int window() { return window; }

    /** Clusters, the ones created online included (ids continue the offline ones). */
    public int clusterCount() { return clusters; }

    public int medoid(int cluster) {
        Checks.index("cluster", cluster, clusters);
        return medoid[cluster];
    }

    /** Members of a cluster, appended ones included. */
    public long size(int cluster) {
        Checks.index("cluster", cluster, clusters);
        return size[cluster];
    }

    /** Bytes held by the history ring, the window masks and the per-cluster tables. */
    public long memoryBytes() {
        return 4L * ring.length + 4L * ringCount.length + 12L * slotToken.length + 8L * mask.length
                + (long) medoid.length * (4 + 8 + 4 + 4 + 8 + 8)
                + 4L * pendingToken.length + 4L * pendingStart.length + 12L * pendingCluster.length;
    }

    private int createCluster(int token) {
        if (clusters == medoid.length) {
            int cap = (int) Math.min(Integer.MAX_VALUE - 8, (long) clusters * 2);
            if (cap == clusters) {
                throw new IllegalStateException("cluster table is full at " + clusters + " clusters");
            }
            medoid = Arrays.copyOf(medoid, cap);
            size = Arrays.copyOf(size, cap);
            count = Arrays.copyOf(count, cap);
            touched = Arrays.copyOf(touched, cap);
            candidates = Arrays.copyOf(candidates, cap);
            stamp = Arrays.copyOf(stamp, cap);
        }
        medoid[clusters] = token;
        size[clusters] = 1;
        return clusters++;
    }

    private void ensurePending(int tokens, int moreIds) {
        if (tokens > pendingToken.length) {
            int cap = Math.max(tokens, pendingToken.length * 2);
            pendingToken = Arrays.copyOf(pendingToken, cap);
            pendingStart = Arrays.copyOf(pendingStart, cap + 1);
        }
        int ids = pendingStart[pending] + moreIds;
        if (ids > pendingCluster.length) {
            int cap = Math.max(ids, pendingCluster.length * 2);
            pendingCluster = Arrays.copyOf(pendingCluster, cap);
            pendingDistance = Arrays.copyOf(pendingDistance, cap);
        }
    }

    private void requireInWindow(int token) {
        if (!inWindow(token)) {
            throw new IllegalArgumentException("token = " + token + " is out of range; allowed: a token in the window"
                    + " (admitted, not evicted; " + occupied + " tokens there)");
        }
    }

    // ------------------------------------------------------------------ Table 5's measure

    /**
     * Swarm Table 5's cluster distance: the co-activation distance {@code d(member, medoid)} of an
     * evaluation profile, averaged over the memberships (replicas count) of the clusters
     * {@code includeCluster} accepts, the medoid itself aside and only members the evaluation
     * activated at least once (as {@code docs/swarm-offline.md}'s member–medoid distance). Divide by
     * the same measure of the offline clustering for the normalised distance Table 5 reports.
     *
     * @param memberOffsets {@code clusters + 1} CSR offsets into {@code members}
     * @param members entry ids, each below {@code eval.entries()}
     * @param medoids one per cluster
     * @param includeCluster which clusters count, or null for all
     * @return the mean, or NaN when no membership counts
     */
    public static double meanMedoidDistance(int[] memberOffsets, int[] members, int[] medoids, CoActivationProfile eval,
            IntPredicate includeCluster) {
        Checks.notNull("memberOffsets", memberOffsets);
        Checks.notNull("members", members);
        Checks.notNull("medoids", medoids);
        Checks.notNull("eval", eval);
        if (memberOffsets.length != medoids.length + 1) {
            throw new IllegalArgumentException("memberOffsets.length = " + memberOffsets.length + " is out of range; allowed: "
                    + (medoids.length + 1) + " (medoids.length + 1)");
        }
        double sum = 0;
        long n = 0;
        for (int c = 0; c < medoids.length; c++) {
            if (includeCluster != null && !includeCluster.test(c)) {
                continue;
            }
            int m = medoids[c];
            for (int k = memberOffsets[c]; k < memberOffsets[c + 1]; k++) {
                int e = members[k];
                if (e != m && eval.activations(e) > 0) {
                    sum += eval.distance(e, m);
                    n++;
                }
            }
        }
        return n == 0 ? Double.NaN : sum / n;
    }
}
