package io.kvoffload.internal.swarm;

import io.kvoffload.testing.Allocations;

import static io.kvoffload.internal.swarm.ProfileTest.assertMessage;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
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
            assertEquals(4, index.elementBytes(), "the synthetic layer's keys are floats, not BF16 values");
            assertEquals(4L * row * cl.clusterCount(), index.keyBytes());
            assertEquals(4L * row * cl.clusterCount() + 4L * cl.memberships() + 8L * cl.clusterCount() + 4,
                    index.memoryBytes());
            float[] k = new float[SHAPE.headDim()];
            for (int c = 0; c < cl.clusterCount(); c += 7) {
                for (int h = 0; h < SHAPE.kvHeads(); h++) {
                    kv.keys(h, cl.medoid(c), 1, k, 0);
                    float[] stored = java.util.Arrays.copyOfRange(index.medoidKey(c), h * SHAPE.headDim(),
                            (h + 1) * SHAPE.headDim());
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
                // Exactly the left-to-right float sum over the GQA-aggregated query, dimension order.
                float[] medoid = index.medoidKey(c);
                float[] aggregated = new float[row];
                for (int h = 0; h < SHAPE.queryHeads(); h++) {
                    for (int i = 0; i < SHAPE.headDim(); i++) {
                        aggregated[(h / group) * SHAPE.headDim() + i] += query[h * SHAPE.headDim() + i];
                    }
                }
                float exact = 0;
                for (int i = 0; i < row; i++) {
                    exact += aggregated[i] * medoid[i];
                }
                assertEquals(exact * (float) (1.0 / Math.sqrt(SHAPE.headDim())), scores[c], 0f);
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
    /** The definition: Σ over query heads of q_h · key(kv head of h) / √d, in double. */
    private static double reference(float[] query, float[] key, int queryHeads, int kvHeads, int headDim) {
        int group = queryHeads / kvHeads;
        double s = 0;
        for (int h = 0; h < queryHeads; h++) {
            for (int i = 0; i < headDim; i++) {
                s += (double) query[h * headDim + i] * key[(h / group) * headDim + i];
            }
        }
        return s / Math.sqrt(headDim);
    }

    private static float[] randomFloats(SplittableRandom r, int n) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = (float) r.nextGaussian();
        }
        return a;
    }

    @Test
    void scratchScoringEqualsTheAllocatingOneAndTheDefinitionAtTheLlamaShape() {
        // Llama-3-8B layer shape: 32 query heads on 8 KV heads × 128; and an odd head dim (tail loop).
        for (int[] shape : new int[][] {{32, 8, 128}, {6, 2, 13}}) {
            int qh = shape[0], kvh = shape[1], d = shape[2], row = kvh * d, tokens = 300;
            SplittableRandom r = new SplittableRandom(7);
            DenseLayerKv kv = denseRandom(r, tokens, kvh, d);
            Clustering cl = blocks(tokens, 16);
            try (Arena arena = Arena.ofConfined()) {
                MedoidIndex index = MedoidIndex.build(cl, kv, qh, arena);
                float[] query = randomFloats(r, qh * d);
                float[] a = new float[cl.clusterCount()];
                float[] b = new float[cl.clusterCount() + 3];
                float[] scratch = new float[row + 5];
                index.score(query, a);
                index.score(query, scratch, b);
                for (int c = 0; c < cl.clusterCount(); c++) {
                    assertEquals(a[c], b[c], 0f, "both entries run the same arithmetic");
                    float[] key = new float[row];
                    for (int h = 0; h < kvh; h++) {
                        kv.keys(h, cl.medoid(c), 1, key, h * d);
                    }
                    double expected = reference(query, key, qh, kvh, d);
                    assertEquals(expected, b[c], 1e-4 * Math.max(1, Math.abs(expected)));
                    // Exactly the float definition: products added in dimension order (head dim 13: a tail).
                    assertEquals(Float.floatToRawIntBits(floatDefinition(scratch, key, d)),
                            Float.floatToRawIntBits(b[c]), "cluster " + c);
                }
                int group = qh / kvh;
                for (int i = 0; i < row; i++) { // scratch holds the GQA-aggregated query
                    float sum = 0;
                    for (int g = 0; g < group; g++) {
                        sum += query[((i / d) * group + g) * d + i % d];
                    }
                    assertEquals(sum, scratch[i], 0f);
                }
            }
        }
    }

    @Test
    void appendedClustersAreScoredAndRoutedToTheirMedoid() {
        int qh = 8, kvh = 2, d = 16, row = kvh * d, tokens = 160;
        SplittableRandom r = new SplittableRandom(11);
        DenseLayerKv kv = denseRandom(r, tokens, kvh, d);
        Clustering cl = blocks(tokens, 16);
        int offline = cl.clusterCount();
        float[] query = randomFloats(r, qh * d);
        try (Arena arena = Arena.ofConfined(); MedoidIndex index = MedoidIndex.build(cl, kv, qh, arena)) {
            float[] before = new float[offline];
            index.score(query, new float[row], before);
            List<float[]> added = new ArrayList<>();
            int next = tokens;
            for (int round = 0; round < 40; round++) { // one- and many-cluster appends, several moves
                int n = round % 3 == 0 ? 5 : 1;
                int[] medoids = new int[n];
                float[] keys = randomFloats(r, n * row);
                for (int i = 0; i < n; i++) {
                    medoids[i] = next++;
                    added.add(java.util.Arrays.copyOfRange(keys, i * row, (i + 1) * row));
                }
                int first = index.appendClusters(medoids, keys);
                assertEquals(offline + added.size() - n, first);
            }
            int all = offline + added.size();
            assertEquals(all, index.clusterCount());
            assertEquals(offline, index.offlineClusters());
            assertTrue(index.capacity() >= all);
            assertEquals(4, index.elementBytes(), "random float keys are not BF16 values");
            assertEquals(4L * row * all, index.keyBytes());
            float[] scores = new float[all];
            index.score(query, new float[row], scores);
            for (int c = 0; c < offline; c++) {
                assertEquals(before[c], scores[c], 0f, "offline clusters keep their scores");
                assertArrayEquals(cl.members(c), index.members(c));
            }
            for (int i = 0; i < added.size(); i++) {
                int c = offline + i;
                double expected = reference(query, added.get(i), qh, kvh, d);
                assertEquals(expected, scores[c], 1e-4 * Math.max(1, Math.abs(expected)));
                assertEquals(tokens + i, index.medoid(c));
                assertArrayEquals(new int[] {tokens + i}, index.members(c));
                assertEquals(1, index.size(c));
                assertArrayEquals(added.get(i), index.medoidKey(c));
            }
            assertEquals(all, index.appendClusters(new int[0], new float[0]), "an empty append adds nothing");

            // Reserved room: appends up to it neither move the keys nor allocate.
            index.ensureCapacity(all + 2100);
            int cap = index.capacity();
            float[] one = randomFloats(r, row);
            int[] tok = {next};
            float[] s2 = new float[all + 2100];
            float[] scratch = new float[row];
            for (int i = 0; i < 2000; i++) { // warm-up: compiled code is what the decoder runs
                index.appendClusters(tok, one);
                index.score(query, scratch, s2);
            }
            long overhead = Allocations.overhead();
            long t0 = Allocations.allocated();
            for (int i = 0; i < 50; i++) {
                index.appendClusters(tok, one);
            }
            for (int i = 0; i < 100; i++) {
                index.score(query, scratch, s2);
            }
            long allocated = Allocations.allocated() - t0 - overhead;
            assertEquals(0, allocated, "appends within capacity and scoring allocated " + allocated + " bytes");
            assertEquals(cap, index.capacity());

            assertMessage(() -> index.appendClusters(new int[2], new float[row]), "keys.length = " + row,
                    "medoidTokens.length × kvHeads × headDim = " + 2 * row);
            assertMessage(() -> index.appendClusters(new int[] {-1}, new float[row]), "medoidTokens[0] = -1", "0..");
            float[] bad = new float[row];
            bad[3] = Float.NaN;
            assertMessage(() -> index.appendClusters(new int[] {1}, bad), "keys[3] = NaN", "finite");
            assertMessage(() -> index.ensureCapacity(-1), "minClusters = -1", "0..");
            assertMessage(() -> index.medoid(index.clusterCount()), "cluster = " + index.clusterCount(),
                    "0.." + (index.clusterCount() - 1));
            assertMessage(() -> index.score(query, new float[row - 1], s2), "scratch.length = " + (row - 1),
                    "at least kvHeads × headDim = " + row);
            assertMessage(() -> index.score(query, scratch, new float[3]), "scores.length = 3",
                    "at least " + index.clusterCount());
            assertMessage(() -> index.score(new float[5], scratch, s2), "query.length = 5", "queryHeads × headDim");

            index.close();
            index.close(); // idempotent
            assertThrows(IllegalStateException.class, () -> index.score(query, scratch, s2));
            assertThrows(IllegalStateException.class, () -> index.appendClusters(tok, one));
            assertThrows(IllegalStateException.class, () -> index.medoidKey(0));
        }
    }

    @Test
    void closingAnIndexThatWasNeverAppendedToLeavesTheCallersSegmentAlone() {
        SplittableRandom r = new SplittableRandom(3);
        DenseLayerKv kv = denseRandom(r, 64, 2, 8);
        try (Arena arena = Arena.ofConfined()) {
            MedoidIndex index = MedoidIndex.build(blocks(64, 16), kv, 4, arena);
            assertEquals(kv.keyArray(0)[0], index.medoidKey(0)[0], 0f);
            index.close();
            assertThrows(IllegalStateException.class, () -> index.medoidKey(0), "a closed index refuses reads");
            // The caller's segment is the caller's: still allocated, freed once by the arena's close.
            assertTrue(arena.allocate(8).byteSize() == 8);
        }
    }

    /** Positional blocks of {@code size}: a clustering that needs no profile. */
    static Clustering blocks(int tokens, int size) {
        int clusters = (tokens + size - 1) / size;
        int[] offsets = new int[clusters + 1];
        int[] members = new int[tokens];
        int[] medoids = new int[clusters];
        for (int c = 0; c < clusters; c++) {
            offsets[c + 1] = Math.min(tokens, (c + 1) * size);
            medoids[c] = c * size;
        }
        for (int t = 0; t < tokens; t++) {
            members[t] = t;
        }
        return Clustering.restore(tokens, offsets, members, medoids, 0, 0.5);
    }

    /**
     * BF16 storage scores bit for bit as float storage does (the definition summed left to right in
     * float, then scaled); an appended key BF16 cannot hold widens the storage once, and every
     * score, old clusters' and new, is still exactly the float definition.
     */
    @Test
    void bf16StorageScoresExactlyAsFloatsAndAnInexactAppendWidensIt() {
        int qh = 8, kvh = 2, d = 64, row = kvh * d, tokens = 2500; // > one scoring chunk of clusters
        SplittableRandom r = new SplittableRandom(11);
        float[][] keys = new float[kvh][];
        for (int h = 0; h < kvh; h++) {
            keys[h] = randomFloats(r, tokens * d);
            for (int i = 0; i < keys[h].length; i++) { // BF16 values, as a BF16 layer holds
                keys[h][i] = Float.intBitsToFloat(Float.floatToRawIntBits(keys[h][i]) & 0xFFFF0000);
            }
        }
        DenseLayerKv kv = new DenseLayerKv(tokens, d, keys, new float[][] {new float[tokens * d], new float[tokens * d]});
        Clustering cl = blocks(tokens, 2);
        float[] query = randomFloats(r, qh * d);
        try (Arena arena = Arena.ofConfined(); MedoidIndex index = MedoidIndex.build(cl, kv, qh, arena)) {
            assertEquals(2, index.elementBytes());
            assertEquals(2L * row * cl.clusterCount(), index.keyBytes());
            List<float[]> medoidKeys = new ArrayList<>();
            for (int c = 0; c < cl.clusterCount(); c++) {
                float[] key = new float[row];
                for (int h = 0; h < kvh; h++) {
                    kv.keys(h, cl.medoid(c), 1, key, h * d);
                }
                assertArrayEquals(key, index.medoidKey(c));
                medoidKeys.add(key);
            }
            float[] scratch = new float[row];
            float[] scores = new float[cl.clusterCount() + 1];
            index.score(query, scratch, scores);
            for (int c = 0; c < cl.clusterCount(); c++) {
                assertEquals(Float.floatToRawIntBits(floatDefinition(scratch, medoidKeys.get(c), d)),
                        Float.floatToRawIntBits(scores[c]), "cluster " + c);
            }
            float[] extra = randomFloats(r, row); // not BF16 values
            index.appendClusters(new int[] {tokens}, extra);
            medoidKeys.add(extra);
            assertEquals(4, index.elementBytes(), "the inexact key widened the storage to floats");
            assertArrayEquals(extra, index.medoidKey(cl.clusterCount()));
            float[] after = new float[cl.clusterCount() + 1];
            index.score(query, scratch, after);
            for (int c = 0; c <= cl.clusterCount(); c++) {
                assertEquals(Float.floatToRawIntBits(floatDefinition(scratch, medoidKeys.get(c), d)),
                        Float.floatToRawIntBits(after[c]), "cluster " + c + " after widening");
            }
        }
    }

    /** The score's definition in float arithmetic: the aggregated query times the key, left to right, then scaled. */
    private static float floatDefinition(float[] aggregated, float[] key, int headDim) {
        float s = 0;
        for (int i = 0; i < key.length; i++) {
            s += aggregated[i] * key[i];
        }
        return s * (float) (1.0 / Math.sqrt(headDim));
    }

    private static DenseLayerKv denseRandom(SplittableRandom r, int tokens, int kvHeads, int headDim) {
        float[][] keys = new float[kvHeads][];
        float[][] values = new float[kvHeads][];
        for (int h = 0; h < kvHeads; h++) {
            keys[h] = randomFloats(r, tokens * headDim);
            values[h] = new float[tokens * headDim];
        }
        return new DenseLayerKv(tokens, headDim, keys, values);
    }
}
