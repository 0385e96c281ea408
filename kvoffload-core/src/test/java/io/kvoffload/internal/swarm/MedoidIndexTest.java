package io.kvoffload.internal.swarm;

import static io.kvoffload.internal.swarm.ProfileTest.assertMessage;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.workload.DenseLayerKv;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class MedoidIndexTest {
    private static final KvShape SHAPE = new KvShape(1, 6, 2, 16, DType.BF16);

    private static Clustering clustering(SyntheticWorkload w, DenseLayerKv kv) {
        List<float[]> q = new ArrayList<>();
        for (int s = 0; s < 30; s++) {
            q.add(w.query(0, s));
        }
        CoActivationProfile p = CoActivationProfile.fromQueries(kv, q, SHAPE.queryHeads(), 0.1, null,
                CoActivationNormaliser.perQuery(), 1);
        return new CoActivationClustering(ClusteringConfig.defaults().withRadius(ClusterRadius.fixed(0.7))).cluster(p);
    }

    @Test
    void holdsTheMedoidKeysContiguouslyAndScoresWithGqa() {
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, 2000).build());
        DenseLayerKv kv = DenseLayerKv.materialize(w.layer(0), false);
        Clustering cl = clustering(w, kv);
        try (Arena arena = Arena.ofConfined()) {
            MedoidIndex index = MedoidIndex.build(cl, kv, SHAPE.queryHeads(), arena);
            int row = SHAPE.kvHeads() * SHAPE.headDim();
            assertEquals(4L * row * cl.clusterCount(), index.medoidKeys().byteSize());
            assertEquals(4L * row * cl.clusterCount() + 4L * cl.memberships() + 8L * cl.clusterCount() + 4,
                    index.memoryBytes());
            float[] k = new float[SHAPE.headDim()];
            for (int c = 0; c < cl.clusterCount(); c += 7) {
                for (int h = 0; h < SHAPE.kvHeads(); h++) {
                    kv.keys(h, cl.medoid(c), 1, k, 0);
                    float[] stored = index.medoidKeys().asSlice(4L * (c * row + h * SHAPE.headDim()), 4L * SHAPE.headDim())
                            .toArray(ValueLayout.JAVA_FLOAT);
                    assertArrayEquals(k, stored);
                }
                assertArrayEquals(cl.members(c), index.members(c));
            }
            float[] query = w.query(0, 40);
            float[] scores = new float[cl.clusterCount()];
            index.score(query, scores);
            int group = SHAPE.groupSize();
            for (int c = 0; c < cl.clusterCount(); c++) {
                double expected = 0; // sum over query heads of q_h · k_medoid(kv head of h) / √d
                for (int h = 0; h < SHAPE.queryHeads(); h++) {
                    kv.keys(h / group, cl.medoid(c), 1, k, 0);
                    for (int i = 0; i < SHAPE.headDim(); i++) {
                        expected += query[h * SHAPE.headDim() + i] * k[i];
                    }
                }
                expected /= Math.sqrt(SHAPE.headDim());
                assertEquals(expected, scores[c], 1e-3 * Math.max(1, Math.abs(expected)));
            }
            int[] top = index.top(query, 5);
            for (int i = 1; i < top.length; i++) {
                assertEquals(true, scores[top[i - 1]] >= scores[top[i]]);
            }
            assertMessage(() -> index.score(new float[3], scores), "query.length = 3");
            assertMessage(() -> index.score(query, new float[0]), "scores.length = 0");
            assertMessage(() -> index.top(query, cl.clusterCount() + 1), "count = " + (cl.clusterCount() + 1));
            assertMessage(() -> MedoidIndex.build(cl, kv, 3, arena), "queryHeads = 3");
            SyntheticWorkload other = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, 2001).build());
            assertMessage(() -> MedoidIndex.build(cl, other.layer(0), 6, arena), "keys.tokens() = 2001", "2000");
        }
    }
}
