package io.kvoffload.internal.swarm;

import io.kvoffload.internal.baseline.Layers;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.internal.util.TopK;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import org.junit.jupiter.api.Test;

class SwarmSelectorTest {
    private static final KvShape SHAPE = new KvShape(1, 6, 2, 16, DType.BF16);

    @Test
    void takesWholeClustersBestFirstAfterTheSinksAndWindow() {
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, 3000).seed(7).build());
        DenseLayerKv kv = DenseLayerKv.materialize(w.layer(0), false);
        List<float[]> profile = new ArrayList<>();
        for (int s = 0; s < 40; s++) {
            profile.add(w.query(0, s));
        }
        ClusteringConfig config = ClusteringConfig.defaults().withRadius(ClusterRadius.fixed(0.6)).withParallelism(1);
        try (Arena arena = Arena.ofConfined()) {
            SwarmSelector s = SwarmSelector.build(kv, 6, profile, 0.1, config, 4, 64, arena);
            MedoidIndex index = s.index();
            Clustering cl = index.clustering();
            assertTrue(cl.coActivationClusters() > 0, "the profile formed co-activation clusters");
            float[] q = w.query(0, 50);
            float[] mine = new float[cl.clusterCount()];
            float[] theirs = new float[cl.clusterCount()];
            s.score(q, mine);
            index.score(q, theirs);
            assertArrayEquals(theirs, mine, 0f); // the same arithmetic, bit for bit

            int budget = 400;
            int[] sel = Layers.select(s, q, budget);
            BitSet expected = new BitSet();
            expected.set(0, 4);
            expected.set(3000 - 64, 3000);
            for (int c : TopK.ranked(theirs, cl.clusterCount())) {
                if (expected.cardinality() >= budget) {
                    break;
                }
                for (int m : cl.members(c)) {
                    expected.set(m);
                }
            }
            BitSet actual = new BitSet();
            for (int t : sel) {
                actual.set(t);
            }
            assertEquals(sel.length, actual.cardinality(), "distinct");
            assertEquals(expected, actual);
            assertTrue(sel.length >= budget && sel.length <= s.maxSelected(budget));
            assertArrayEquals(new int[] {0, 1, 2, 3}, Arrays.copyOf(sel, 4));
            assertEquals(index.memoryBytes(), s.indexBytes());
            assertEquals(index.keyBytes(), s.lastScoredBytes());

            int[] pinnedOnly = Layers.select(s, q, 10); // the pinned tokens exceed the budget
            assertEquals(68, pinnedOnly.length);
            assertEquals(0, s.lastScoredBytes());
        }
    }
}
