package io.kvoffload.internal.kvswap;

import io.kvoffload.internal.select.TokenSelector;
import io.kvoffload.internal.util.Checks;

/**
 * KVSwap's rolling buffer of one layer (§3.4.1, Fig. 7a): the newest tokens stay in DRAM until G of
 * them form a group, because a group's importance can only be predicted once it is complete. They
 * always take part in attention. Once a full group has been written to the SSDs and its keys
 * appended to the {@link CompressedKCache}, {@link #releaseGroup()} hands it over to the predictor.
 *
 * <p>This class is the bookkeeping, not the bytes: the buffer holds tokens {@code [start(), end())},
 * {@code start()} always a multiple of G, in a ring of {@code capacityGroups × G} token slots. Token
 * {@code t} sits at ring slot {@link #slotOf(int) t mod capacity}, so each group occupies
 * {@code G} contiguous slots, ring block {@link #blockOf(int) (t / G) mod capacityGroups}: the
 * layout a paged-attention block table addresses ({@link MappingTable}). The artifact keeps one
 * block ({@code capacityGroups = 1}) and flushes the full group before the next token arrives; a
 * second block lets the flush run in the background.
 *
 * <p>Allocation-free; one thread at a time.
 */
public final class RollingBuffer {
    private final int groupSize;
    private final int capacityGroups;
    private final int capacity;
    private int start;
    private int end;

    /**
     * An empty buffer at position 0.
     *
     * @param groupSize G, 1..4096
     * @param capacityGroups ring size in groups, 1..1024
     */
    public RollingBuffer(int groupSize, int capacityGroups) {
        this.groupSize = Checks.inRange("groupSize", groupSize, 1, 4096);
        this.capacityGroups = Checks.inRange("capacityGroups", capacityGroups, 1, 1024);
        this.capacity = groupSize * capacityGroups;
    }

    /**
     * Positions the buffer after a prefill of {@code totalTokens}: the full groups are offloaded, the
     * last {@code totalTokens mod G} tokens stay here.
     */
    public void reset(int totalTokens) {
        Checks.inRange("totalTokens", totalTokens, 0, 1 << 30);
        this.start = totalTokens / groupSize * groupSize;
        this.end = totalTokens;
    }

    /** G. */
    public int groupSize() { return groupSize; }
    /** Ring size in groups. */
    public int capacityGroups() { return capacityGroups; }
    /** Ring size in tokens. */
    public int capacity() { return capacity; }
    /** First token held; every token below it is offloaded. A multiple of G. */
    public int start() { return start; }
    /** One past the newest token: the sequence length. */
    public int end() { return end; }
    /** Tokens held. */
    public int size() { return end - start; }
    /** Complete groups held (waiting to be offloaded). */
    public int fullGroups() { return (end - start) / groupSize; }

    /**
     * Adds the next token (position {@link #end()}) and returns its ring slot.
     *
     * @throws IllegalStateException if the ring is full: release a group first
     */
    public int append() {
        if (end - start == capacity) {
            throw new IllegalStateException("the rolling buffer is full (" + capacity + " tokens from " + start
                    + "); offload group " + start / groupSize + " and call releaseGroup() first");
        }
        if (end == 1 << 30) {
            throw new IllegalStateException("sequence length " + end + " is at the maximum 2^30");
        }
        return slotOf(end++);
    }

    /** The oldest complete group, the next to offload. */
    public int oldestGroup() {
        if (fullGroups() == 0) {
            throw new IllegalStateException("no complete group: " + size() + " of " + groupSize + " tokens held");
        }
        return start / groupSize;
    }

    /** Drops the oldest complete group once it is on the SSDs and in the compressed K cache. */
    public void releaseGroup() {
        oldestGroup();
        start += groupSize;
    }

    /** Ring slot of a held token: {@code token mod capacity}. */
    public int slotOf(int token) {
        checkHeld(token);
        return token % capacity;
    }

    /** Ring block (group-sized) of a held token: {@code (token / G) mod capacityGroups}. */
    public int blockOf(int token) {
        checkHeld(token);
        return (token / groupSize) % capacityGroups;
    }

    private void checkHeld(int token) {
        if (token < start || token >= end) {
            throw new IllegalArgumentException("token = " + token + " is out of range; allowed: " + start + ".." + (end - 1)
                    + (start == end ? " (none: the buffer is empty)" : ""));
        }
    }

    /** Writes the held positions, ascending, into {@code out[offset ..]}; returns how many. */
    public int positions(int[] out, int offset) {
        Checks.notNull("out", out);
        Checks.slice("out", offset, size(), out.length);
        for (int t = start; t < end; t++) {
            out[offset++] = t;
        }
        return end - start;
    }

    /**
     * Adds the held tokens to a selection: drops the entries of {@code positions[0 .. count)} that
     * are not offloaded yet ({@code ≥ start()}, they are here anyway), keeps the order of the rest,
     * and appends {@code start() .. end() − 1}. Returns the new count.
     *
     * @param positions room for at least {@code count + size()} entries
     */
    public int addTo(int[] positions, int count) {
        Checks.notNull("positions", positions);
        Checks.inRange("count", count, 0, positions.length);
        int w = 0;
        for (int i = 0; i < count; i++) {
            int t = positions[i];
            if (t < start) {
                positions[w++] = t;
            }
        }
        if (positions.length - w < size()) {
            throw new IllegalArgumentException("positions.length = " + positions.length
                    + " is too small; allowed: at least " + (w + size()));
        }
        for (int t = start; t < end; t++) {
            positions[w++] = t;
        }
        return w;
    }

    /**
     * A selector that asks {@code inner} and adds this buffer's tokens ({@link #addTo}): what
     * attention reads at each step. Its budget is the inner selector's, plus up to
     * {@link #capacity()} rolling tokens.
     */
    public TokenSelector around(TokenSelector inner) {
        Checks.notNull("inner", inner);
        return new TokenSelector() {
            @Override
            public String name() {
                return inner.name() + "+rolling";
            }

            @Override
            public int select(float[] query, int budgetTokens, int[] out) {
                int n = inner.select(query, budgetTokens, out);
                return addTo(out, n);
            }

            @Override
            public int maxSelected(int budgetTokens) {
                return (int) Math.min(Integer.MAX_VALUE - 8, (long) inner.maxSelected(budgetTokens) + capacity);
            }

            @Override
            public long indexBytes() {
                return inner.indexBytes();
            }
        };
    }

    @Override
    public String toString() {
        return "RollingBuffer{G=" + groupSize + ", capacity=" + capacity + ", tokens=[" + start + ", " + end + ")}";
    }
}
