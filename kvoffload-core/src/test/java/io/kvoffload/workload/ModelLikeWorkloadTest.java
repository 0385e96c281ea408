package io.kvoffload.workload;

import static io.kvoffload.workload.SyntheticWorkloadTest.assertMessage;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.strategy.LayerKv;
import java.util.Arrays;
import java.util.BitSet;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The properties the model-like families claim (docs/swarm-offline.md §1b), measured. */
class ModelLikeWorkloadTest {
    private static final KvShape SHAPE = new KvShape(1, 8, 2, 128, DType.BF16);
    private static final int TOKENS = 8192;
    private static final int WINDOW = 256;
    private static final int[] STEPS = {0, 7, 25, 60, 120};

    private static ModelLikeWorkload mixed;
    private static DenseLayerKv mixedKv;

    @BeforeAll
    static void build() {
        mixed = (ModelLikeWorkload) WorkloadFamily.MIXED_HEADS.create(SHAPE, TOKENS, 11);
        mixedKv = DenseLayerKv.materialize(mixed.layer(0), true);
    }

    @Test
    void sameSeedSameTensorsOtherSeedOthers() {
        ModelLikeWorkload again = (ModelLikeWorkload) WorkloadFamily.MIXED_HEADS.create(SHAPE, TOKENS, 11);
        ModelLikeWorkload other = (ModelLikeWorkload) WorkloadFamily.MIXED_HEADS.create(SHAPE, TOKENS, 12);
        SeedDeterminism.assertSeedDecides(mixed, again, other, 0, 3000, 100, 33);
    }

    @Test
    void headTypesHaveTheirExactShares() {
        int streaming = 0, retrieval = 0;
        for (int h = 0; h < 8; h++) {
            HeadType t = mixed.headType(0, h);
            streaming += t == HeadType.STREAMING ? 1 : 0;
            retrieval += t == HeadType.RETRIEVAL ? 1 : 0;
        }
        assertEquals(Math.round(0.4 * 8), streaming);
        assertEquals(Math.round(0.15 * 8), retrieval);
    }

    @Test
    void streamingHeadsPutMostMassOnSinksAndWindow() {
        double mass = 0;
        int n = 0;
        for (int step : STEPS) {
            float[] q = mixed.query(0, step);
            for (int h = 0; h < 8; h++) {
                if (mixed.headType(0, h) != HeadType.STREAMING) {
                    continue;
                }
                double[] p = HeadSoftmax.weights(mixedKv, q, h, SHAPE);
                mass += sum(p, 0, 4) + sum(p, TOKENS - WINDOW, TOKENS);
                n++;
            }
        }
        assertTrue(n > 0);
        assertTrue(mass / n > 0.5, "streaming heads' mean mass on 4 sinks + 256-token window: " + mass / n);
    }

    @Test
    void retrievalHeadsAreSharpAndSparse() {
        double top = 0;
        int n = 0;
        for (int step : STEPS) {
            float[] q = mixed.query(0, step);
            for (int h = 0; h < 8; h++) {
                if (mixed.headType(0, h) != HeadType.RETRIEVAL) {
                    continue;
                }
                double[] p = HeadSoftmax.weights(mixedKv, q, h, SHAPE);
                double[] sorted = p.clone();
                Arrays.sort(sorted);
                top += sum(sorted, TOKENS - TOKENS / 100, TOKENS); // the top 1% of tokens
                n++;
            }
        }
        assertTrue(n > 0);
        assertTrue(top / n > 0.8, "retrieval heads' mass in their top 1% of tokens: " + top / n);
    }

    @Test
    void mixedHeadsAttendToTheQuerysTopicsFarBeyondTheWindow() {
        double topical = 0, share = 0;
        int n = 0;
        for (int step : STEPS) {
            float[] q = mixed.query(0, step);
            int[] topics = mixed.queryTopics(0, step);
            BitSet on = new BitSet();
            for (int t = 4; t < TOKENS - WINDOW; t++) {
                int topic = mixed.topic(t);
                if (Arrays.stream(topics).anyMatch(x -> x == topic)) {
                    on.set(t);
                }
            }
            for (int h = 0; h < 8; h++) {
                if (mixed.headType(0, h) != HeadType.MIXED) {
                    continue;
                }
                double[] p = HeadSoftmax.weights(mixedKv, q, h, SHAPE);
                for (int t = on.nextSetBit(0); t >= 0; t = on.nextSetBit(t + 1)) {
                    topical += p[t];
                }
                share += on.cardinality() / (double) TOKENS;
                n++;
            }
        }
        assertTrue(topical / n > 0.35, "mixed heads' mass on their topics' tokens outside the window: " + topical / n);
        assertTrue(topical / n > 2 * share / n, "topic tokens are " + share / n + " of the context");
    }

