package io.kvoffload.internal.sequence;

import io.kvoffload.KvSequence;
import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.storage.ClusterLayoutWriter;
import io.kvoffload.internal.storage.ClusterPlan;
import io.kvoffload.internal.storage.HeadShards;
import io.kvoffload.internal.util.Checks;
import java.util.BitSet;

/**
 * The unit layout every strategy's offline phase writes through: a layer's positions in units
 * (pages of consecutive positions, clusters, any groups a strategy chooses), each unit's share of
 * each SSD one extent, every entry with its own checksum, written all or nothing
 * ({@link ClusterLayoutWriter}, which frees what it allocated on failure). A unit's first position
 * is its representative. Strategies that choose units themselves ({@link #write}) get the running
 * round-robin placement: unit {@code u} starts on the device after the one where unit {@code u-1}
 * ended, and goes round robin from there in runs of consecutive members that fill one aligned read
 * (one member at a time for entries of 4 KiB or more: Eq. 7), so a unit spreads over as many SSDs as
 * its bytes fill reads on; strategies with their own placement build a {@link ClusterPlan} and
 * {@link #install} it.
 */
public final class UnitLayouts {
    /** The most units one layer may have. */
    public static final int MAX_UNITS = 1 << 30;

    private UnitLayouts() {}

    /**
     * Lays {@code layer} of a writable sequence out as {@code units} with round-robin placement.
     *
     * @param units 1..{@value #MAX_UNITS} non-empty units of distinct positions in
     *     {@code 0..tokenCount(layer)-1}, together covering every one of them
     * @throws IllegalArgumentException if the layer holds no tokens or {@code units} is not as allowed
     */
    public static void write(KvSequence sequence, int layer, int[][] units) {
        write(sequence, layer, units, 1);
    }

    /**
     * {@link #write(KvSequence, int, int[][])} with runs of at least {@code minRun} members. Where that is
     * more than the alignment asks for, the units are placed {@link #packed}: under token striping
     * {@code minRun} consecutive members, across unit boundaries, share a device, so a unit of at most
     * {@code minRun} members is whole on one device, neighbouring small units are adjacent extents of one
     * device (one read when read together), and the next run goes to the next device. For small pages
     * read apart (the default strategy's finer blocks), where spreading each over the SSDs would cost one
     * small read per member.
     *
     * @param minRun members per device run at the least, 1..2^20 (the alignment may ask for more)
     */
    public static void write(KvSequence sequence, int layer, int[][] units, int minRun) {
        Checks.inRange("minRun", minRun, 1, 1 << 20);
        SequenceHooks hooks = SequenceAccess.of(sequence);
        hooks.checkOpen();
        hooks.exclusive(() -> {
            hooks.checkWritable();
            Checks.index("layer", layer, sequence.shape().layers());
            Checks.notNull("units", units);
            int tokens = hooks.ledger().layer(layer).tokens();
            if (tokens == 0) {
                throw new IllegalArgumentException("layer " + layer + " of sequence " + sequence.id()
                        + " holds no tokens; append its KV before laying it out");
            }
            checkUnits("units", tokens, units);
            int devices = hooks.store().devices().size(), run = run(sequence.shape().entryBytes(), alignment(hooks));
            install(hooks, layer, minRun > run ? packed(units, devices, minRun) : roundRobin(units, devices, run));
            return null;
        });
    }

    /**
     * What one token of a unit layout costs on one device: {@code bytes}, the whole entry under token
     * striping or one head group's slice under head sharding ({@link HeadShards#shards}), on SSDs that
     * read {@code alignment}-byte units, in {@code groups} head groups (1 under token striping). A page whose
     * slice is under the alignment is padded to it on disk and in every read.
     */
    public record DeviceSlice(int bytes, int alignment, int groups) {}

