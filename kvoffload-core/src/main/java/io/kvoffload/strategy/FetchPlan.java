package io.kvoffload.strategy;

import io.kvoffload.internal.storage.HeadShards;
import java.util.Arrays;

/**
 * The positions a {@link LayerSelector} chose for one step. The pipeline fills in the budget, hands
 * the plan to {@link LayerSelector#select}, then serves every position: from DRAM when the window or
 * the hot cache holds it, else from the SSDs through the bucket scheduler. Positions may repeat
 * (they are fetched once) and may include the sinks and the window (they cost nothing).
 *
 * <p><b>Per-head plans.</b> A position added with {@link #add(int, long)} is wanted by some KV heads
 * only (one token set per KV head, as heads attend different tokens). When the layout stores a
 * token's heads apart ({@link #headGroups()} {@code > 1}, under {@link io.kvoffload.Placement#HEAD_SHARDED})
 * the pipeline reads only the head groups that hold a wanted head, and the view's row holds those
 * ({@link io.kvoffload.KvView#headMask}); otherwise the whole entry is read and every head attends it.
 * A position added for all heads and for some is read for all.
 *
 * <p>One plan per pipeline slot, reused every step: {@link #add} allocates only when a step selects
 * more positions than any before.
 */
public final class FetchPlan {
    /** Every KV head wants the position: {@link #add(int)}. */
    public static final long ALL_HEADS = -1L;

    private int[] positions = new int[256];
    private long[] heads = new long[256];
    private boolean perHead;
    private int size;
    private int kvHeads = Long.SIZE;
    private int headGroups = 1;
    private int budget;
    private int tokens;
    private int layer;
    private final UnitReads units = new UnitReads();

    /** Starts a step; called by the pipeline. */
    public void begin(int layer, int tokens, int budget) {
        this.layer = layer;
        this.tokens = tokens;
        this.budget = budget;
        this.size = 0;
        this.perHead = false;
    }

    /**
     * The layer's heads: {@code kvHeads} KV heads stored as {@code headGroups} groups of
     * {@code kvHeads / headGroups} consecutive heads each; called by the pipeline before
     * {@link #begin}.
     */
    public void heads(int kvHeads, int headGroups) {
        if (kvHeads < 1 || headGroups < 1 || kvHeads % headGroups != 0) {
            throw new IllegalArgumentException("kvHeads = " + kvHeads + ", headGroups = " + headGroups
                    + "; allowed: kvHeads ≥ 1 divisible by headGroups ≥ 1");
        }
        this.kvHeads = kvHeads;
        this.headGroups = headGroups;
    }

    /**
     * How many groups of KV heads the layout stores each token as: 1 when a token's entry is read
     * whole (token striping), {@code S} under {@link io.kvoffload.Placement#HEAD_SHARDED} (group
     * {@code g} holds KV heads {@code [g·kvHeads/S, (g+1)·kvHeads/S)}). A position added for the heads
     * of {@code k} groups reads {@code k / S} of an entry; a per-head strategy counts its
     * {@link #budget()} in whole entries this way.
     */
    public int headGroups() {
        return headGroups;
    }

    /** KV heads of the layer. */
    public int kvHeads() {
        return kvHeads;
    }

    /**
     * The step's auxiliary reads: what {@link LayerSelector#planUnits} asked for, landed and verified
     * by the time {@link LayerSelector#select} runs.
     */
    public UnitReads units() {
        return units;
    }

    /** The layer this step reads. */
    public int layer() {
        return layer;
    }

    /** Tokens the layer holds: positions are in {@code [0, tokens())}. */
    public int tokens() {
        return tokens;
    }

    /**
     * Positions the strategy may add: the step's token budget ({@code ⌈sparsity × tokens⌉}, see
     * {@link io.kvoffload.DecodeOptions#sparsity()}) minus the sinks and window the pipeline
     * already attends; 0 when those fill it.
     */
    public int budget() {
        return budget;
    }

    /**
     * Adds a position.
     *
     * @throws IllegalArgumentException if {@code position} is outside {@code [0, tokens())}
     */
    public void add(int position) {
        if (position < 0 || position >= tokens) {
            throw new IllegalArgumentException("position = " + position + " is out of range for layer " + layer
                    + "; allowed: 0.." + (tokens - 1));
        }
        if (size == positions.length) {
            ensureCapacity(size + 1);
        }
        heads[size] = ALL_HEADS;
        positions[size++] = position;
    }