    @Test
    void outlierKeyChannelsHaveTheStatedMagnitudeRatio() {
        for (int kvHead = 0; kvHead < 2; kvHead++) {
            double[] rms = new double[128];
            float[] k = new float[128];
            for (int t = 4; t < 2048; t++) {
                mixed.contentKey(0, kvHead, t, k);
                for (int c = 0; c < 128; c++) {
                    rms[c] += k[c] * k[c];
                }
            }
            int[] outliers = mixed.outlierChannels(0, kvHead);
            assertEquals(4, outliers.length); // headDim / 32
            double[] typical = new double[128 - outliers.length];
            for (int c = 0, i = 0; c < 128; c++) {
                rms[c] = Math.sqrt(rms[c] / 2044);
                if (Arrays.binarySearch(outliers, c) < 0) {
                    typical[i++] = rms[c];
                }
            }
            Arrays.sort(typical);
            double median = typical[typical.length / 2];
            for (int c : outliers) {
                double ratio = rms[c] / median;
                assertTrue(ratio > 0.75 * 12 && ratio < 1.25 * 12, "channel " + c + " RMS / median RMS = " + ratio);
            }
            assertTrue(typical[typical.length - 1] < 2 * median, "largest ordinary channel " + typical[typical.length - 1]);
        }
    }

    @Test
    void valueOutliersArePerTokenNotPerChannel() {
        int n = 4096;
        double[] channel = new double[128];
        double[] norms = new double[n];
        float[] v = new float[128];
        for (int t = 0; t < n; t++) {
            mixedKv.values(0, t, 1, v, 0);
            for (int c = 0; c < 128; c++) {
                channel[c] += v[c] * v[c];
                norms[t] += v[c] * v[c];
            }
            norms[t] = Math.sqrt(norms[t]);
        }
        double[] sortedChannels = channel.clone();
        Arrays.sort(sortedChannels);
        assertTrue(sortedChannels[127] < 1.6 * sortedChannels[64], "channel energies are flat: max/median = "
                + sortedChannels[127] / sortedChannels[64]);
        double[] sortedNorms = norms.clone();
        Arrays.sort(sortedNorms);
        double median = sortedNorms[n / 2];
        long big = Arrays.stream(norms).filter(x -> x > 3 * median).count();
        // 1% of tokens are 6× larger; none of the others reach 3× the median
        assertTrue(big > 0.005 * n && big < 0.02 * n, big + " of " + n + " tokens have an outlier value");
    }

    @Test
    void topicsComeInRunsOfBoundedLengthSpreadThroughTheContext() {
        int[] starts = mixed.runStarts();
        assertEquals(4, starts[0]);
        for (int i = 0; i + 1 < starts.length; i++) {
            int len = starts[i + 1] - starts[i];
            assertTrue(len >= 8 && len <= 256, "run " + i + " has " + len + " tokens");
        }
        int topics = mixed.spec().topics();
        int[] first = new int[topics], last = new int[topics], runs = new int[topics];
        Arrays.fill(first, -1);
        for (int s : starts) {
            int t = mixed.topic(s);
            first[t] = first[t] < 0 ? s : first[t];
            last[t] = s;
            runs[t]++;
        }
        int recurring = 0, spread = 0, present = 0;
        for (int t = 0; t < topics; t++) {
            if (runs[t] > 0) {
                present++;
                recurring += runs[t] >= 2 ? 1 : 0;
                spread += last[t] - first[t] > TOKENS / 4 ? 1 : 0;
            }
        }
        assertTrue(recurring > present / 2, recurring + " of " + present + " topics recur");
        assertTrue(spread > present / 3, spread + " of " + present + " topics span more than a quarter of the context");
    }

    @Test
    void queriesMixSeveralTopicsThatDriftOverDecoding() {
        int[] first = mixed.queryTopics(0, 0);
        assertEquals(4, first.length);
        assertEquals(4, Arrays.stream(first).distinct().count());
        assertEquals(mixed.topic(TOKENS - 1), first[0], "the newest run's topic leads");
        int kept = 0;
        for (int s = 0; s < 100; s++) {
            int[] a = mixed.queryTopics(0, s), b = mixed.queryTopics(0, s + 1);
            for (int x : b) {
                kept += Arrays.stream(a).anyMatch(y -> y == x) ? 1 : 0;
            }
        }
        assertTrue(kept > 0.9 * 400, "adjacent steps share most topics: " + kept + " of 400");
        int[] late = mixed.queryTopics(0, 400);
        long shared = Arrays.stream(late).filter(x -> Arrays.stream(first).anyMatch(y -> y == x)).count();
        assertTrue(shared < 4, "after 400 steps the mixture has drifted");
    }

