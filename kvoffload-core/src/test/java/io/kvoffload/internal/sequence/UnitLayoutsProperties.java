package io.kvoffload.internal.sequence;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.storage.ClusterPlan;
import io.kvoffload.internal.swarm.ClusterPlacement;
import io.kvoffload.internal.swarm.Clustering;
import io.kvoffload.strategy.SelectionStrategy;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/** The generic unit layout's placement and argument checks. */
class UnitLayoutsProperties {

    /**
     * Units placed round robin land where Eq. 7 puts clusters of the same sizes, so the default page
     * layout is byte-for-byte the one it was when pages went through Swarm's cluster writer.
     */
    @Property(tries = 200)
    void roundRobinPlacesUnitsAsEq7PlacesClusters(@ForAll @IntRange(min = 1, max = 300) int tokens,
            @ForAll @IntRange(min = 1, max = 40) int unitTokens, @ForAll @IntRange(min = 1, max = 9) int devices) {
        int[][] units = SelectionStrategy.pages(tokens, unitTokens);
        assertEquals(tokens, UnitLayouts.checkUnits("units", tokens, units));
        ClusterPlan plan = UnitLayouts.roundRobin(units, devices);
        int[] offsets = new int[units.length + 1];
        int[] medoids = new int[units.length];
        for (int u = 0; u < units.length; u++) {
            offsets[u + 1] = offsets[u] + units[u].length;
            medoids[u] = units[u][0];
        }
        int[] members = new int[tokens];
        for (int t = 0; t < tokens; t++) {
            members[t] = t;
        }
        ClusterPlacement eq7 = ClusterPlacement.of(Clustering.restore(tokens, offsets, members, medoids, units.length,
                0.35), devices);
        assertEquals(tokens, plan.clusteredTokens());
        assertEquals(units.length, plan.clusterCount());
        int placed = 0;
        for (int u = 0; u < units.length; u++) {
            assertEquals(units[u][0], plan.medoid(u));
            for (int d = 0; d < devices; d++) {
                assertArrayEquals(eq7.entriesOn(u, d), plan.tokensOn(u, d), "unit " + u + " on device " + d);
                placed += plan.tokensOn(u, d).length;
            }
        }
        assertEquals(tokens, placed, "every member placed once");
    }

    /**
     * Placed in runs, every member lands once; a unit's share of a device is whole runs of consecutive
     * members (only the unit's last run shorter), its runs go to consecutive devices, and the next unit
     * starts on the device after its last run's.
     */
    @Property(tries = 300)
    void runsKeepConsecutiveMembersTogetherAndContinueTheRoundRobin(@ForAll @IntRange(min = 1, max = 300) int tokens,
            @ForAll @IntRange(min = 1, max = 40) int unitTokens, @ForAll @IntRange(min = 1, max = 9) int devices,
            @ForAll @IntRange(min = 1, max = 16) int run) {
        int[][] units = SelectionStrategy.pages(tokens, unitTokens);
        ClusterPlan plan = UnitLayouts.roundRobin(units, devices, run);
        int[] deviceOf = new int[tokens];
        java.util.Arrays.fill(deviceOf, -1);
        for (int u = 0; u < units.length; u++) {
            for (int d = 0; d < devices; d++) {
                int[] on = plan.tokensOn(u, d);
                for (int i = 0; i < on.length; i++) {
                    assertEquals(-1, deviceOf[on[i]], "token " + on[i] + " placed twice");
                    deviceOf[on[i]] = d;
                    if (i > 0 && on[i] != on[i - 1] + 1) { // a new run starts at a run boundary of the unit
                        assertEquals(0, (on[i] - units[u][0]) % run, "unit " + u + " device " + d);
                    }
                }
            }
        }
        int expectedStart = 0;
        for (int[] u : units) {
            for (int i = 0; i < u.length; i++) {
                assertEquals((expectedStart + i / run) % devices, deviceOf[u[i]], "member " + i + " of the unit at " + u[0]);
            }
            expectedStart = (expectedStart + (u.length + run - 1) / run) % devices;
        }
    }

    /**
     * Packed runs: every member once, member {@code i} of a unit whose predecessors hold {@code P}
     * members on device {@code floor((P + i) / run) mod devices}; pages whose size divides the run are
     * each whole on one device.
     */
    @Property(tries = 300)
    void packedRunsContinueAcrossUnitsAndKeepSmallPagesWhole(@ForAll @IntRange(min = 1, max = 300) int tokens,
            @ForAll @IntRange(min = 1, max = 16) int pageTokens, @ForAll @IntRange(min = 1, max = 9) int devices,
            @ForAll @IntRange(min = 1, max = 4) int pagesPerRun) {
        int[][] units = SelectionStrategy.pages(tokens, pageTokens);
        int run = pageTokens * pagesPerRun;
        ClusterPlan plan = UnitLayouts.packed(units, devices, run);
        int[] deviceOf = new int[tokens];
        java.util.Arrays.fill(deviceOf, -1);
        for (int u = 0; u < units.length; u++) {
            int placed = 0;
            for (int d = 0; d < devices; d++) {
                int[] on = plan.tokensOn(u, d);
                placed += on.length;
                assertTrue(on.length == 0 || on.length == units[u].length, "page " + u + " split over devices");
                for (int t : on) {
                    assertEquals(-1, deviceOf[t], "token " + t + " placed twice");
                    deviceOf[t] = d;
                }
            }
            assertEquals(units[u].length, placed, "page " + u);
        }
        for (int t = 0; t < tokens; t++) {
            assertEquals(t / run % devices, deviceOf[t], "token " + t);
        }
    }

    @Example
    void aRunFillsOneAlignedRead() {
        assertEquals(8, UnitLayouts.run(512, 4096));
        assertEquals(4, UnitLayouts.run(1024, 4096));
        assertEquals(1, UnitLayouts.run(3072, 4096));
        assertEquals(1, UnitLayouts.run(4096, 4096));
        assertEquals(1, UnitLayouts.run(65536, 4096));
        assertMessage(() -> UnitLayouts.run(0, 4096), "entryBytes", "0");
        assertMessage(() -> UnitLayouts.roundRobin(new int[][] {{0}}, 2, 0), "run", "0");
    }

    @Example
    void badUnitsAreRejectedNamingTheArgument() {
        assertMessage(() -> UnitLayouts.checkUnits("units", 4, new int[0][]), "units.length = 0", "1..");
        assertMessage(() -> UnitLayouts.checkUnits("units", 4, new int[][] {{0, 1}, {}}), "units[1] is empty");
        assertMessage(() -> UnitLayouts.checkUnits("units", 4, new int[][] {{0, 1}, null}), "units[1] is null");
        assertMessage(() -> UnitLayouts.checkUnits("units", 4, new int[][] {{0, 1}, {2, 4}}), "units[1][1] = 4",
                "allowed: 0..3");
        assertMessage(() -> UnitLayouts.checkUnits("units", 4, new int[][] {{0, 1}, {2, 2, 3}}),
                "units[1][1] = 2 repeats a member of unit 1");
        assertMessage(() -> UnitLayouts.checkUnits("units", 4, new int[][] {{0, 1}, {3}}), "position 2 is in no unit");
        // a replica (a position in two units) is allowed
        assertEquals(5, UnitLayouts.checkUnits("units", 4, new int[][] {{0, 1}, {1, 2, 3}}));
    }

    private static void assertMessage(Runnable r, String... parts) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, r::run);
        for (String p : parts) {
            assertTrue(e.getMessage().contains(p), () -> "message '" + e.getMessage() + "' lacks '" + p + "'");
        }
    }
}
