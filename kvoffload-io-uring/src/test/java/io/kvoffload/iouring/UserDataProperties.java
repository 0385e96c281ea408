package io.kvoffload.iouring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Negative;

/** {@link UserData}: every valid (slot, generation, index) survives the round trip; the rest is refused. */
class UserDataProperties {

    @Property
    void roundTripsEveryValidField(
            @ForAll @IntRange(min = 0, max = UserData.MAX_SLOT) int slot,
            @ForAll @IntRange(min = 0, max = UserData.MAX_GENERATION) int generation,
            @ForAll @IntRange(min = 0, max = UserData.MAX_INDEX) int index) {
        long userData = UserData.encode(slot, generation, index);
        assertEquals(slot, UserData.slot(userData));
        assertEquals(generation, UserData.generation(userData));
        assertEquals(index, UserData.index(userData));
    }

    @Property
    void distinctFieldsGiveDistinctValues(
            @ForAll @IntRange(min = 0, max = UserData.MAX_SLOT) int slot,
            @ForAll @IntRange(min = 0, max = UserData.MAX_GENERATION) int generation,
            @ForAll @IntRange(min = 0, max = UserData.MAX_INDEX) int index,
            @ForAll @IntRange(min = 0, max = UserData.MAX_GENERATION) int otherGeneration) {
        // A stale CQE (same slot and index, older generation) must never read as the current one.
        long a = UserData.encode(slot, generation, index);
        long b = UserData.encode(slot, otherGeneration, index);
        assertEquals(generation == otherGeneration, a == b);
    }

    @Property
    void slotOutOfRangeIsRefusedNamingTheSlot(@ForAll("outsideSixteenBits") int slot) {
        var e = assertThrows(IllegalArgumentException.class, () -> UserData.encode(slot, 0, 0));
        assertTrue(e.getMessage().startsWith("slot = " + slot), e.getMessage());
    }

    @Property
    void generationOutOfRangeIsRefusedNamingTheGeneration(@ForAll("outsideSixteenBits") int generation) {
        var e = assertThrows(IllegalArgumentException.class, () -> UserData.encode(0, generation, 0));
        assertTrue(e.getMessage().startsWith("generation = " + generation), e.getMessage());
    }

    /** Ints that do not fit the 16-bit slot and generation fields: negative or above 0xFFFF. */
    @Provide
    Arbitrary<Integer> outsideSixteenBits() {
        return Arbitraries.oneOf(
                Arbitraries.integers().lessOrEqual(-1),
                Arbitraries.integers().greaterOrEqual(0xFFFF + 1),
                Arbitraries.of(-1, 0x1_0000, Integer.MIN_VALUE, Integer.MAX_VALUE));
    }

    @Property
    void negativeIndexIsRefusedNamingTheIndex(@ForAll @Negative int index) {
        var e = assertThrows(IllegalArgumentException.class, () -> UserData.encode(0, 0, index));
        assertTrue(e.getMessage().startsWith("index = " + index), e.getMessage());
    }

    @Property
    void nextGenerationStaysInRangeAndWraps(@ForAll @IntRange(min = 0, max = UserData.MAX_GENERATION) int g) {
        int next = UserData.nextGeneration(g);
        assertEquals(g == UserData.MAX_GENERATION ? 0 : g + 1, next);
    }

    @Example
    void bitLayoutIsSlotGenerationIndexFromTheTop() {
        assertEquals(0x0001_0002_0000_0003L, UserData.encode(1, 2, 3));
        assertEquals(0xFFFF_FFFF_7FFF_FFFFL,
                UserData.encode(UserData.MAX_SLOT, UserData.MAX_GENERATION, UserData.MAX_INDEX));
        assertEquals(UserData.MAX_SLOT + 1, IoUringConfig.MAX_BATCH_SLOTS);
    }

    @Example
    void corruptValueDecodesToANegativeIndex() {
        // Ring#complete rejects it by its bounds check instead of crediting a real request.
        assertTrue(UserData.index(0x0000_0000_8000_0000L) < 0);
    }
}
