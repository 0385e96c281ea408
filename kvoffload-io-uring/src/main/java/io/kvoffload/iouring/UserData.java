package io.kvoffload.iouring;

import io.kvoffload.internal.util.Checks;

/**
 * The 64-bit {@code user_data} a {@link Ring} puts in every SQE and gets back in its CQE: which
 * request of which batch the completion belongs to.
 *
 * <pre>
 *  63            48 47            32 31                             0
 * +----------------+----------------+--------------------------------+
 * |      slot      |   generation   |             index              |
 * +----------------+----------------+--------------------------------+
 * </pre>
 *
 * <ul>
 *   <li><b>slot</b> (16 bits, 0..{@value #MAX_SLOT}): the ring's batch slot the request's batch
 *       occupies ({@link IoUringConfig#MAX_BATCH_SLOTS} is bounded by this field);
 *   <li><b>generation</b> (16 bits, 0..{@value #MAX_GENERATION}): the slot's generation when the
 *       request was queued; a slot is reused by later batches, and a CQE whose generation differs
 *       from the slot's current one is stale and must not be credited to the new batch;
 *   <li><b>index</b> (32 bits, 0..{@value #MAX_INDEX}): the request's index in its batch. The top
 *       bit stays clear for every valid index, so {@link #index} of a corrupt value is negative
 *       and fails the ring's bounds check rather than aliasing a real request.
 * </ul>
 *
 * <p>The encoding lives in plain {@code long}s and static methods, so the submit and reap paths
 * allocate nothing. {@link #encode} checks its arguments (cheap compares, an exception only on a
 * bug); the decoders accept any {@code long}, since a CQE's value is checked against the ring's
 * slots by the caller.
 */
final class UserData {
    /** Largest batch slot: 16 bits. */
    static final int MAX_SLOT = 0xFFFF;
    /** Largest slot generation: 16 bits; generations wrap to 0 after it. */
    static final int MAX_GENERATION = 0xFFFF;
    /** Largest request index in a batch: 31 bits, so a valid index is never negative as an int. */
    static final int MAX_INDEX = Integer.MAX_VALUE;

    private static final int SLOT_SHIFT = 48;
    private static final int GENERATION_SHIFT = 32;
    private static final long INDEX_MASK = 0xFFFF_FFFFL;

    private UserData() {}

    /**
     * Packs a request's identity into {@code user_data}.
     *
     * @param slot the batch slot, 0..{@value #MAX_SLOT}
     * @param generation the slot's generation, 0..{@value #MAX_GENERATION}
     * @param index the request's index in the batch, 0..{@value #MAX_INDEX}
     * @throws IllegalArgumentException naming the field that is out of range
     */
    static long encode(int slot, int generation, int index) {
        Checks.inRange("slot", slot, 0, MAX_SLOT);
        Checks.inRange("generation", generation, 0, MAX_GENERATION);
        Checks.inRange("index", index, 0, MAX_INDEX);
        return ((long) slot << SLOT_SHIFT) | ((long) generation << GENERATION_SHIFT) | (index & INDEX_MASK);
    }

    /** The batch slot of {@code userData} (bits 63..48), 0..{@value #MAX_SLOT}. */
    static int slot(long userData) {
        return (int) (userData >>> SLOT_SHIFT);
    }

    /** The slot generation of {@code userData} (bits 47..32), 0..{@value #MAX_GENERATION}. */
    static int generation(long userData) {
        return (int) (userData >>> GENERATION_SHIFT) & MAX_GENERATION;
    }

    /** The request index of {@code userData} (bits 31..0); negative only for a value {@link #encode} never makes. */
    static int index(long userData) {
        return (int) userData;
    }

    /** The generation that follows {@code generation} in a slot, wrapping after {@value #MAX_GENERATION}. */
    static int nextGeneration(int generation) {
        return (generation + 1) & MAX_GENERATION;
    }
}
