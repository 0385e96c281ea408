package io.kvoffload.bench.jmh;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.KvShape;
import org.junit.jupiter.api.Test;

/**
 * {@link BlockMassSelectionBench}'s set-up outside JMH: a multi-query shape's step selects within the
 * budget, and a malformed shape is refused by name.
 */
class BlockMassSelectionBenchTest {

    @Test
    void aMultiQueryLayerSelectsWithinItsBudget() {
        BlockMassSelectionBench.Mass m = new BlockMassSelectionBench.Mass();
        m.tokens = 8192;
        m.strategy = "mass-auto";
        m.keys = "mixed-heads";
        m.headGroups = 1;
        m.shape = "71:1:64";
        m.setup();
        try {
            for (int step = 0; step < 3; step++) {
                int rows = m.step();
                assertTrue(rows > 0 && rows <= m.budget, "rows " + rows + " within the budget " + m.budget);
            }
        } finally {
            m.tearDown();
        }
    }

    @Test
    void aShapeIsQueryHeadsKvHeadsAndHeadDim() {
        KvShape s = BlockMassSelectionBench.shape("71:1:64");
        assertEquals(71, s.queryHeads());
        assertEquals(1, s.kvHeads());
        assertEquals(64, s.headDim());
        for (String bad : new String[] {"32:8", "32:x:128", "32:8:128:1"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> BlockMassSelectionBench.shape(bad));
            assertTrue(e.getMessage().contains("shape = '" + bad + "'") && e.getMessage().contains("queryHeads:kvHeads:headDim"),
                    e.getMessage());
        }
    }
}
