package io.kvoffload.internal.swarm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.util.Int8Rounding;
import org.junit.jupiter.api.Test;

/**
 * {@link Int8Rows} copied from another's quantised rows ({@link Int8Rows#copyOf}, what a calibrating
 * opening does for a candidate whose summaries another already built) are those rows, and a copy that
 * could not be them is refused.
 */
class Int8RowsTest {

    private static Int8Rows staged(int blocks, Int8Rounding.Mode mode, float shift) {
        Int8Rows r = new Int8Rows(2, 3, blocks, mode);
        r.stage();
        for (int h = 0; h < 2; h++) {
            for (int i = 0; i < 3 * blocks; i++) {
                r.set(h, i, (float) Math.sin(1 + h * 31 + i) * (i % 3 + 1) + shift);
            }
        }
        return r;
    }

    @Test
    void aCopyIsTheQuantisedRowsItCopies() {
        Int8Rows built = staged(5, Int8Rounding.Mode.NEAREST, 0f);
        built.quantise();
        Int8Rows same = staged(5, Int8Rounding.Mode.NEAREST, 0f);
        same.quantise();
        Int8Rows copy = new Int8Rows(2, 3, 5, Int8Rounding.Mode.NEAREST); // never staged: a copy needs no floats
        copy.copyOf(built);
        for (int h = 0; h < 2; h++) {
            assertArrayEquals(same.row(h), copy.row(h));
            for (int j = 0; j < 3; j++) {
                assertEquals(same.scale(h, j), copy.scale(h, j));
                assertEquals(same.spread(h, j), copy.spread(h, j));
            }
        }
    }

    @Test
    void aCopyThatCouldNotBeTheRowsIsRefused() {
        Int8Rows built = staged(5, Int8Rounding.Mode.NEAREST, 0f);
        assertThrows(IllegalStateException.class, () -> new Int8Rows(2, 3, 5, Int8Rounding.Mode.NEAREST).copyOf(built),
                "from rows not yet quantised");
        built.quantise();
        assertThrows(IllegalStateException.class, () -> new Int8Rows(2, 3, 4, Int8Rounding.Mode.NEAREST).copyOf(built),
                "into other blocks");
        assertThrows(IllegalStateException.class, () -> new Int8Rows(2, 3, 5, Int8Rounding.Mode.UP).copyOf(built),
                "into another rounding");
        Int8Rows done = staged(5, Int8Rounding.Mode.NEAREST, 1f);
        done.quantise();
        assertThrows(IllegalStateException.class, () -> done.copyOf(built), "into rows already quantised");
        assertThrows(IllegalStateException.class, () -> new Int8Rows(2, 3, 5, Int8Rounding.Mode.NEAREST).quantise(),
                "quantised before anything was staged");
        assertThrows(IllegalStateException.class, done::quantise, "quantised twice");
        assertTrue(Int8Rows.sameShape(null, null));
        assertFalse(Int8Rows.sameShape(built, null));
    }
}
