package io.kvoffload;

import io.kvoffload.testing.Layouts;
import io.kvoffload.strategy.kvswap.KvSwap;
import io.kvoffload.strategy.swarm.Swarm;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvoffload.strategy.kvswap.GroupOptions;
import io.kvoffload.strategy.swarm.ClusterOptions;
import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.storage.ClusterLayoutWriter;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Replacing a layer's layout never frees space the last commit still names: the committed extents
 * wait for the next commit, also when the layout being replaced is an uncommitted extension of the
 * committed one (online cluster maintenance, Swarm Eq. 9) that shares its extents.
 */
class RelayoutSafetyTest {
    static final KvShape SHAPE = StoreSafetyTest.SHAPE;

    @TempDir
    Path root;

    /** Appends tokens {@code [from, from + n)} of {@code w} (finite values, as the KVSwap SVD needs) to every layer. */
    private static void append(KvSequence s, SyntheticWorkload w, int from, int n) {
        s.appendTokens(new int[n]);
        TestEngines.appendKv(s, w, from, n);
    }

    private static long free(KvEngine e) {
        return e.stats().devices().stream().mapToLong(KvStats.Device::freeBytes).sum();
    }

    @Test
    void groupingAnExtendedClusterLayoutKeepsTheCommittedClustersUntilTheNextCommit() {
        List<Path> d = TestEngines.deviceDirs(root, 2);
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, 48).seed(3).build());
        try (KvEngine e = KvEngine.open(StoreSafetyTest.config(d).build())) {
            try (KvSequence s = e.createSequence("a", SHAPE)) {
                append(s, w, 0, 40);
                for (int l = 0; l < SHAPE.layers(); l++) {
                    Swarm.clusterLayer(s, l, CallerClusterLayoutTest.positional(40, 8), ClusterOptions.defaults());
                }
                s.commit();
            }
            long committedFree = free(e);
            try (KvSequence s = e.openSequenceForAppend("a")) {
                append(s, w, 40, 8);
                ClusterLayout old = Layouts.clusterLayout(s, 0);
                int[] tokens = {40, 41, 42, 43, 44, 45, 46, 47};
                int[] start = {0, 1, 2, 3, 4, 5, 6, 7, 8};
                int[] ids = new int[8]; // all join cluster 0
                ClusterLayout grown = ClusterLayoutWriter.append(Layouts.store(s), "a", Layouts.entryChecksum(s), 0, SHAPE, old,
                        tokens, start, ids, (p, k, v) -> s.read(0, p, k, v));
                Layouts.extendClusters(s, 0, grown);
                KvSwap.groupLayer(s, 0, GroupOptions.defaults().withGroupSize(8));
                // Closing without a commit frees what this handle wrote and nothing the commit names.
            }
            assertEquals(committedFree, free(e), "space the last commit names stays allocated");
            try (KvSequence s = e.openSequence("a"); Arena arena = Arena.ofConfined()) {
                MemorySegment k = arena.allocate(40L * SHAPE.halfEntryBytes());
                MemorySegment v = arena.allocate(40L * SHAPE.halfEntryBytes());
                MemorySegment ek = arena.allocate(40L * SHAPE.halfEntryBytes());
                MemorySegment ev = arena.allocate(40L * SHAPE.halfEntryBytes());
                for (int l = 0; l < SHAPE.layers(); l++) {
                    s.read(l, 0, 40, k, v);
                    w.writeKv(l, 0, 40, SHAPE.dtype(), ek, ev);
                    assertEquals(-1, k.mismatch(ek), "layer " + l + " keys");
                    assertEquals(-1, v.mismatch(ev), "layer " + l + " values");
                }
            }
        }
    }
}
