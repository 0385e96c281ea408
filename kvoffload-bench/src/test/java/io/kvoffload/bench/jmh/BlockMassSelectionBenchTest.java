package io.kvoffload.bench.jmh;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import io.kvoffload.KvShape;
import io.kvoffload.strategy.Strategies;
import io.kvoffload.workload.Workload;
import io.kvoffload.workload.WorkloadFamily;
import org.junit.jupiter.api.Test;
import org.openjdk.jmh.annotations.Param;

/**
 * {@link BlockMassSelectionBench}'s set-up outside JMH: a multi-query shape's step selects within the
 * budget, a run steps through consecutive decoding queries, its defaults measure the library's default
 * strategy, and a malformed shape is refused by name.
 */
class BlockMassSelectionBenchTest {

    @Test
    void aMultiQueryLayerSelectsWithinItsBudget() {
        BlockMassSelectionBench.Mass m = mass(8192, 1, "71:1:64", 0);
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
    void aRunStepsThroughConsecutiveDecodingQueriesEachTurnedOnePositionFurther() {
        BlockMassSelectionBench.Mass m = mass(4096, 8, "32:8:128", 1);
        try {
            assertEquals(BlockMassSelectionBench.STEPS, m.queries.length);
            Workload w = WorkloadFamily.byName("mixed-heads").create(BlockMassSelectionBench.shape("32:8:128"), 4096,
                    BlockMassSelectionBench.SEED);
            for (int k : new int[] {0, 1, BlockMassSelectionBench.STEPS - 1}) {
                float[] q = w.query(0, 256 + k);
                BlockMassSelectionBench.turn(q, 128, k);
                assertArrayEquals(q, m.queries[k], "query " + k);
            }
            for (int step = 0; step < BlockMassSelectionBench.STEPS; step++) {
                m.step();
            }
            assertEquals(0, m.next, "after a whole run the next step starts again at the first query");
        } finally {
            m.tearDown();
        }
    }

    @Test
    void theDefaultsMeasureTheDefaultStrategyPerHeadAndStripedOnTurnedQueries() throws Exception {
        Class<?> mass = BlockMassSelectionBench.Mass.class;
        assertArrayEquals(new String[] {Strategies.defaultStrategy().name()},
                mass.getDeclaredField("strategy").getAnnotation(Param.class).value());
        assertArrayEquals(new String[] {"8", "1"}, mass.getDeclaredField("headGroups").getAnnotation(Param.class).value());
        assertArrayEquals(new String[] {"1"}, mass.getDeclaredField("turn").getAnnotation(Param.class).value());
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

    /** The default strategy's {@link BlockMassSelectionBench.Mass} state over {@code mixed-heads} keys, set up. */
    private static BlockMassSelectionBench.Mass mass(int tokens, int headGroups, String shape, int turn) {
        BlockMassSelectionBench.Mass m = new BlockMassSelectionBench.Mass();
        m.tokens = tokens;
        m.strategy = "mass-auto";
        m.keys = "mixed-heads";
        m.headGroups = headGroups;
        m.shape = shape;
        m.turn = turn;
        m.setup();
        return m;
    }
}