    /**
     * Adds a position that only the KV heads of {@code kvHeadMask} attend (bit {@code h} for KV head
     * {@code h}; {@link #ALL_HEADS} for every head, as {@link #add(int)}).
     *
     * @throws IllegalArgumentException if {@code position} is outside {@code [0, tokens())}, or the
     *     mask names no KV head of the layer or one it does not have, or the layer has more than 64
     *     KV heads (then only {@link #ALL_HEADS})
     */
    public void add(int position, long kvHeadMask) {
        checkMask(kvHeadMask, position);
        add(position);
        if (kvHeadMask != ALL_HEADS) {
            heads[size - 1] = kvHeadMask;
            perHead = true;
        }
    }

    /**
     * Adds positions {@code [from, to)}, each for the KV heads of {@code kvHeadMask} as {@link
     * #add(int, long)} does: a block strategy's run of consecutive tokens, checked once.
     *
     * @throws IllegalArgumentException if the range is not within {@code [0, tokens()]} or is reversed,
     *     or the mask is not one {@link #add(int, long)} takes
     */
    public void addRange(int from, int to, long kvHeadMask) {
        if (from < 0 || to > tokens || from > to) {
            throw new IllegalArgumentException("positions [" + from + ", " + to + ") are out of range for layer " + layer
                    + "; allowed: a range within [0, " + tokens + ")");
        }
        checkMask(kvHeadMask, from);
        int at = size, n = to - from;
        ensureCapacity(at + n);
        int[] p = positions; // locals and one counted loop: the JIT vectorises both stores
        long[] h = heads;
        for (int i = 0; i < n; i++) {
            p[at + i] = from + i;
            h[at + i] = kvHeadMask;
        }
        size = at + n;
        perHead |= kvHeadMask != ALL_HEADS && n > 0;
    }

    private void checkMask(long kvHeadMask, int position) {
        if (kvHeadMask == ALL_HEADS) {
            return;
        }
        if (kvHeads > Long.SIZE) {
            throw new IllegalArgumentException("kvHeadMask = 0x" + Long.toHexString(kvHeadMask) + " for position "
                    + position + " on a layer of " + kvHeads + " KV heads; allowed: ALL_HEADS (per-head positions"
                    + " need at most " + Long.SIZE + " KV heads)");
        }
        long valid = HeadShards.headBits(0, kvHeads);
        if (kvHeadMask == 0 || (kvHeadMask & ~valid) != 0) {
            throw new IllegalArgumentException("kvHeadMask = 0x" + Long.toHexString(kvHeadMask) + " for position "
                    + position + "; allowed: a non-empty set of the layer's KV heads 0.." + (kvHeads - 1)
                    + " (bits of 0x" + Long.toHexString(valid) + "), or ALL_HEADS");
        }
    }

    /** Adds {@code positions[0..count)} (each checked as {@link #add} does). */
    public void addAll(int[] positions, int count) {
        if (count < 0 || count > positions.length) {
            throw new IllegalArgumentException("count = " + count + " is out of range; allowed: 0.." + positions.length);
        }
        ensureCapacity(size + count);
        for (int i = 0; i < count; i++) {
            add(positions[i]);
        }
    }

    /** Grows the plan's buffer so {@code n} positions fit without allocating. */
    public void ensureCapacity(int n) {
        if (n > positions.length) {
            positions = Arrays.copyOf(positions, Math.max(n, positions.length * 2));
            heads = Arrays.copyOf(heads, positions.length);
        }
    }

    /** Positions added this step (repeats counted). */
    public int size() {
        return size;
    }

    /** The {@code i}-th position added. */
    public int position(int i) {
        if (i < 0 || i >= size) {
            throw new IndexOutOfBoundsException("i = " + i + "; allowed: 0.." + (size - 1));
        }
        return positions[i];
    }

    /** The KV heads that want the {@code i}-th position: {@link #ALL_HEADS} unless it was added with {@link #add(int, long)}. */
    public long kvHeadMask(int i) {
        if (i < 0 || i >= size) {
            throw new IndexOutOfBoundsException("i = " + i + "; allowed: 0.." + (size - 1));
        }
        return heads[i];
    }

    /** Whether some position this step was added for some KV heads only. */
    public boolean perHead() {
        return perHead;
    }
}