    /** The {@link DeviceSlice} of {@code sequence}'s unit layouts. */
    public static DeviceSlice deviceSlice(KvSequence sequence) {
        SequenceHooks hooks = SequenceAccess.of(sequence);
        hooks.checkOpen();
        var store = hooks.store();
        // As the layout writers decide: a store with unsalted checksums (written before head sharding) never shards.
        int shards = hooks.checksum().salted()
                ? HeadShards.shards(store.config().placement(), sequence.shape(), store.devices().size()) : 1;
        return new DeviceSlice(sequence.shape().entryBytes() / shards, alignment(hooks), shards);
    }

    /** The largest read alignment of the store's SSDs. */
    private static int alignment(SequenceHooks hooks) {
        return hooks.store().devices().stream().mapToInt(d -> d.alignment()).max().orElse(1);
    }

    /**
     * Checks that {@code units} are 1..{@value #MAX_UNITS} non-empty units of distinct positions in
     * {@code 0..tokens-1} that together cover every position (a position may be in several units: a
     * replica, stored once per unit); messages name the argument as {@code name}.
     *
     * @return the members of all units together
     */
    public static int checkUnits(String name, int tokens, int[][] units) {
        if (tokens < 1) {
            throw new IllegalStateException("the layer holds no tokens; append its KV before laying it out");
        }
        if (units.length < 1 || units.length > MAX_UNITS) {
            throw new IllegalArgumentException(name + ".length = " + units.length + " is out of range; allowed: 1.."
                    + MAX_UNITS);
        }
        long total = 0;
        for (int c = 0; c < units.length; c++) {
            if (units[c] == null || units[c].length == 0) {
                throw new IllegalArgumentException(name + "[" + c + "] is " + (units[c] == null ? "null" : "empty")
                        + "; allowed: at least one position");
            }
            total += units[c].length;
        }
        if (total > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException(name + " hold " + total + " members; allowed: at most "
                    + (Integer.MAX_VALUE - 8));
        }
        BitSet covered = new BitSet(tokens);
        int[] lastUnit = new int[tokens];
        java.util.Arrays.fill(lastUnit, -1);
        for (int c = 0; c < units.length; c++) {
            for (int j = 0; j < units[c].length; j++) {
                int p = units[c][j];
                if (p < 0 || p >= tokens) {
                    throw new IllegalArgumentException(name + "[" + c + "][" + j + "] = " + p + " is out of range;"
                            + " allowed: 0.." + (tokens - 1) + " (the layer holds " + tokens + " tokens)");
                }
                if (lastUnit[p] == c) {
                    throw new IllegalArgumentException(name + "[" + c + "][" + j + "] = " + p + " repeats a member of"
                            + " unit " + c + "; allowed: distinct positions within a unit");
                }
                lastUnit[p] = c;
                covered.set(p);
            }
        }
        int missing = covered.nextClearBit(0);
        if (missing < tokens) {
            throw new IllegalArgumentException("position " + missing + " is in no unit of " + name
                    + "; allowed: units that together cover every position 0.." + (tokens - 1));
        }
        return (int) total;
    }

    /**
     * Writes tokens {@code [0, plan.clusteredTokens())} of {@code layer} as the plan's units: each
     * unit's share of each device becomes one extent, replicas are physical copies, every entry gets
     * a checksum. The layer's block extents the units now cover are released after the next commit
     * (until then the previous commit still names them).
     */
    public static void install(SequenceHooks hooks, int layer, ClusterPlan plan) {
        hooks.exclusive(() -> {
            hooks.checkWritable();
            KvSequence sequence = hooks.sequence();
            Checks.index("layer", layer, sequence.shape().layers());
            Checks.inRange("plan.clusteredTokens()", plan.clusteredTokens(), 1, hooks.ledger().layer(layer).tokens());
            hooks.flushWrites();
            ClusterLayout layout = ClusterLayoutWriter.write(hooks.store(), sequence.id(), hooks.checksum(), layer,
                    sequence.shape(), plan, (positions, k, v) -> sequence.read(layer, positions, k, v));
            hooks.ledger().installClusters(layer, layout);
            hooks.changed();
            return null;
        });
    }

    /**
     * Checked units placed round robin, one member at a time: Eq. 7 ({@link #roundRobin(int[][], int,
     * int)} with runs of 1).
     */
    static ClusterPlan roundRobin(int[][] units, int devices) {
        return roundRobin(units, devices, 1);
    }

