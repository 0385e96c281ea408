package io.kvoffload.internal.storage;

import java.util.Arrays;

/**
 * Places the copies of a token that belongs to several clusters on distinct devices, where the
 * counts allow it, so that one failed device or damaged extent leaves another copy to read.
 *
 * <p>Swarm's Eq. 7 decides how many members of each cluster go to each device; which member takes
 * which of those slots is free, and Eq. 7 fills them by member order, independently per cluster —
 * so two copies of one token often share a device. This plan keeps every cluster's per-device
 * counts (and so Eq. 7's balance and the extents' sizes) and only reassigns members to slots:
 * clusters in id order, each member to the device it had unless a copy already lives there, then
 * pairwise swaps inside the cluster to resolve what is left. Tokens stay in ascending order within
 * a segment, so neighbouring entries still merge into runs.
 */
public final class ReplicaSpread implements ClusterPlan.Placement {
    private final ClusterPlan plan;
    private final int[][][] tokensOn;
    private final int collisions;

    private ReplicaSpread(ClusterPlan plan, int devices) {
        this.plan = plan;
        int clusters = plan.clusterCount();
        int tokens = plan.clusteredTokens();
        // Members as (token, device) pairs per cluster, starting from Eq. 7's order.
        int[][] token = new int[clusters][];
        int[][] device = new int[clusters][];
        for (int c = 0; c < clusters; c++) {
            int n = 0;
            for (int d = 0; d < devices; d++) {
                n += plan.tokensOn(c, d).length;
            }
            token[c] = new int[n];
            device[c] = new int[n];
            int i = 0;
            for (int d = 0; d < devices; d++) {
                for (int t : plan.tokensOn(c, d)) {
                    token[c][i] = t;
                    device[c][i++] = d;
                }
            }
        }
        // Copies per device, kept only for tokens stored more than once (compact index).
        int[] copies = new int[tokens];
        for (int[] ts : token) {
            for (int t : ts) {
                copies[t]++;
            }
        }
        int[] multi = new int[tokens];
        int m = 0;
        for (int t = 0; t < tokens; t++) {
            multi[t] = copies[t] > 1 ? m++ : -1;
        }
        int[] on = new int[m * devices];
        for (int c = 0; c < clusters; c++) {
            for (int i = 0; i < token[c].length; i++) {
                if (multi[token[c][i]] >= 0) {
                    on[multi[token[c][i]] * devices + device[c][i]]++;
                }
            }
        }
        // Pairwise swaps inside a cluster that remove a collision. When none is left, a sideways swap
        // moves a collision to another member (it may then be removed in that member's other
        // cluster): a walk along the alternating paths a strict local search cannot see. The count
        // never grows; the walk is bounded and seeded, so plans are deterministic.
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(0x5EED);
        int[] withCopies = clustersWithCopies(token, multi); // the only clusters a swap can help
        int best = collisions(on);
        int stale = 0;
        for (int pass = 0; pass < 64 && devices > 1 && best > 0 && stale < 8; pass++) {
            boolean changed = false;
            for (int c : withCopies) {
                changed |= resolve(token[c], device[c], multi, on, devices, null);
            }
            if (!changed) {
                boolean any = false;
                for (int c : withCopies) {
                    any |= resolve(token[c], device[c], multi, on, devices, rnd);
                }
                if (!any) {
                    break;
                }
            }
            int now = collisions(on);
            stale = now < best ? 0 : stale + 1; // the walk gives up after 8 passes without progress
            best = Math.min(best, now);
        }
        this.collisions = collisions(on);
        this.tokensOn = new int[clusters][devices][];
        for (int c = 0; c < clusters; c++) {
            int[] fill = new int[devices];
            for (int d = 0; d < devices; d++) {
                tokensOn[c][d] = new int[plan.tokensOn(c, d).length];
            }
            for (int i = 0; i < token[c].length; i++) {
                tokensOn[c][device[c][i]][fill[device[c][i]]++] = token[c][i];
            }
            for (int d = 0; d < devices; d++) {
                Arrays.sort(tokensOn[c][d]);
            }
        }
    }

    /**
     * {@code plan}'s members reassigned so replicas sit on distinct devices where the per-device
     * counts allow; {@link #plan()} is the plan to lay out.
     */
    public static ReplicaSpread of(ClusterPlan plan, int devices) {
        return new ReplicaSpread(plan, devices);
    }

    private static int collisions(int[] on) {
        int left = 0;
        for (int k : on) {
            left += Math.max(0, k - 1);
        }
        return left;
    }

    private static int[] clustersWithCopies(int[][] token, int[] multi) {
        int[] out = new int[token.length];
        int n = 0;
        for (int c = 0; c < token.length; c++) {
            for (int t : token[c]) {
                if (multi[t] >= 0) {
                    out[n++] = c;
                    break;
                }
            }
        }
        return Arrays.copyOf(out, n);
    }

    /** Copies that still share a device with another copy of their token (the counts left no way out). */
    public int collisions() {
        return collisions;
    }

    /**
     * Swaps members of one cluster between devices so that fewer copies share a device; with
     * {@code sideways} set, a colliding member that no strict swap helps trades places with a random
     * member whose own copy then collides instead.
     */
    private static boolean resolve(int[] token, int[] device, int[] multi, int[] on, int devices,
            java.util.SplittableRandom sideways) {
        boolean changed = false;
        for (int i = 0; i < token.length; i++) {
            int a = multi[token[i]];
            if (a < 0 || on[a * devices + device[i]] < 2) {
                continue;
            }
            int sidewaysPick = -1;
            int candidates = 0;
            boolean done = false;
            for (int j = 0; j < token.length && !done; j++) {
                int da = device[i];
                int db = device[j];
                if (db == da || on[a * devices + db] != 0) {
                    continue;
                }
                int b = multi[token[j]];
                if (b < 0 || b == a || on[b * devices + da] == 0) {
                    swap(token, device, multi, on, devices, i, j);
                    changed = true;
                    done = true;
                } else if (sideways != null && sideways.nextInt(++candidates) == 0) {
                    sidewaysPick = j; // reservoir sampling: a uniform pick among the candidates
                }
            }
            if (!done && sidewaysPick >= 0) {
                swap(token, device, multi, on, devices, i, sidewaysPick);
                changed = true;
            }
        }
        return changed;
    }

    private static void swap(int[] token, int[] device, int[] multi, int[] on, int devices, int i, int j) {
        int a = multi[token[i]];
        int b = multi[token[j]];
        int da = device[i];
        int db = device[j];
        on[a * devices + da]--;
        on[a * devices + db]++;
        if (b >= 0) {
            on[b * devices + db]--;
            on[b * devices + da]++;
        }
        device[i] = db;
        device[j] = da;
    }

    /** The spread plan: {@code plan}'s clusters with the reassigned members. */
    public ClusterPlan plan() {
        return plan.placedBy(this);
    }

    @Override
    public int[] tokensOn(int cluster, int device) {
        return tokensOn[cluster][device];
    }
}
