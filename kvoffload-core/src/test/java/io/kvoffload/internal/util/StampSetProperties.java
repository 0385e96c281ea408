package io.kvoffload.internal.util;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

/** {@link StampSet} behaves as a set of ints that a clear empties, however it grows. */
class StampSetProperties {

    /** Each inner list is one step: cleared, then filled; a HashSet is the model. */
    @Property(tries = 200)
    void actsAsASetEmptiedByClear(@ForAll @Size(max = 8) List<@Size(max = 40) List<@IntRange(max = 3000) Integer>> steps,
            @ForAll @IntRange(max = 2000) int initial) {
        StampSet set = new StampSet(initial);
        Set<Integer> model = new HashSet<>();
        for (List<Integer> step : steps) {
            int before = set.capacity();
            boolean grew = set.clear(step.isEmpty() ? 0 : step.get(0));
            assertEquals(grew, set.capacity() > before);
            model.clear();
            for (int i : step) {
                assertEquals(model.add(i), set.add(i), "add " + i);
                assertTrue(set.capacity() > i);
            }
            for (int i = 0; i <= 3000; i++) {
                assertEquals(model.contains(i), set.contains(i), "contains " + i);
            }
        }
    }

    @Test
    void clearGrowsByAtLeastHalfAndANegativeCapacityIsRefused() {
        StampSet set = new StampSet();
        assertTrue(set.clear(10_000));
        int c = set.capacity();
        assertTrue(c >= 10_000);
        assertFalse(set.clear(c));
        assertTrue(set.clear(c + 1));
        assertTrue(set.capacity() >= c + c / 2, "grows geometrically: " + set.capacity());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new StampSet(-1));
        assertTrue(e.getMessage().contains("capacity"), e.getMessage());
    }
}
