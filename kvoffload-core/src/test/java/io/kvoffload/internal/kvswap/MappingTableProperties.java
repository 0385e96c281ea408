package io.kvoffload.internal.kvswap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/** The mapping table covers exactly the selected groups plus the rolling buffer, each once. */
class MappingTableProperties {

    @Property(tries = 300)
    void coversExactlyTheSelectedGroupsAndTheRollingBuffer(@ForAll long seed,
            @ForAll @IntRange(min = 1, max = 8) int groupSize, @ForAll @IntRange(min = 1, max = 3) int ringGroups,
            @ForAll @IntRange(min = 1, max = 24) int slots, @ForAll boolean withReuse) {
        SplittableRandom rnd = new SplittableRandom(seed);
        RollingBuffer rolling = new RollingBuffer(groupSize, ringGroups);
        rolling.reset(groupSize * (1 + rnd.nextInt(60)) + rnd.nextInt(groupSize));
        int extra = rnd.nextInt(rolling.capacity() - rolling.size() + 1);
        for (int i = 0; i < extra; i++) {
            rolling.append();
        }
        int offloaded = rolling.start() / groupSize;
        ReuseBuffer reuse = new ReuseBuffer(1, slots, rnd.nextBoolean() ? ReuseBuffer.Policy.FIFO
                : ReuseBuffer.Policy.REPLACE_UNREQUESTED);
        ReusePlan plan = reuse.newPlan();
        MappingTable table = new MappingTable(slots, ringGroups);
        for (int step = 0; step < 5; step++) {
            List<Integer> pool = new ArrayList<>();
            for (int g = 0; g < offloaded; g++) {
                pool.add(g);
            }
            java.util.Collections.shuffle(pool, new java.util.Random(rnd.nextLong()));
            int count = rnd.nextInt(Math.min(slots, offloaded) + 1);
            int[] groups = new int[count];
            for (int i = 0; i < count; i++) {
                groups[i] = pool.get(i);
            }
            if (withReuse) {
                reuse.request(0, groups, count, plan);
                table.build(plan, rolling);
                assertEquals(slots, table.poolSlots());
            } else {
                table.build(groups, count, rolling);
                assertEquals(count, table.poolSlots());
            }

            int rollingBlocks = (rolling.size() + groupSize - 1) / groupSize;
            assertEquals(count + rollingBlocks, table.blocks());
            assertEquals(count * groupSize + rolling.size(), table.tokens());
            assertEquals(groupSize, table.blockSize());
            List<Integer> expected = new ArrayList<>();
            for (int g : groups) {
                for (int t = g * groupSize; t < (g + 1) * groupSize; t++) {
                    expected.add(t);
                }
            }
            for (int t = rolling.start(); t < rolling.end(); t++) {
                expected.add(t);
            }
            int[] positions = new int[table.tokens()];
            assertEquals(table.tokens(), table.writePositions(positions, 0));
            Set<Integer> seen = new HashSet<>();
            for (int i = 0; i < positions.length; i++) {
                assertEquals(expected.get(i), positions[i], "logical token " + i);
                assertTrue(seen.add(positions[i]), "token " + positions[i] + " mapped twice");
            }
            int[] blockTable = new int[table.blocks()];
            table.writeBlockTable(blockTable, 0);
            Set<Integer> physical = new HashSet<>();
            for (int b = 0; b < table.blocks(); b++) {
                assertEquals(table.physicalBlock(b), blockTable[b]);
                assertTrue(physical.add(blockTable[b]), "physical block " + blockTable[b] + " used twice");
                if (b < count) {
                    MappingTable.Source want = !withReuse ? MappingTable.Source.LOADED
                            : plan.hit(b) ? MappingTable.Source.REUSED : MappingTable.Source.LOADED;
                    assertEquals(want, table.source(b));
                    assertEquals(withReuse ? plan.slot(b) : b, table.slot(b));
                    assertEquals(groups[b] * groupSize, table.firstToken(b));
                    assertEquals(groupSize, table.length(b));
                    assertTrue(blockTable[b] < table.poolSlots());
                } else {
                    assertEquals(MappingTable.Source.ROLLING, table.source(b));
                    assertEquals(rolling.blockOf(table.firstToken(b)), table.slot(b));
                    assertEquals(table.poolSlots() + table.slot(b), blockTable[b]);
                    assertTrue(table.length(b) >= 1 && table.length(b) <= groupSize);
                }
            }
        }
    }
}