    /**
     * The control has no structure for co-activation to find: apart from the sinks, the top-1% sets of
     * two queries overlap about as much as two random sets; in a structured family far more.
     */
    @Test
    void controlTopKSetsOverlapOnlyByChance() {
        ModelLikeWorkload control = (ModelLikeWorkload) WorkloadFamily.CONTROL.create(SHAPE, TOKENS, 11);
        DenseLayerKv kv = DenseLayerKv.materialize(control.layer(0), false);
        double controlOverlap = meanOverlap(control, kv);
        double structuredOverlap = meanOverlap(mixed, mixedKv);
        double chance = (TOKENS / 100.0) / (TOKENS - 4);
        assertTrue(controlOverlap < 1.5 * chance + 0.01, "control overlap " + controlOverlap + ", chance " + chance);
        assertTrue(structuredOverlap > 5 * controlOverlap, "mixed-heads overlap " + structuredOverlap);
    }

    private static double meanOverlap(ModelLikeWorkload w, LayerKv kv) {
        int k = TOKENS / 100;
        double overlap = 0;
        int n = 0;
        for (int h = 0; h < 8; h++) {
            BitSet a = top(HeadSoftmax.weights(kv, w.query(0, 10), h, SHAPE), k);
            BitSet b = top(HeadSoftmax.weights(kv, w.query(0, 50), h, SHAPE), k);
            a.and(b);
            overlap += a.cardinality() / (double) k;
            n++;
        }
        return overlap / n;
    }

    /** The k heaviest non-sink tokens. */
    private static BitSet top(double[] p, int k) {
        Integer[] order = new Integer[p.length - 4];
        for (int i = 0; i < order.length; i++) {
            order[i] = i + 4;
        }
        Arrays.sort(order, (x, y) -> Double.compare(p[y], p[x]));
        BitSet s = new BitSet();
        for (int i = 0; i < k; i++) {
            s.set(order[i]);
        }
        return s;
    }

    @Test
    void everyShapeAndHeadDimBuildsFiniteTensors() {
        int[][] shapes = {{8, 8}, {8, 2}, {8, 1}}; // MHA, GQA 4:1, GQA 8:1
        for (int[] s : shapes) {
            for (int d : new int[] {64, 80, 96, 128}) {
                KvShape shape = new KvShape(1, s[0], s[1], d, DType.BF16);
                for (WorkloadFamily f : WorkloadFamily.values()) {
                    Workload w = f.create(shape, 1024, 5);
                    float[] q = w.query(0, 3);
                    float[] k = new float[d * 16];
                    w.layer(0).keys(s[1] - 1, 1000, 16, k, 0);
                    assertTrue(allFinite(q) && allFinite(k), f + " " + shape.fingerprint());
                    assertEquals(s[0] * d, q.length);
                }
            }
        }
    }

    @Test
    void badKnobsAreRejectedWithTheirNames() {
        assertMessage(() -> ModelLikeSpec.builder(SHAPE, TOKENS).minRun(300).build(), "minRun");
        assertMessage(() -> ModelLikeSpec.builder(SHAPE, TOKENS).streamingShare(0.8).retrievalShare(0.5).build(),
                "streamingShare");
        assertMessage(() -> ModelLikeSpec.builder(new KvShape(1, 8, 2, 17, DType.BF16), TOKENS), "headDim");
        assertMessage(() -> WorkloadFamily.byName("llama"), "family", "mixed-heads");
        assertMessage(() -> new ModelLikeWorkload(ModelLikeSpec.builder(SHAPE, TOKENS).ropeTheta(100).build()), "ropeTheta");
    }

    @Test
    void familyNamesRoundTrip() {
        for (String name : WorkloadFamily.names()) {
            assertEquals(name, WorkloadFamily.byName(name).familyName());
        }
        assertTrue(WorkloadFamily.names().containsAll(java.util.List.of("default", "mixed-heads", "control")));
    }

    private static boolean allFinite(float[] a) {
        for (float x : a) {
            if (!Float.isFinite(x)) {
                return false;
            }
        }
        return true;
    }

    private static double sum(double[] p, int from, int to) {
        double s = 0;
        for (int i = from; i < to; i++) {
            s += p[i];
        }
        return s;
    }
}
