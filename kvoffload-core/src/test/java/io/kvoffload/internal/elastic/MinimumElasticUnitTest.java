package io.kvoffload.internal.elastic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** SwiftCache's Eq. 8–9 by hand, and bad input refused by name. */
class MinimumElasticUnitTest {
    @Test
    void badSizesAreRefusedByName() {
        var e = assertThrows(IllegalArgumentException.class, () -> MinimumElasticUnit.of(64, 0));
        assertTrue(e.getMessage().contains("entryBytes[1] = 0"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> MinimumElasticUnit.of(MinimumElasticUnit.MAX_UNIT_BYTES - 1, MinimumElasticUnit.MAX_UNIT_BYTES - 3));
        assertTrue(e.getMessage().contains("exceeds"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> MinimumElasticUnit.of(4096).entriesPerUnit(3000));
        assertTrue(e.getMessage().contains("entryBytes = 3000"), e.getMessage());
        assertEquals(12288, MinimumElasticUnit.of(4096, 24).unitBytes());
        assertEquals(3, MinimumElasticUnit.of(4096).unitsFor(513, 16), "256 entries a unit");
    }
}
