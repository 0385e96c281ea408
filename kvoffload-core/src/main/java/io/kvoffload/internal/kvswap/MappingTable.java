package io.kvoffload.internal.kvswap;

import io.kvoffload.internal.util.Checks;

/**
 * KVSwap's mapping table (§3.4.4): the view attention reads for one layer and step, described as a
 * paged-attention block table. Attention consumes KV entries from three places: reuse-buffer slots
 * that already held a selected group (hits), slots freshly loaded from the SSDs this step (misses),
 * and the rolling buffer's newest tokens. The table lists them in logical order, the selected
 * groups in request order and then the rolling buffer's blocks oldest first, with one block per
 * group of G tokens:
 *
 * <ul>
 * <li>{@link #source(int)}: {@link Source#REUSED}, {@link Source#LOADED} or {@link Source#ROLLING};</li>
 * <li>{@link #slot(int)}: the reuse slot (or, without a reuse buffer, the staging slot) of a group,
 *     or the rolling buffer's ring block;</li>
 * <li>{@link #physicalBlock(int)}: the same in one block-id space, pool slots first and then the
 *     rolling buffer's ring blocks, which is what a block table for a single KV pool holds;</li>
 * <li>{@link #firstToken(int)}, {@link #length(int)}: the token positions the block holds (every
 *     offloaded group is full; only the newest rolling block may be partial).</li>
 * </ul>
 *
 * <p>Pure data: {@code build} overwrites preallocated arrays and allocates nothing.
 */
public final class MappingTable {
    /** Where a block's K and V are. */
    public enum Source {
        /** A reuse-buffer slot that already held the group: no I/O this step. */
        REUSED,
        /** A slot the storage fills from the SSDs this step. */
        LOADED,
        /** The rolling buffer: the newest tokens, not offloaded yet. */
        ROLLING
    }

    private static final Source[] SOURCES = Source.values();

    private final int maxGroups;
    private final int maxRollingBlocks;
    private final byte[] source;
    private final int[] slot;
    private final int[] firstToken;
    private final int[] length;
    private int blocks;
    private int blockSize;
    private int poolSlots;
    private int tokens;

    /**
     * @param maxGroups most selected groups per step (M, or the reuse buffer's slots), 0..2^20
     * @param maxRollingBlocks the rolling buffer's capacity in groups, 1..1024
     */
    public MappingTable(int maxGroups, int maxRollingBlocks) {
        this.maxGroups = Checks.inRange("maxGroups", maxGroups, 0, 1 << 20);
        this.maxRollingBlocks = Checks.inRange("maxRollingBlocks", maxRollingBlocks, 1, 1024);
        int cap = maxGroups + maxRollingBlocks;
        this.source = new byte[cap];
        this.slot = new int[cap];
        this.firstToken = new int[cap];
        this.length = new int[cap];
    }

    /**
     * The view for a step with a reuse buffer: requested group {@code i} of {@code plan} becomes
     * block {@code i}, {@link Source#REUSED} on a hit and {@link Source#LOADED} on a miss, in slot
     * {@code plan.slot(i)}; the rolling buffer's blocks follow. Pool slots = the buffer's slots.
     *
     * @throws IllegalArgumentException if a group is not offloaded yet ({@code ≥ rolling.start() / G})
     */
    public MappingTable build(ReusePlan plan, RollingBuffer rolling) {
        Checks.notNull("plan", plan);
        check(plan.requested(), rolling);
        int g = rolling.groupSize();
        int limit = rolling.start() / g;
        for (int i = 0; i < plan.requested(); i++) {
            int group = plan.groups[i];
            checkGroup(i, group, limit);
        }
        for (int i = 0; i < plan.requested(); i++) {
            put(i, plan.hit[i] ? Source.REUSED : Source.LOADED, plan.slotOf[i], plan.groups[i] * g, g);
        }
        finish(plan.requested(), plan.slots(), rolling);
        return this;
    }