    /**
     * Members per device run for entries of {@code entryBytes} on devices that read in
     * {@code alignment}-byte units: as many as fill one unit, at least 1. A unit's share of a device is
     * one extent padded to the alignment, so spreading a page of 512-byte entries one by one over 4
     * SSDs stores and reads 2 KiB of every 4 KiB; runs of 8 fill each 4 KiB read.
     */
    static int run(int entryBytes, int alignment) {
        Checks.positive("entryBytes", entryBytes);
        Checks.positive("alignment", alignment);
        return Math.max(1, alignment / entryBytes);
    }

    /**
     * Checked units placed round robin in runs: a running pointer {@code p} starts at 0; unit
     * {@code u} starts on device {@code p mod devices}, its {@code k}-th run of {@code run} consecutive
     * members goes to {@code (start + k) mod devices}, then {@code p += ceil(|u| / run)}. With runs
     * of 1 this is Eq. 7 (member {@code i} on {@code (start + i) mod devices}, {@code p += |u|}).
     * Nothing is joined online to such units (radius 0).
     */
    static ClusterPlan roundRobin(int[][] units, int devices, int run) {
        Checks.inRange("devices", devices, 1, 4096);
        Checks.positive("run", run);
        long[] pointer = runningStarts(units, n -> (n + run - 1) / run);
        return ClusterPlan.of(covered(units), units.length, 0, 0, unit -> units[unit][0], (unit, device) -> {
            int[] members = units[unit];
            int runs = (members.length + run - 1) / run;
            int first = Math.floorMod(device - (int) (pointer[unit] % devices), devices); // first run on this device
            int n = 0;
            for (int k = first; k < runs; k += devices) {
                n += Math.min(run, members.length - k * run);
            }
            int[] out = new int[n];
            int at = 0;
            for (int k = first; k < runs; k += devices) {
                int from = k * run, len = Math.min(run, members.length - from);
                System.arraycopy(members, from, out, at, len);
                at += len;
            }
            return out;
        });
    }

    /**
     * Checked units placed round robin by a running member count: member {@code i} of unit {@code u} goes
     * to device {@code floor((P(u) + i) / run) mod devices}, where {@code P(u)} counts the members of the
     * units before {@code u}. Runs continue across unit boundaries, so units smaller than a run share its
     * device; with a run that is a multiple of every unit's size, each unit is whole on one device. Under
     * head sharding the units of one run share their rotation ({@link ClusterPlan#rotationStep}), so each
     * head group's slices of the run lie side by side on one device.
     */
    static ClusterPlan packed(int[][] units, int devices, int run) {
        Checks.inRange("devices", devices, 1, 4096);
        Checks.positive("run", run);
        long[] first = runningStarts(units, n -> n);
        return ClusterPlan.of(covered(units), units.length, 0, 0, unit -> units[unit][0], (unit, device) -> {
            int[] members = units[unit];
            int n = 0;
            for (int i = 0; i < members.length; i++) {
                n += (first[unit] + i) / run % devices == device ? 1 : 0;
            }
            int[] out = new int[n];
            for (int i = 0, at = 0; i < members.length; i++) {
                if ((first[unit] + i) / run % devices == device) {
                    out[at++] = members[i];
                }
            }
            return out;
        }, unit -> first[unit] / run);
    }

    /** Each unit's running pointer before it, the pointer advancing by {@code step} of each unit's size. */
    private static long[] runningStarts(int[][] units, java.util.function.IntUnaryOperator step) {
        long[] start = new long[units.length];
        long p = 0;
        for (int u = 0; u < units.length; u++) {
            start[u] = p;
            p += step.applyAsInt(units[u].length);
        }
        return start;
    }

    /** One past the largest position in {@code units}. */
    private static int covered(int[][] units) {
        int tokens = 0;
        for (int[] unit : units) {
            for (int t : unit) {
                tokens = Math.max(tokens, t + 1);
            }
        }
        return tokens;
    }
}
