package io.kvoffload.internal.kvswap;

import static io.kvoffload.internal.kvswap.KvSwapFixtures.assertMessage;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class MappingTableTest {

    @Test
    void handBuiltStep() {
        // G = 4, 26 tokens: groups 0..5 offloaded, tokens 24 and 25 in the rolling buffer.
        RollingBuffer rolling = new RollingBuffer(4, 1);
        rolling.reset(26);
        ReuseBuffer reuse = new ReuseBuffer(1, 3, ReuseBuffer.Policy.FIFO);
        ReusePlan plan = reuse.newPlan();
        reuse.request(0, new int[] {5, 1}, 2, plan); // slots 0, 1
        reuse.request(0, new int[] {1, 3}, 2, plan); // 1 hit in slot 1, 3 loaded into slot 2
        MappingTable t = new MappingTable(3, 1).build(plan, rolling);
        assertEquals(3, t.blocks());
        assertEquals(MappingTable.Source.REUSED, t.source(0));
        assertEquals(1, t.slot(0));
        assertEquals(4, t.firstToken(0));
        assertEquals(MappingTable.Source.LOADED, t.source(1));
        assertEquals(2, t.slot(1));
        assertEquals(12, t.firstToken(1));
        assertEquals(MappingTable.Source.ROLLING, t.source(2));
        assertEquals(0, t.slot(2));
        assertEquals(3, t.physicalBlock(2), "after the 3 reuse slots");
        assertEquals(2, t.length(2));
        assertEquals(10, t.tokens());
        int[] table = new int[3];
        t.writeBlockTable(table, 0);
        assertArrayEquals(new int[] {1, 2, 3}, table);
        int[] positions = new int[10];
        t.writePositions(positions, 0);
        assertArrayEquals(new int[] {4, 5, 6, 7, 12, 13, 14, 15, 24, 25}, positions);

        // Without a reuse buffer every group goes to its staging slot.
        t.build(new int[] {2, 0}, 2, rolling);
        assertEquals(MappingTable.Source.LOADED, t.source(0));
        assertEquals(0, t.slot(0));
        assertEquals(1, t.slot(1));
        assertEquals(2, t.physicalBlock(2));
    }

    @Test
    void rejectsGroupsThatAreNotOffloaded() {
        RollingBuffer rolling = new RollingBuffer(4, 1);
        rolling.reset(26);
        MappingTable t = new MappingTable(3, 1);
        assertMessage(() -> t.build(new int[] {6}, 1, rolling), "group 0 = 6", "allowed: 0..5");
        assertMessage(() -> t.build(new int[] {1, 2, 3, 4}, 4, rolling), "groups requested = 4", "allowed: 0..3");
        assertMessage(() -> t.build(new int[1], 1, new RollingBuffer(4, 2)), "rolling.capacityGroups() = 2",
                "allowed: 1..1");
        RollingBuffer empty = new RollingBuffer(4, 1);
        assertMessage(() -> t.build(new int[] {0}, 1, empty), "group 0 = 0", "nothing is offloaded yet");
        assertMessage(() -> t.source(5), "b = 5");
    }
}