    /**
     * The view for a step without a reuse buffer: every selected group is read from the SSDs into
     * staging slot {@code i} ({@link Source#LOADED}); the rolling buffer's blocks follow. Pool slots =
     * {@code count}.
     *
     * @param groups offloaded group ids in {@code groups[0 .. count)}
     */
    public MappingTable build(int[] groups, int count, RollingBuffer rolling) {
        Checks.notNull("groups", groups);
        Checks.inRange("count", count, 0, groups.length);
        check(count, rolling);
        int g = rolling.groupSize();
        int limit = rolling.start() / g;
        for (int i = 0; i < count; i++) {
            checkGroup(i, groups[i], limit);
        }
        for (int i = 0; i < count; i++) {
            put(i, Source.LOADED, i, groups[i] * g, g);
        }
        finish(count, count, rolling);
        return this;
    }

    private void check(int count, RollingBuffer rolling) {
        Checks.notNull("rolling", rolling);
        Checks.inRange("groups requested", count, 0, maxGroups);
        Checks.inRange("rolling.capacityGroups()", rolling.capacityGroups(), 1, maxRollingBlocks);
    }

    private static void checkGroup(int i, int group, int limit) {
        if (group < 0 || group >= limit) {
            throw new IllegalArgumentException("group " + i + " = " + group + " is out of range; allowed: 0.."
                    + (limit - 1) + " (the groups offloaded below the rolling buffer)"
                    + (limit == 0 ? " (none: nothing is offloaded yet)" : ""));
        }
    }

    private void put(int b, Source s, int physical, int first, int len) {
        source[b] = (byte) s.ordinal();
        slot[b] = physical;
        firstToken[b] = first;
        length[b] = len;
    }

    private void finish(int groupBlocks, int pool, RollingBuffer rolling) {
        int g = rolling.groupSize();
        int b = groupBlocks;
        int total = groupBlocks * g;
        for (int first = rolling.start(); first < rolling.end(); first += g) {
            int len = Math.min(g, rolling.end() - first);
            put(b++, Source.ROLLING, rolling.blockOf(first), first, len);
            total += len;
        }
        blocks = b;
        blockSize = g;
        poolSlots = pool;
        tokens = total;
    }

    /** Logical blocks. */
    public int blocks() { return blocks; }
    /** Tokens per block (G). */
    public int blockSize() { return blockSize; }
    /** Tokens attention reads: the selected groups' plus the rolling buffer's. */
    public int tokens() { return tokens; }
    /** Reuse (or staging) slots before the rolling blocks in {@link #physicalBlock} numbering. */
    public int poolSlots() { return poolSlots; }

    public Source source(int b) {
        Checks.index("b", b, blocks);
        return SOURCES[source[b]];
    }

    /** The reuse or staging slot of a group block, the ring block of a rolling one. */
    public int slot(int b) {
        Checks.index("b", b, blocks);
        return slot[b];
    }

    /** One id space: {@code slot} for group blocks, {@code poolSlots() + ring block} for rolling ones. */
    public int physicalBlock(int b) {
        Checks.index("b", b, blocks);
        return source[b] == Source.ROLLING.ordinal() ? poolSlots + slot[b] : slot[b];
    }

    /** Position of the block's first token. */
    public int firstToken(int b) {
        Checks.index("b", b, blocks);
        return firstToken[b];
    }

    /** Tokens in the block: G, or fewer for the newest rolling block. */
    public int length(int b) {
        Checks.index("b", b, blocks);
        return length[b];
    }

    /** Writes {@link #physicalBlock} of every block into {@code dst[offset ..]}: the block table row. */
    public int writeBlockTable(int[] dst, int offset) {
        Checks.notNull("dst", dst);
        Checks.slice("dst", offset, blocks, dst.length);
        for (int b = 0; b < blocks; b++) {
            dst[offset + b] = source[b] == Source.ROLLING.ordinal() ? poolSlots + slot[b] : slot[b];
        }
        return blocks;
    }

    /** Writes the token position of every logical token, block after block, into {@code dst[offset ..]}. */
    public int writePositions(int[] dst, int offset) {
        Checks.notNull("dst", dst);
        Checks.slice("dst", offset, tokens, dst.length);
        int w = offset;
        for (int b = 0; b < blocks; b++) {
            for (int i = 0; i < length[b]; i++) {
                dst[w++] = firstToken[b] + i;
            }
        }
        return tokens;
    }

    @Override
    public String toString() {
        return "MappingTable{blocks=" + blocks + ", G=" + blockSize + ", tokens=" + tokens + "}";
    }
}
